import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { Logger } from "../logger";

const require = createRequire(import.meta.url);

/**
 * Checkpoints a WAL-mode SQLite database from a worker thread, so the relay's event loop never waits for one.
 *
 * Why: with `synchronous = NORMAL` a commit in WAL mode writes the WAL and does not sync; only checkpoints sync
 * ("WAL mode ... synchronous=NORMAL ... only checkpoints fsync", https://www.sqlite.org/pragma.html#pragma_synchronous).
 * SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past 1,000 pages, on the committing
 * connection (https://www.sqlite.org/c3ref/wal_autocheckpoint.html): on the relay that is the main thread, and that
 * commit copies the WAL into the database and fsyncs it while every request, SSE stream and delivery waits.
 * SQLite's own advice (https://www.sqlite.org/wal.html, "Checkpointing"): applications can "turn off the automatic
 * checkpoints and run checkpoints during idle moments or in a separate thread or process", and "if an application
 * therefore runs checkpoint in a separate thread or process, the main thread or process that is doing database
 * queries and updates will never block on a sync operation".
 *
 * How: the relay's connection sets `wal_autocheckpoint = 0` (per connection; sqlite3_wal_autocheckpoint applies to
 * the connection it is called on) and this worker opens its own better-sqlite3 connection to the same file
 * (better-sqlite3 objects belong to the thread that made them; a worker opens its own, as
 * WiseLibs/better-sqlite3 docs/threads.md does). Every `intervalMs` it runs `PRAGMA wal_checkpoint(PASSIVE)`:
 * PASSIVE "checkpoint[s] as many frames as possible without waiting for any database readers or writers to finish"
 * and "the busy-handler callback is never invoked" (https://www.sqlite.org/c3ref/wal_checkpoint_v2.html), so the
 * relay's writes go on while it copies and syncs. It is the mode the automatic checkpoint uses, so the WAL is bounded
 * exactly as before (by the checkpoint's progress, which only a long read transaction such as a backup holds back),
 * only checked every `intervalMs` instead of every 1,000 pages. Once the WAL has been fully copied, the next
 * writer starts it over from the beginning (wal.html: "the next writer restarts the log file from the beginning"),
 * so the file stops growing. After `idleTruncateMs` without new frames, with every frame already copied, the worker
 * runs `wal_checkpoint(TRUNCATE)` with a zero busy timeout: it shrinks the file to zero bytes, and the writer lock
 * it takes is held only to truncate (nothing is left to copy); if the relay writes at that moment, SQLite answers
 * busy and the worker simply tries at the next idle spell.
 *
 * When the worker cannot start or dies, `onFailure` runs: the caller turns automatic checkpoints back on, so a
 * relay without its checkpointer is the relay as it was, never one whose WAL grows without end.
 */
export interface WalCheckpointerOptions {
  logger: Logger;
  /** How often the worker runs a PASSIVE checkpoint. */
  intervalMs?: number;
  /** How long the WAL must stay unchanged (and fully checkpointed) before it is truncated to zero bytes. */
  idleTruncateMs?: number;
  /** The worker could not start or has died: automatic checkpoints must take over. */
  onFailure: () => void;
}

/** What one `PRAGMA wal_checkpoint` answered: busy (1 when it could not finish), frames in the WAL, frames copied. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

export interface WalCheckpointer {
  /** The worker thread itself (tests end it to see the relay fall back to automatic checkpoints). */
  readonly thread: Worker;
  /** Runs a PASSIVE checkpoint now (tests, and `stop`'s callers that want one last pass). */
  checkpointNow(): Promise<CheckpointResult>;
  /** Stops the timer, closes the worker's connection and waits for the thread to end (then terminates it). */
  stop(): Promise<void>;
}

