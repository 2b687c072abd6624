import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { once } from "node:events";
import WebSocket from "ws";

const BIN = fileURLToPath(new URL("../../relay/bin/tab-relay.js", import.meta.url));
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** High enough that almost no request of a run is refused for its rate, so nearly all of them reach their handlers. */
export const RAISED_RATE_LIMITS =
  "reads=1000000,writes=1000000,session_reads=1000000,session_writes=1000000,agent_reads=1000000,agent_posts=1000000";
export const WORKSPACE_SLUG = "fuzz";

/** The environment without the caller's own TAB_RELAY_ settings, so only what the fuzzer sets applies. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));
  return { ...env, ...extra };
}

/** A fresh data folder made by `tab-relay init --json`, with the owner key it printed once. */
export function initDataFolder(): { dataDir: string; ownerKey: string; remove(): void } {
  const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-fuzz-"));
  const result = spawnSync(
    process.execPath,
    [BIN, "init", "--data", dataDir, "--workspace", WORKSPACE_SLUG, "--owner", "Olive Owner", "--json"],
    {
      encoding: "utf8",
      env: cleanEnv({}),
      timeout: 30_000,
    },
  );
  if (result.status !== 0) throw new Error(`tab-relay init failed (${String(result.status)}): ${result.stderr}`);
  const { api_key } = JSON.parse(result.stdout) as { api_key: string };
  return { dataDir, ownerKey: api_key, remove: () => rmSync(dataDir, { recursive: true, force: true }) };
}

export interface FuzzRelay {
  url: string;
  host: string;
  port: number;
  pid: number;
  /** Resolves with the exit code or signal when the process ends. */
  exited: Promise<number | string>;
  alive(): boolean;
  /** The process's resident set size in KiB (Linux `/proc/<pid>/status`). */
  rssKiB(): number | undefined;
  /** A full garbage collection of the relay's main heap, through its inspector (Chrome DevTools protocol). */
  collectGarbage(): Promise<void>;
  /** The last lines the relay wrote (stdout and stderr). */
  tail(lines?: number): string;
  /** The relay's own log lines for one request id (its error log names the failure behind a 500). */
  logFor(requestId: string): string[];
  stop(): Promise<void>;
}

/**
 * Runs `tab-relay serve --port 0` on `dataDir` as its own process, as an operator runs it, and resolves once it
 * says where it listens. Logs at `warn` keep a long run's output small; errors (a 500's cause) are still logged.
 */
export async function startRelayProcess(options: {
  dataDir: string;
  rateLimits: string | undefined;
  tracked: Set<ChildProcess>;
  /** More settings (a model server's, for the runs against each upstream mode). */
  env?: Record<string, string>;
}): Promise<FuzzRelay> {
  const env = cleanEnv({
    // The inspector (on loopback, any free port) lets the fuzzer force a full garbage collection before it reads
    // the relay's memory, so what it compares is what stays alive, not where the collector happened to be.
    NODE_OPTIONS: "--inspect=127.0.0.1:0",
    TAB_RELAY_LOG_LEVEL: "warn",
    // Fuzzed webhooks point at loopback (catalogue.ts), so no delivery ever leaves the machine.
    TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
    ...(options.rateLimits !== undefined ? { TAB_RELAY_RATE_LIMITS: options.rateLimits } : {}),
    ...options.env,
  });
  const child = spawn(process.execPath, [BIN, "serve", "--data", options.dataDir, "--port", "0"], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  options.tracked.add(child);
  const lines: string[] = [];
  const byRequest = new Map<string, string[]>();
  let partial = "";
  const collect = (chunk: Buffer) => {
    const text = partial + chunk.toString("utf8");
    const split = text.split("\n");
    partial = split.pop() ?? "";
    for (const line of split) {
      lines.push(line);
      if (lines.length > 400) lines.splice(0, lines.length - 400);
      const id = /"request_id":"([^"]+)"/.exec(line)?.[1];
      if (id !== undefined && byRequest.size < 10_000) byRequest.set(id, [...(byRequest.get(id) ?? []), line]);
    }
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const exited = new Promise<number | string>((resolve) =>
    child.once("exit", (code, signal) => {
      options.tracked.delete(child);
      resolve(signal ?? code ?? -1);
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the relay did not start within 20 s:\n${lines.join("\n")}`)),
      20_000,
    );
    const look = () => {
      const match = /serving on (http:\/\/\S+)/.exec(lines.join("\n") + partial);
      if (match?.[1]) {
        clearTimeout(timer);
        child.stderr.off("data", look);
        resolve(match[1]);
      }
    };
    child.stderr.on("data", look);
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`the relay exited (${String(how)}) before it listened:\n${lines.join("\n")}${partial}`));
    });
  });
  const parsed = new URL(url);
  const pid = child.pid ?? -1;
  const inspector = /Debugger listening on (ws:\/\/\S+)/.exec(lines.join("\n"))?.[1];
  return {
    url,
    host: parsed.hostname,
    port: Number(parsed.port),
    pid,
    exited,
    alive: () => child.exitCode === null && child.signalCode === null,
    rssKiB() {
      try {
        const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
        return match?.[1] !== undefined ? Number(match[1]) : undefined;
      } catch {
        return undefined;
      }
    },
    async collectGarbage() {
      if (inspector === undefined) throw new Error("the relay was started without its inspector");
      const socket = new WebSocket(inspector);
      try {
        await once(socket, "open");
        const reply = new Promise<void>((resolve) =>
          socket.on("message", (data) => (JSON.parse(String(data)) as { id?: number }).id === 1 && resolve()),
        );
        socket.send(JSON.stringify({ id: 1, method: "HeapProfiler.collectGarbage" }));
        await reply;
      } finally {
        socket.close();
      }
    },
    tail: (count = 30) => [...lines, ...(partial ? [partial] : [])].slice(-count).join("\n"),
    logFor: (requestId) => byRequest.get(requestId) ?? [],
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const late = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(late);
    },
  };
}
