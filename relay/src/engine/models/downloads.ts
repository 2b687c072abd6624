import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { resolve } from "node:path";
import { processAlive } from "../../dataFolder";
import {
  type DownloadDeps,
  type DownloadOptions,
  type DownloadProgress,
  type DownloadTarget,
  downloadFile,
} from "./download";
import { ModelError } from "./errors";
import { fileSize, isMarkedVerified, markVerified } from "./store";

/**
 * Pulls of one file, merged. After ollama's server/download.go: two pulls of the same blob share one transfer, each
 * waiter gets the progress, and the transfer is cancelled only when the last waiter leaves.
 *
 * - In one process (the relay resolving `--model` while `tab-relay models pull` runs in the same process, or two
 *   requests for the same model), pulls of the same file path share one {@link downloadFile}.
 * - Across processes (two `tab-relay models pull` at once, or a pull beside a starting relay), `<file>.lock` holds
 *   the downloading process's id. The other process waits, showing the part file's growth, and when the lock goes
 *   uses the finished file, or takes over and resumes the part if the first one failed. A lock whose process is
 *   gone (a crash, SIGKILL) is taken over at once; one whose part stops growing for `lockStallMs` fails as `busy`.
 */
export type PullEvent =
  | { kind: "progress"; progress: DownloadProgress }
  /** Another process holds the lock: this one waits for it. */
  | { kind: "waiting"; pid: number }
  /** Hashing a file that is already there (placed by hand), which takes a few seconds per gigabyte. */
  | { kind: "verifying"; path: string };

export interface PullRequest {
  onEvent?: (event: PullEvent) => void;
  signal?: AbortSignal;
}

export interface DownloadsDeps extends DownloadDeps {
  pid: number;
  alive?: (pid: number) => boolean;
  /** Tuning of the transfer (stall watchdog, retries); the same for every waiter. */
  download?: Omit<DownloadOptions, "onProgress" | "signal">;
  /** How often a waiting process looks at the lock and the part. */
  lockPollMs?: number;
  /** A lock held by a live process whose part does not grow for this long is given up on. */
  lockStallMs?: number;
}

interface Shared {
  /** True when this process downloaded the file, false when another process had finished it. */
  promise: Promise<boolean>;
  listeners: Set<(event: PullEvent) => void>;
  controller: AbortController;
  waiters: number;
}

/** Every pull under way in this process, by file path, whichever {@link ModelDownloads} started it. */
const inflight = new Map<string, Shared>();

export class ModelDownloads {
  readonly #deps: DownloadsDeps;

  constructor(deps: DownloadsDeps) {
    this.#deps = deps;
  }