/** Checked often: a PASSIVE checkpoint with nothing to copy only reads the WAL index, and copying is off the loop. */
export const CHECKPOINT_INTERVAL_MS = 200;
/** A quiet relay gives its WAL file's space back after this long. */
export const IDLE_TRUNCATE_MS = 10_000;
/** How long `stop` waits for the worker to finish a checkpoint under way and close its connection. */
const STOP_GRACE_MS = 5_000;
/**
 * A PASSIVE pass copies the frames that were there when it began; writes committed while it copies and syncs stay
 * behind, and the WAL starts over only when a write begins with every frame copied and no reader in the WAL
 * (wal.html, "Checkpointing"). Under steady writes that moment may never come, and the file grows without end
 * (measured: 136 MB after 15 s of 600 transactions/s, test/bench/walCheckpointBench.ts). Past this many frames the
 * worker follows the PASSIVE pass with a RESTART one, which "blocks new database writer attempts while it is
 * pending" and then waits until no reader uses the WAL, which "ensures that the next writer will restart the log
 * file from the beginning" (c3ref/wal_checkpoint_v2.html). It has only the frames of the last few milliseconds left
 * to copy and sync, so a relay write that meets it waits briefly, once per this many frames (about 16 MB of 4 KiB
 * pages; the automatic checkpoint copied and synced 1,000 frames on the event loop every 1,000).
 */
const RESET_FRAMES = 4000;
/** How long the RESTART checkpoint may wait for the relay's write under way (in the worker, never on the event loop). */
const RESTART_BUSY_MS = 2_000;
/** A WAL past this many frames that a checkpoint cannot finish is worth a warning (about 40 MB of 4 KiB pages). */
const LARGE_WAL_FRAMES = 10_000;

/**
 * The worker's code, as CommonJS text run with `eval: true`: the relay ships as one ESM bundle (relay/build.mjs),
 * and a script of its own would need a second entry point and a path that differs between the bundle and the
 * TypeScript sources the tests run. better-sqlite3 is loaded from the path the relay itself resolves.
 */
const WORKER_SOURCE = `
"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const { path, intervalMs, idleTruncateMs, largeWalFrames } = workerData;
let db;
try {
  db = new Database(path, { fileMustExist: true });
  // PASSIVE never calls the busy handler; TRUNCATE must not wait either (it runs only when the relay is idle).
  db.pragma("busy_timeout = 0");
} catch (error) {
  parentPort.postMessage({ type: "failed", message: String(error && error.message || error) });
  process.exit(1);
}
const passive = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
const restart = db.prepare("PRAGMA wal_checkpoint(RESTART)");
const truncate = db.prepare("PRAGMA wal_checkpoint(TRUNCATE)");
const { resetFrames, restartBusyMs } = workerData;
let lastLog = -1;
let changedAt = Date.now();
let truncated = false;
let warnedAt = 0;
let failures = 0;
function checkpoint() {
  let result = passive.get();
  if (result.busy === 0 && result.log >= resetFrames) {
    // The WAL has not started over: writes went on during the passes. Finish it while holding writers off.
    db.pragma("busy_timeout = " + restartBusyMs);
    try {
      result = restart.get();
    } finally {
      db.pragma("busy_timeout = 0");
    }
  }
  const now = Date.now();
  if (result.log !== lastLog) {
    lastLog = result.log;
    changedAt = now;
    truncated = false;
  } else if (!truncated && result.log > 0 && result.busy === 0 && result.checkpointed === result.log &&
      now - changedAt >= idleTruncateMs) {
    const done = truncate.get();
    if (done.busy === 0) {
      truncated = true;
      lastLog = done.log;
    }
  }
  if (result.log >= largeWalFrames && result.checkpointed < result.log && now - warnedAt >= 60000) {
    warnedAt = now;
    parentPort.postMessage({ type: "large", log: result.log, checkpointed: result.checkpointed });
  }
  return result;
}
function tick() {
  try {
    checkpoint();
    failures = 0;
  } catch (error) {
    failures++;
    // One line per failure streak, not one per tick.
    if (failures === 1) parentPort.postMessage({ type: "error", message: String(error && error.message || error) });
  }
}
const timer = setInterval(tick, intervalMs);
parentPort.on("message", (message) => {
  if (message.type === "checkpoint") {
    try {
      parentPort.postMessage({ type: "checkpointed", id: message.id, result: checkpoint() });
    } catch (error) {
      parentPort.postMessage({ type: "checkpointed", id: message.id, error: String(error && error.message || error) });
    }
  } else if (message.type === "stop") {
    clearInterval(timer);
    try {
      db.close();
    } catch (error) {
      parentPort.postMessage({ type: "error", message: String(error && error.message || error) });
    }
    parentPort.close();
  }
});
parentPort.postMessage({ type: "ready" });
`;

