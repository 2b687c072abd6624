import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";

/** A `tab-relay serve` running as its own process, as an operator would run it. */
export interface RelayProcess {
  name: string;
  url: string;
  child: ChildProcess;
  /** The signal or exit code the process ended with. */
  exited: Promise<NodeJS.Signals | number | null>;
  /** The last lines it wrote to stdout and stderr. */
  output(): string;
}

/**
 * Runs `node <args>` (a `serve` command on port 0), or `command <args>` (an installed `tab-relay`), and resolves once
 * it announces where it listens. The child is in `tracked` while it runs, so a test's teardown can kill whatever is
 * left.
 */
export async function spawnRelay(options: {
  name: string;
  command?: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  tracked: Set<ChildProcess>;
  startTimeoutMs: number;
  outputChars: number;
}): Promise<RelayProcess> {
  const { name, tracked } = options;
  const child = spawn(options.command ?? process.execPath, [...options.args], {
    cwd: options.cwd,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  tracked.add(child);
  let output = "";
  const collect = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-options.outputChars));
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.once("exit", (code, signal) => {
      tracked.delete(child);
      resolve(signal ?? code);
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start within ${options.startTimeoutMs} ms:\n${output}`)),
      options.startTimeoutMs,
    );
    child.stderr.on("data", () => {
      const match = /serving on (http:\/\/\S+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${String(how)}) before it listened:\n${output}`));
    });
  });
  return { name, url, child, exited, output: () => output };
}

/** How a command that ran to its end ended, and what it printed. */
export interface CommandRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end without blocking this process, so that stand-ins, receivers and load in it go on while
 * it runs (spawnSync would stop them); killed after `killAfterMs`.
 */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env: NodeJS.ProcessEnv; killAfterMs: number },
): Promise<CommandRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.killAfterMs);
    child.once("error", reject);
    child.once("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** Polls `probe` until it answers something other than undefined, or fails after `timeoutMs` naming `what`. */
export async function until<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined> | T | undefined,
  everyMs = 50,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