  /**
   * Resolves once `target.paths.file` holds the verified file: true when this process downloaded it, false when
   * another process it waited for did.
   */
  pull(target: DownloadTarget, request: PullRequest = {}): Promise<boolean> {
    const key = resolve(target.paths.file);
    let shared = inflight.get(key);
    if (shared === undefined) {
      const listeners = new Set<(event: PullEvent) => void>();
      const controller = new AbortController();
      const emit = (event: PullEvent) => {
        for (const listener of listeners) listener(event);
      };
      const made: Shared = {
        listeners,
        controller,
        waiters: 0,
        // Started on the next tick, once the first waiter's listener is in place.
        promise: Promise.resolve()
          .then(() => this.#pullLocked(target, emit, controller.signal))
          .finally(() => inflight.delete(key)),
      };
      // A rejection nobody waits for any more (every waiter left) must not become an unhandled one.
      made.promise.catch(() => undefined);
      inflight.set(key, made);
      shared = made;
    }
    return this.#join(shared, request);
  }

  #join(shared: Shared, request: PullRequest): Promise<boolean> {
    const { onEvent, signal } = request;
    if (signal?.aborted) return Promise.reject(new ModelError("aborted", "the download was stopped"));
    shared.waiters += 1;
    if (onEvent) shared.listeners.add(onEvent);
    return new Promise<boolean>((resolve, reject) => {
      let left = false;
      const leave = () => {
        if (left) return;
        left = true;
        if (onEvent) shared.listeners.delete(onEvent);
        shared.waiters -= 1;
        signal?.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        leave();
        const stopped = () => reject(new ModelError("aborted", "the download was stopped"));
        if (shared.waiters > 0) return stopped();
        // The last waiter stops the transfer, and hears back once it has let go of its files and lock.
        shared.controller.abort();
        shared.promise.then(stopped, stopped);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      shared.promise.then(
        (downloaded) => {
          leave();
          resolve(downloaded);
        },
        (error: unknown) => {
          leave();
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  async #pullLocked(target: DownloadTarget, emit: (event: PullEvent) => void, signal: AbortSignal): Promise<boolean> {
    const { paths } = target;
    const deps = this.#deps;
    const alive = deps.alive ?? processAlive;
    const pollMs = deps.lockPollMs ?? 500;
    const lockStallMs = deps.lockStallMs ?? 2 * (deps.download?.stallMs ?? 30_000) + 10_000;
    let announced = false;
    let lastSize = -1;
    let lastGrowth = deps.clock.now();
    for (;;) {
      if (signal.aborted) throw new ModelError("aborted", "the download was stopped");
      const holder = takeLock(paths.lock, deps.pid, alive);
      if (holder === undefined) break;
      if (!announced) {
        announced = true;
        emit({ kind: "waiting", pid: holder });
      }
      const size = (await fileSize(paths.part)) ?? (await fileSize(paths.file)) ?? 0;
      const now = deps.clock.now();
      if (size !== lastSize) {
        lastSize = size;
        lastGrowth = now;
        emit({
          kind: "progress",
          progress: {
            received: size,
            total: target.bytes,
            startedAt: 0,
            bytesPerSecond: undefined,
            secondsLeft: undefined,
          },
        });
      } else if (now - lastGrowth > lockStallMs) {
        throw new ModelError(
          "busy",
          `another process (pid ${holder}) is pulling ${paths.file} and its download has not grown for ${Math.round(lockStallMs / 1000)} s. Stop it, or remove ${paths.lock} if that process is not a pull`,
        );
      }
      await wait(deps, pollMs, signal);
    }
    try {
      // The holder that just let go may have finished the file.
      if (await isMarkedVerified(paths, target.sha256)) return false;
      await downloadFile(target, deps, {
        ...deps.download,
        signal,
        onProgress: (progress) => emit({ kind: "progress", progress }),
      });
      await markVerified(paths, target.sha256);
      return true;
    } finally {
      releaseLock(paths.lock, deps.pid);
    }
  }
}

/** Takes the lock for `pid`; returns the live holder's id when another process has it. */
function takeLock(path: string, pid: number, alive: (pid: number) => boolean): number | undefined {
  for (let tries = 0; tries < 3; tries++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      try {
        writeSync(fd, `${pid}\n`);
      } finally {
        closeSync(fd);
      }
      return undefined;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = readHolder(path);
    if (holder !== undefined && holder !== pid && alive(holder)) return holder;
    // Gone, unreadable, or ours from before: take it over.
    rmSync(path, { force: true });
  }
  throw new ModelError("busy", `could not take the lock ${path}`);
}

/** The process id a lock file names, if any. */
export function lockHolder(path: string): number | undefined {
  return readHolder(path);
}

function readHolder(path: string): number | undefined {
  try {
    const text = readFileSync(path, "utf8").trim();
    return /^\d{1,10}$/.test(text) ? Number(text) : undefined;
  } catch {
    return undefined;
  }
}

function releaseLock(path: string, pid: number): void {
  if (readHolder(path) === pid) rmSync(path, { force: true });
}

function wait(deps: DownloadsDeps, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener("abort", done);
      deps.clock.clearTimeout(handle);
      resolve();
    };
    const handle = deps.clock.setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
