import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import type { Logger } from "../logger";
import {
  AUTOCHECKPOINT_WITH_WORKER_FRAMES,
  type RelayConnection,
  openRelayConnection,
  openSqliteStore,
} from "./sqlite";

/** Real database files; the relay's own connection settings (openRelayConnection), written to the way it writes. */

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown> | undefined;
}

function recordingLogger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    void lines.push({ level, msg, fields });
  return { lines, enabled: () => true, debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}

const PAGE = 4096;
const HOUR = 3_600_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `rows` rows of about 1 KiB in transactions of `perTransaction`, each transaction on its own turn of the event loop. */
async function write(connection: RelayConnection, rows: number, perTransaction = 20): Promise<number> {
  const { sqlite } = connection;
  sqlite.exec("create table if not exists filler (id integer primary key, body text not null)");
  const insert = sqlite.prepare("insert into filler (body) values (?)");
  const batch = sqlite.transaction((count: number) => {
    for (let i = 0; i < count; i++) insert.run("x".repeat(1000));
  });
  let walMax = 0;
  for (let done = 0; done < rows; done += perTransaction) {
    batch(Math.min(perTransaction, rows - done));
    walMax = Math.max(walMax, walBytes(connection));
    await sleep(1);
  }
  return walMax;
}

let dir: string;
let path: string;
const walBytes = (_: unknown) => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "wal-checkpointer-"));
  path = join(dir, "relay.db");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("the relay's SQLite connection and its WAL checkpointer", () => {
  test("without a logger (init, keys, tests) the connection checkpoints inside its own commits, as SQLite does by default", async () => {
    const connection = await openRelayConnection(path);
    try {
      assert.equal(connection.checkpointer, undefined);
      assert.equal(connection.sqlite.pragma("wal_autocheckpoint", { simple: true }), 1000);
      // About 3,000 pages written (12,000 rows of 1 KiB): the automatic checkpoint restarts the WAL every 1,000.
      const walMax = await write(connection, 12_000, 200);
      assert.ok(walMax < 1_400 * PAGE, `WAL reached ${walMax} bytes`);
    } finally {
      await connection.stopCheckpointer();
      connection.sqlite.close();
    }
  });

  test("the serving relay's connection checkpoints inside its commits only past 4,000 frames", async () => {
    // The worker runs, but not within this test (an hour between passes): whatever keeps the WAL small is the connection's.
    const connection = await openRelayConnection(path, {
      logger: recordingLogger(),
      checkpoint: { intervalMs: HOUR, startAfterWrites: 0 },
    });
    await connection.ready;
    try {
      assert.ok(connection.checkpointer);
      assert.equal(connection.sqlite.pragma("wal_autocheckpoint", { simple: true }), AUTOCHECKPOINT_WITH_WORKER_FRAMES);
      // About 3,000 pages: every one is still in the WAL, no commit copied it into the database.
      const walMax = await write(connection, 12_000, 200);
      assert.ok(walMax > 2_500 * PAGE, `WAL reached only ${walMax} bytes`);
      // Past 4,000 frames a commit checkpoints after all, so the WAL stays bounded even without the worker.
      const walLater = await write(connection, 24_000, 200);
      assert.ok(walLater < 4_400 * PAGE, `WAL reached ${walLater} bytes`);
      // And the worker's checkpoint copies it all when asked.
      const result = await connection.checkpointer.checkpointNow();
      assert.equal(result.busy, 0);
      assert.equal(result.checkpointed, result.log);
    } finally {
      await connection.stopCheckpointer();
      connection.sqlite.close();
    }
  });

  test("the worker copies the WAL into the database while the relay writes, and the WAL starts over", async () => {
    const logger = recordingLogger();
    const connection = await openRelayConnection(path, { logger, checkpoint: { intervalMs: 20, startAfterWrites: 0 } });
    await connection.ready;
    try {
      // About 2,000 pages, below the connection's own threshold of 4,000 frames: only the worker checkpoints.
      await write(connection, 8_000, 40);
      const deadline = Date.now() + 5_000;
      while (statSync(path).size < 1_800 * PAGE && Date.now() < deadline) await sleep(20);
      // The rows are in the database file itself, copied there by the worker.
      assert.ok(statSync(path).size >= 1_800 * PAGE, `database file is ${statSync(path).size} bytes`);
      // Everything was copied, so the next write starts the WAL over from its first frame.
      await sleep(100);
      await write(connection, 1, 1);
      const result = await connection.checkpointer?.checkpointNow();
      assert.ok(result && result.log < 10, `the WAL holds ${result?.log} frames`);
      assert.deepEqual(
        logger.lines.filter((line) => line.level === "error"),
        [],
      );
    } finally {
      await connection.stopCheckpointer();
      connection.sqlite.close();
    }
  });

  test("closing the store stops the worker and closes its connection first, so the WAL goes with the relay's", async () => {
    const logger = recordingLogger();
    const store = await openSqliteStore(path, { logger, checkpoint: { intervalMs: 20, startAfterWrites: 0 } });
    // The migrations wrote through the WAL.
    assert.ok(existsSync(`${path}-wal`));
    await store.close();
    // SQLite removes the WAL when the last connection to the database closes: the worker's was closed before it.
    assert.equal(existsSync(`${path}-wal`), false);
    assert.deepEqual(logger.lines, []);
  });

  test("when the worker dies, the relay's connection checkpoints by itself again, and says so", async () => {
    const logger = recordingLogger();
    const connection = await openRelayConnection(path, {
      logger,
      checkpoint: { intervalMs: HOUR, startAfterWrites: 0 },
    });
    await connection.ready;
    try {
      assert.equal(connection.sqlite.pragma("wal_autocheckpoint", { simple: true }), AUTOCHECKPOINT_WITH_WORKER_FRAMES);
      await connection.checkpointer?.thread.terminate();
      const deadline = Date.now() + 5_000;
      while (connection.checkpointer !== undefined && Date.now() < deadline) await sleep(10);
      assert.equal(connection.checkpointer, undefined);
      assert.equal(connection.sqlite.pragma("wal_autocheckpoint", { simple: true }), 1000);
      assert.ok(logger.lines.some((line) => line.level === "error" && /checkpointer stopped/.test(line.msg)));
    } finally {
      await connection.stopCheckpointer();
      connection.sqlite.close();
    }
  });

  test("an idle serving relay keeps no checkpointer: it starts once writes come quickly", async () => {
    const connection = await openRelayConnection(path, {
      logger: recordingLogger(),
      checkpoint: { intervalMs: HOUR, startAfterWrites: 10 },
    });
    try {
      await sleep(50);
      assert.equal(connection.checkpointer, undefined);
      assert.equal(connection.sqlite.pragma("wal_autocheckpoint", { simple: true }), 1000);
      for (let i = 0; i < 9; i++) connection.noteWrite();
      await connection.ready;
      assert.equal(connection.checkpointer, undefined, "nine writes are not a burst");
      connection.noteWrite();
      await connection.ready;
      assert.ok(connection.checkpointer);
      assert.equal(connection.sqlite.pragma("wal_autocheckpoint", { simple: true }), AUTOCHECKPOINT_WITH_WORKER_FRAMES);
    } finally {
      await connection.stopCheckpointer();
      connection.sqlite.close();
    }
  });

  test("after a quiet spell with the WAL all copied the worker ends by itself, and the next burst starts another", async () => {
    const logger = recordingLogger();
    const connection = await openRelayConnection(path, {
      logger,
      checkpoint: { intervalMs: 20, idleStopMs: 200, startAfterWrites: 5 },
    });
    try {
      for (let i = 0; i < 5; i++) connection.noteWrite();
      await connection.ready;
      const first = connection.checkpointer;
      assert.ok(first);
      await write(connection, 400, 20);
      const deadline = Date.now() + 10_000;
      while (connection.checkpointer !== undefined && Date.now() < deadline) await sleep(20);
      assert.equal(connection.checkpointer, undefined, "the worker did not end after its quiet spell");
      assert.equal(connection.sqlite.pragma("wal_autocheckpoint", { simple: true }), 1000);
      // It ended with everything copied: the database file holds the rows.
      assert.ok(statSync(path).size >= 100 * PAGE, `database file is ${statSync(path).size} bytes`);
      for (let i = 0; i < 5; i++) connection.noteWrite();
      await connection.ready;
      assert.ok(connection.checkpointer && connection.checkpointer !== first);
      assert.deepEqual(
        logger.lines.filter((line) => line.level === "error" || line.level === "warn"),
        [],
      );
    } finally {
      await connection.stopCheckpointer();
      connection.sqlite.close();
    }
  });
});
