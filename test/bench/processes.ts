import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** A server the benchmark started in a child process; `stop` ends it by its own pid only. */
export interface ChildServer {
  name: string;
  pid: number;
  child: ChildProcess;
  /** The last few kilobytes the child wrote to stderr, for error messages. */
  stderrTail(): string;
  stop(timeoutMs?: number): Promise<void>;
}

export interface SpawnOptions {
  name: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Which output announces readiness, and the pattern whose first group is returned. */
  ready: { stream: "stdout" | "stderr"; pattern: RegExp };
  timeoutMs?: number;
  /**
   * Keeps the child's stdin open as a lifeline: a child that exits when its stdin closes then also goes
   * when the benchmark dies without the chance to stop it (SIGKILL, a crash in a helper script).
   */
  lifeline?: boolean;
}

const TAIL_CHARS = 4_096;
const live = new Set<ChildServer>();

/** Starts `node ...args` and resolves once the ready pattern appears, with its first capture group. */
export async function spawnServer(options: SpawnOptions): Promise<{ server: ChildServer; match: string }> {
  const child = spawn(process.execPath, [...options.args], {
    cwd: options.cwd,
    env: options.env,
    stdio: [options.lifeline ? "pipe" : "ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let readyText = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-TAIL_CHARS);
  });
  // Always drained, so a chatty child never blocks on a full pipe.
  child.stdout?.resume();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const server: ChildServer = {
    name: options.name,
    pid: child.pid ?? -1,
    child,
    stderrTail: () => stderr,
    async stop(timeoutMs = 10_000) {
      live.delete(server);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), timeoutMs)));
      if ((await Promise.race([exited, late])) === "late") {
        child.kill("SIGKILL");
        await exited;
      }
      clearTimeout(timer);
    },
  };
  live.add(server);

  const match = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`${options.name} did not start within ${options.timeoutMs ?? 20_000} ms\n${stderr}`)),
      options.timeoutMs ?? 20_000,
    );
    const source = child[options.ready.stream];
    const onData = (chunk: Buffer) => {
      readyText += chunk.toString();
      const found = options.ready.pattern.exec(readyText);
      if (found) {
        cleanup();
        resolve(found[1] ?? found[0]);
      }
    };
    const onExit = (code: number | null) =>
      fail(new Error(`${options.name} exited with ${code} before it was ready\n${stderr}`));
    const cleanup = () => {
      clearTimeout(timer);
      source?.off("data", onData);
      child.off("exit", onExit);
    };
    function fail(error: Error) {
      cleanup();
      void server.stop(1_000);
      reject(error);
    }
    source?.on("data", onData);
    child.once("exit", onExit);
  });
  return { server, match };
}

/** Stops every child still running; for `finally` blocks and signal handlers. */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((server) => server.stop()));
}

/** Last resort when the benchmark itself dies: no child outlives it. */
export function killAllSync(): void {
  for (const server of live) if (server.child.exitCode === null) server.child.kill("SIGKILL");
}

let ticksPerSecond: number | undefined;

/**
 * CPU time (user + system, all threads) a process has used so far, in milliseconds, from
 * /proc/<pid>/stat; undefined where there is no /proc (not Linux) or the process is gone.
 */
export function processCpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name may contain spaces and parentheses; the fields after the last ")" are fixed.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
  ticksPerSecond ??= Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;
  return ((utime + stime) * 1000) / ticksPerSecond;
}
