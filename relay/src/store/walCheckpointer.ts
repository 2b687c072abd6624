import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { Logger } from "../logger";

const require = createRequire(import.meta.url);

/**
 * Checkpoints a WAL-mode SQLite database from a worker thread, so the relay's event loop rarely waits for one.
 *
 * Why: with `synchronous = NORMAL` a commit in WAL mode writes the WAL and does not sync; "the WAL file is
 * synchronized before each checkpoint and the database file is synchronized after each completed checkpoint ... but
 * no sync operations occur during most transactions" (https://www.sqlite.org/pragma.html#pragma_synchronous).
 * SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past its threshold (1,000 frames by default),
 * on the committing connection (https://www.sqlite.org/c3ref/wal_autocheckpoint.html): on the relay that is the main
 * thread, and that commit copies the WAL into the database and syncs both while every request, SSE stream and
 * delivery waits. SQLite's own advice (https://www.sqlite.org/wal.html, "Checkpointing"): applications can "turn off
 * the automatic checkpoints and run checkpoints during idle moments or in a separate thread or process".
 *
 * How: this worker opens its own better-sqlite3 connection to the same file (better-sqlite3 objects belong to the
 * thread that made them; a worker opens its own, as WiseLibs/better-sqlite3 docs/threads.md does) and every
 * `intervalMs` runs `PRAGMA wal_checkpoint(PASSIVE)`: PASSIVE "checkpoint[s] as many frames as possible without
 * waiting for any database readers or writers to finish" and "the busy-handler callback is never invoked"
 * (https://www.sqlite.org/c3ref/wal_checkpoint_v2.html). It takes only the checkpoint lock, never the write lock, so
 * the relay's reads and writes go on while it copies and syncs, and never meet SQLITE_BUSY because of it.
 *
 * Never the write lock, on purpose: a FULL, RESTART or TRUNCATE checkpoint from this connection holds writers off
 * while it runs, and a relay transaction that has read and then wants to write gets SQLITE_BUSY at once without its
 * busy handler (sqlite3BtreeBeginTrans calls it only while `pBt->inTransaction == TRANS_NONE`; sqlite3.c 3.53.2
 * in better-sqlite3's deps), which the relay
 * answers 503. Measured with RESTART past 4,000 frames: 64 posts of 2,000 answered 503 at 200 posts/s.
 *
 * The bound: a PASSIVE pass copies the frames that were there when it began; writes committed while it copies and
 * syncs stay behind, and the WAL starts over only when a write begins with every frame copied (wal.html). Under
 * steady writes that moment may never come (measured: the WAL reached 136 MB after 15 s of 600 transactions/s,
 * test/bench/walCheckpointBench.ts). So a pass that saw new frames arrive is followed at once by another, up to
 * CATCH_UP_PASSES, each with less to copy and sync; and the relay's connection keeps SQLite's automatic checkpoint
 * at AUTOCHECKPOINT_FRAMES (sqlite.ts), four times the default: when the worker could not catch up, the commit that
 * takes the WAL past it checkpoints as before, with only the frames since the worker's last pass left to copy, and
 * the WAL starts over. The WAL file therefore stays below about 4,000 frames (16 MB of 4 KiB pages) plus one pass.
 *
 * When nothing has been written for `idleStopMs` and the WAL is all copied, the worker stops by itself and `onIdle`
 * runs: an idle relay does not keep a second V8 isolate (about 9 MB resident) for checkpoints it does not need, and
 * the caller starts a new worker when writes come quickly again (sqlite.ts).
 *
 * When the worker cannot start or dies, `onFailure` runs: the caller puts the default threshold back, so a relay
 * without its checkpointer is the relay as it was.
 */
export interface WalCheckpointerOptions {
  logger: Logger;
  /** How often the worker runs a PASSIVE checkpoint. */
  intervalMs?: number;
  /** How long the WAL must stay unchanged and all copied before the worker stops by itself. */
  idleStopMs?: number;
  /** The worker has died: the relay's own automatic checkpoints must take over again. */
  onFailure: () => void;
  /** The worker stopped by itself after `idleStopMs` without writes: the relay checkpoints by itself until it restarts one. */
  onIdle?: () => void;
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
/** Without writes for this long, the worker ends (a minute: a burst's checkpoints are long done by then). */
export const CHECKPOINT_IDLE_STOP_MS = 60_000;
/** Passes run back to back while writes keep adding frames during them. */
const CATCH_UP_PASSES = 4;
/** How long `stop` waits for the worker to finish a checkpoint under way and close its connection. */
const STOP_GRACE_MS = 5_000;
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
const { path, intervalMs, idleStopMs, catchUpPasses, largeWalFrames } = workerData;
let db;
try {
  db = new Database(path, { fileMustExist: true });
  // PASSIVE never calls the busy handler; nothing here may wait on the relay.
  db.pragma("busy_timeout = 0");
} catch (error) {
  parentPort.postMessage({ type: "failed", message: String(error && error.message || error) });
  process.exit(1);
}
const passive = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
let warnedAt = 0;
let failures = 0;
// The WAL's frame count as last seen, and since when it has not changed: unchanged and all copied means no writes.
let lastLog = -1;
let quietSince = Date.now();
function checkpoint() {
  let result = passive.get();
  // "log" is the WAL's frame count when the pass began: a larger one next time means writes came in meanwhile.
  for (let pass = 1; pass < catchUpPasses; pass++) {
    const again = passive.get();
    const caughtUp = again.log === result.log;
    result = again;
    if (caughtUp) break;
  }
  const now = Date.now();
  if (result.log >= largeWalFrames && result.checkpointed < result.log && now - warnedAt >= 60000) {
    warnedAt = now;
    parentPort.postMessage({ type: "large", log: result.log, checkpointed: result.checkpointed });
  }
  return result;
}
function stop() {
  clearInterval(timer);
  try {
    db.close();
  } catch (error) {
    parentPort.postMessage({ type: "error", message: String(error && error.message || error) });
  }
  parentPort.close();
}
function tick() {
  try {
    const result = checkpoint();
    failures = 0;
    const now = Date.now();
    if (result.log !== lastLog) {
      lastLog = result.log;
      quietSince = now;
    } else if (result.checkpointed === result.log && now - quietSince >= idleStopMs) {
      parentPort.postMessage({ type: "idle" });
      stop();
    }
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
    stop();
  }
});
parentPort.postMessage({ type: "ready" });
`;

type FromWorker =
  | { type: "ready" }
  | { type: "idle" }
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
      idleStopMs: options.idleStopMs ?? CHECKPOINT_IDLE_STOP_MS,
      catchUpPasses: CATCH_UP_PASSES,
      largeWalFrames: LARGE_WAL_FRAMES,
    },
    // The relay's preloads (a benchmark's lifeline, a profiler) are not the checkpointer's business.
    execArgv: [],
    // It allocates almost nothing; small heaps keep its isolate's resident memory small (an isolate's default young
    // generation alone reserves several MB). Should it ever run out, it exits and the relay checkpoints by itself again.
    resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
    stdout: false,
    stderr: false,
  });
  // The relay's own close stops it; a forgotten store must not keep a process alive.
  worker.unref();
  let stopping = false;
  let started = false;
  let idled = false;
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
        case "idle":
          idled = true;
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
      if (idled) return options.onIdle?.();
      logger.error("the WAL checkpointer stopped; the relay checkpoints every 1,000 WAL frames itself again", {
        exit_code: code,
      });
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
