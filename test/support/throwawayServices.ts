import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, appendFileSync, chownSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { once } from "node:events";
import { connect, createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * A PostgreSQL cluster and a Redis server of a test's own, on free ports, which the test may stop and start at will
 * without disturbing the shared services other test files run on at the same time. Fault tests restart them
 * under load; each lives in a temporary folder that `destroy()` removes.
 */

const POSTGRES_ROOT = "/usr/lib/postgresql";
const COMMAND_TIMEOUT_MS = 60_000;

/** A port nobody listens on right now (the kernel's pick for port 0). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    if (dir !== "" && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The newest installed server's `bin` folder (Debian keeps them in /usr/lib/postgresql/<version>/bin), else PATH's. */
function postgresBinDir(): string | undefined {
  const versions = existsSync(POSTGRES_ROOT)
    ? readdirSync(POSTGRES_ROOT)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const version of versions) {
    const dir = join(POSTGRES_ROOT, version, "bin");
    if (existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
  }
  const initdb = onPath("initdb");
  return initdb && onPath("pg_ctl") ? join(initdb, "..") : undefined;
}

/** The uid and gid of `postgres` from /etc/passwd, for running the server when the tests run as root. */
function postgresUser(): { uid: number; gid: number } | undefined {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("postgres:"));
  const [, , uid, gid] = line?.split(":") ?? [];
  return uid && gid ? { uid: Number(uid), gid: Number(gid) } : undefined;
}

/** Why a throwaway PostgreSQL cannot be started here, or undefined when it can. */
export function throwawayPostgresProblem(): string | undefined {
  if (postgresBinDir() === undefined)
    return `no PostgreSQL server binaries (initdb, pg_ctl) in ${POSTGRES_ROOT}/<version>/bin or on PATH`;
  // initdb refuses to run as root, so as root the cluster belongs to the `postgres` user.
  if (process.getuid?.() === 0 && (postgresUser() === undefined || onPath("runuser") === undefined)) {
    return "running as root without a `postgres` user and `runuser` to start PostgreSQL as";
  }
  return undefined;
}

function run(file: string, args: readonly string[], timeoutMs = COMMAND_TIMEOUT_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, encoding: "utf8" }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(" ")} failed: ${error.message}\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

export interface ThrowawayPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, trust authentication. */
  url: string;
  port: number;
  /** `pg_ctl stop` (`fast`: sessions are terminated with 57P01, as in a routine restart); waits until it is down. */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /** `pg_ctl start`; waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops the server (if up) and removes its folder. */
  destroy(): Promise<void>;
  /** The server's log so far, for failure messages. */
  log(): string;
}

/** initdb + pg_ctl start in a new temporary folder, on a free port, with durability off (fsync) for speed. */
export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error(throwawayPostgresProblem());
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? postgresUser() : undefined;
  const dir = mkdtempSync(join(tmpdir(), "tab-relay-pg-"));
  const data = join(dir, "data");
  const logFile = join(dir, "server.log");
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const pg = (tool: string, args: readonly string[]) =>
    owner ? run("runuser", ["-u", "postgres", "--", join(bin, tool), ...args]) : run(join(bin, tool), args);
  const port = await freePort();
  await pg("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"]);
  // In the configuration file rather than on the command line, so every later `pg_ctl start` uses them too.
  appendFileSync(
    join(data, "postgresql.conf"),
    [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      "fsync = off",
      "synchronous_commit = off",
      "full_page_writes = off",
      "shared_buffers = 16MB",
      "max_connections = 60",
      "",
    ].join("\n"),
  );
  let up = false;
  const server: ThrowawayPostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await pg("pg_ctl", ["-D", data, "-l", logFile, "-w", "-t", "30", "start"]);
      up = true;
    },
    async stop(mode = "fast") {
      await pg("pg_ctl", ["-D", data, "-m", mode, "-w", "-t", "30", "stop"]);
      up = false;
    },
    async destroy() {
      if (up) await server.stop("immediate").catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
    log: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""),
  };
  try {
    await server.start();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return server;
}

/** Why a throwaway Redis cannot be started here, or undefined when it can. */
export function throwawayRedisProblem(): string | undefined {
  return onPath("redis-server") === undefined ? "no redis-server on PATH" : undefined;
}

export interface ThrowawayRedis {
  url: string;
  port: number;
  /** Ends the server (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty (nothing is saved); waits until it answers PING. */
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/** Resolves once something on `port` answers PING with PONG; fails after `timeoutMs`. */
async function waitForPong(port: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const pong = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(500, () => done(false));
      socket.once("connect", () => socket.write("PING\r\n"));
      socket.once("data", (data) => done(String(data).startsWith("+PONG")));
      socket.once("error", () => done(false));
    });
    if (pong) return;
    if (performance.now() > deadline)
      throw new Error(`redis-server on port ${port} did not answer within ${timeoutMs} ms`);
    await sleep(25);
  }
}

/** `redis-server` on a free port with persistence off, as a child of the test process. */
export async function startThrowawayRedis(): Promise<ThrowawayRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  let output = "";
  const server: ThrowawayRedis = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      output = "";
      const started = spawn(
        "redis-server",
        ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      started.stdout.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)));
      started.stderr.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)));
      child = started;
      try {
        await waitForPong(port, 10_000);
      } catch (error) {
        started.kill("SIGKILL");
        throw new Error(`${(error as Error).message}:\n${output}`, { cause: error });
      }
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = once(running, "exit");
      running.kill("SIGTERM");
      await exited;
    },
    async destroy() {
      await server.stop();
    },
  };
  await server.start();
  return server;
}