type FromWorker =
  | { type: "ready" }
  | { type: "failed"; message: string }
  | { type: "error"; message: string }
  | { type: "large"; log: number; checkpointed: number }
  | { type: "checkpointed"; id: number; result?: CheckpointResult; error?: string };

/**
 * Starts the checkpointing worker on the database at `path` (which must exist, in WAL mode). Resolves once its
 * connection is open; rejects when it cannot start (the caller keeps automatic checkpoints then).
 */
export function startWalCheckpointer(path: string, options: WalCheckpointerOptions): Promise<WalCheckpointer> {
  const { logger } = options;
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      driver: require.resolve("better-sqlite3"),
      path,
      intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS,
      idleTruncateMs: options.idleTruncateMs ?? IDLE_TRUNCATE_MS,
      largeWalFrames: LARGE_WAL_FRAMES,
      resetFrames: RESET_FRAMES,
      restartBusyMs: RESTART_BUSY_MS,
    },
    // The relay's preloads (a benchmark's lifeline, a profiler) are not the checkpointer's business.
    execArgv: [],
    stdout: false,
    stderr: false,
  });
  // The relay's own close stops it; a forgotten store must not keep a process alive.
  worker.unref();
  let stopping = false;
  let started = false;
  let nextId = 0;
  const waiting = new Map<number, { resolve: (r: CheckpointResult) => void; reject: (e: Error) => void }>();
  const exited = new Promise<number>((resolve) => worker.once("exit", resolve));

  const failAll = (error: Error) => {
    for (const pending of waiting.values()) pending.reject(error);
    waiting.clear();
  };

  return new Promise<WalCheckpointer>((resolve, reject) => {
    worker.on("message", (message: FromWorker) => {
      switch (message.type) {
        case "ready":
          started = true;
          resolve(handle);
          return;
        case "failed":
          reject(new Error(`the WAL checkpointer could not open the database: ${message.message}`));
          return;
        case "error":
          logger.error("WAL checkpoint failed", { error: message.message });
          return;
        case "large":
          logger.warn(
            "the SQLite WAL is large and a checkpoint cannot finish (a long read, such as a backup, holds it)",
            {
              wal_frames: message.log,
              checkpointed_frames: message.checkpointed,
            },
          );
          return;
        case "checkpointed": {
          const pending = waiting.get(message.id);
          waiting.delete(message.id);
          if (message.result) pending?.resolve(message.result);
          else pending?.reject(new Error(message.error ?? "the checkpoint failed"));
          return;
        }
      }
    });
    worker.on("error", (error) => {
      logger.error("the WAL checkpointer stopped with an error", { error });
    });
    void exited.then((code) => {
      const error = new Error(`the WAL checkpointer exited (code ${code})`);
      failAll(error);
      if (!started) return reject(error);
      if (stopping) return;
      logger.error("the WAL checkpointer stopped; SQLite's automatic checkpoints take over", { exit_code: code });
      options.onFailure();
    });

    const handle: WalCheckpointer = {
      thread: worker,
      checkpointNow() {
        if (stopping) return Promise.reject(new Error("the WAL checkpointer is stopped"));
        const id = nextId++;
        return new Promise<CheckpointResult>((resolveCheckpoint, rejectCheckpoint) => {
          waiting.set(id, { resolve: resolveCheckpoint, reject: rejectCheckpoint });
          worker.postMessage({ type: "checkpoint", id });
        });
      },
      async stop() {
        if (stopping) return void (await exited);
        stopping = true;
        worker.postMessage({ type: "stop" });
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<"late">(
          (resolveLate) => (timer = setTimeout(() => resolveLate("late"), STOP_GRACE_MS)),
        );
        const outcome = await Promise.race([exited, late]);
        clearTimeout(timer);
        if (outcome === "late") {
          logger.warn("the WAL checkpointer did not stop in time; terminating it", { grace_ms: STOP_GRACE_MS });
          await worker.terminate();
        }
      },
    };
  });
}
