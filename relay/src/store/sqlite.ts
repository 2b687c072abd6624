import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import SqliteDatabase from "better-sqlite3";
import { Kysely, Migrator, SqliteDialect } from "kysely";
import { createKyselyStore } from "./kysely";
import { type OwnerRow, ownerByHashQuery, toKeyOwner } from "./kysely/apiKeys";
import { migrationProvider } from "./migrations";
import { type WallClock, systemClock } from "../clock";
import type { Logger } from "../logger";
import type { Database } from "./schema";
import type { KeyOwner, Store } from "./types";
import { type WalCheckpointer, type WalCheckpointerOptions, startWalCheckpointer } from "./walCheckpointer";

export { createKyselyStore } from "./kysely";

/**
 * The database holds every agent's signing secret, so only its owner may read it. A new database file is created
 * 0600 before SQLite opens it (O_EXCL: no moment when it exists with looser modes, and an existing file is left
 * as it is); SQLite then gives its -wal and -shm files the database file's own mode (sqlite3.c 3.53, in
 * better-sqlite3's deps: `findCreateFileMode` copies it for the WAL, `unixOpenSharedMemory` for -shm, and
 * `robust_open` sets it exactly, whatever the umask). Folders it has to create are 0700.
 */
function createPrivately(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, "wx", 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

export interface SqliteStoreOptions {
  /**
   * The serving relay's logger. Given one, the store checkpoints its WAL from a worker thread instead of inside the
   * commits of its own connection (see walCheckpointer.ts), and logs the checkpointer's troubles there. Short-lived
   * commands (init, keys, migrate) pass none: a thread is not worth starting for a few writes.
   */
  logger?: Logger;
  /** Times the run of writes that starts the checkpointer. */
  clock?: WallClock;
  /**
   * The checkpointer's timing; tests shorten it. `startAfterWrites`: the worker starts once this many write statements
   * come within one second (0: at once).
   */
  checkpoint?: Pick<WalCheckpointerOptions, "intervalMs" | "idleStopMs"> & { startAfterWrites?: number };
}

/**
 * The checkpointer starts once this many write statements come within one second: a burst (200 webhook posts a
 * second make about a thousand), not a person using the console. Below it, SQLite's own checkpoint every 1,000 frames
 * comes seldom, and an idle relay keeps no second isolate (about 9 MB resident, measured in docs/benchmarks.md).
 */
export const CHECKPOINTER_START_WRITES = 64;

/** SQLite's automatic checkpoint threshold when nothing else checkpoints (SQLITE_DEFAULT_WAL_AUTOCHECKPOINT). */
const AUTOCHECKPOINT_PAGES = 1000;
/**
 * With the checkpointer running, the relay's own commits checkpoint only past this many WAL frames: the bound for
 * when the worker's passes keep missing the moment the WAL could start over (walCheckpointer.ts). By then the
 * worker has copied and synced all but its last pass's frames, so that checkpoint has little left to do.
 */
export const AUTOCHECKPOINT_WITH_WORKER_FRAMES = 4000;
/**
 * Checkpointing from a second connection while the relay's writes go on is the case of SQLite's "WAL-reset bug"
 * (https://www.sqlite.org/wal.html#walresetbug: two connections, a checkpoint and a write racing at a WAL reset,
 * could corrupt the database), fixed in 3.51.3 and 3.52.0. better-sqlite3 12.10.1 bundles 3.53.2; a build against
 * an older SQLite keeps the automatic checkpoint on the relay's one connection, where that race cannot happen.
 */
const SAFE_TWO_CONNECTION_CHECKPOINTS = [3, 51, 3] as const;

function sqliteVersionAtLeast(sqlite: SqliteDatabase.Database, wanted: readonly number[]): boolean {
  const version = (sqlite.prepare("select sqlite_version() as v").get() as { v: string }).v.split(".").map(Number);
  for (let i = 0; i < wanted.length; i++) {
    const have = version[i] ?? 0;
    const want = wanted[i] ?? 0;
    if (have !== want) return have > want;
  }
  return true;
}

/** The relay's own SQLite connection, configured, and what must happen when it closes. */
export interface RelayConnection {
  sqlite: SqliteDatabase.Database;
  /** The checkpointing worker, once it runs. */
  checkpointer: WalCheckpointer | undefined;
  /** Settles once the worker that is starting runs (or could not start); opening the connection does not wait for it. */
  readonly ready: Promise<void>;
  /** Called before each write statement: a quick run of them starts the checkpointer. */
  noteWrite(): void;
  /** Stops the checkpointer (its connection closes first, so the relay's close is the last and removes the WAL). */
  stopCheckpointer(): Promise<void>;
}

/**
 * Opens (creating if needed) the SQLite database at `path` in WAL mode with the relay's settings; with a logger,
 * starts the checkpointer when writes come quickly (without waiting for it) and raises the connection's automatic
 * checkpoint threshold to 4,000 frames while it runs. The worker ends itself after a quiet minute (walCheckpointer.ts).
 */
export async function openRelayConnection(path: string, options: SqliteStoreOptions = {}): Promise<RelayConnection> {
  if (path !== ":memory:") createPrivately(path);
  const sqlite = new SqliteDatabase(path);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  const { logger } = options;
  let checkpointer: WalCheckpointer | undefined;
  let stopping = false;
  // Set while a worker starts or runs; cleared when it stops by itself after a quiet spell, so the next burst starts
  // another. A worker that failed leaves it set: the relay keeps SQLite's own checkpoints rather than retry in a loop.
  let starting: Promise<void> | undefined;
  const checkpointing =
    logger !== undefined && path !== ":memory:" && sqliteVersionAtLeast(sqlite, SAFE_TWO_CONNECTION_CHECKPOINTS);
  const { startAfterWrites = CHECKPOINTER_START_WRITES, ...timing } = options.checkpoint ?? {};
  const backToDefault = () => {
    checkpointer = undefined;
    if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  };
  const start = (log: Logger) => {
    // Not awaited: the relay goes on with SQLite's default checkpoints, and hands them over when the worker is up
    // (starting a thread and loading better-sqlite3 in it took 100 ms and more, longer on a busy machine).
    starting = startWalCheckpointer(path, {
      ...timing,
      logger: log,
      onFailure: backToDefault,
      onIdle: () => {
        backToDefault();
        starting = undefined;
      },
    })
      .then(async (started) => {
        if (stopping || !sqlite.open) return await started.stop();
        checkpointer = started;
        // Per connection (https://www.sqlite.org/c3ref/wal_autocheckpoint.html): commits on this one no longer copy
        // the WAL into the database and sync it on the event loop every 1,000 frames; the worker does, all the time.
        sqlite.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_WITH_WORKER_FRAMES}`);
      })
      .catch((error: unknown) => {
        log.warn("could not start the WAL checkpointer; SQLite checkpoints inside the relay's commits", { error });
      });
  };
  if (checkpointing && startAfterWrites === 0) start(logger);
  const clock = options.clock ?? systemClock;
  let windowStart = 0;
  let writesInWindow = 0;
  return {
    sqlite,
    get ready() {
      return starting ?? Promise.resolve();
    },
    get checkpointer() {
      return checkpointer;
    },
    noteWrite() {
      if (!checkpointing || starting !== undefined || stopping) return;
      const now = clock.now();
      if (now - windowStart >= 1_000) {
        windowStart = now;
        writesInWindow = 0;
      }
      if (++writesInWindow >= startAfterWrites) start(logger);
    },
    async stopCheckpointer() {
      stopping = true;
      await starting;
      const running = checkpointer;
      checkpointer = undefined;
      await running?.stop();
    },
  };
}

/** Opens (creating if needed) the SQLite database at `path` in WAL mode and applies pending migrations. */
export async function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Promise<Store> {
  const connection = await openRelayConnection(path, options);
  const { sqlite } = connection;
  const owners = new Map<string, KeyOwner>();
  // The migrations' own writes do not count towards starting the checkpointer: they come once, at start.
  let migrated = false;
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({
      database: withStatementCache(sqlite, () => {
        owners.clear();
        if (migrated) connection.noteWrite();
      }),
    }),
  });
  const close = async () => {
    await connection.stopCheckpointer();
    await db.destroy();
  };
  const { error } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
  if (error) {
    await close();
    throw error instanceof Error ? error : new Error("the migrations failed", { cause: error });
  }
  migrated = true;
  // Every API request looks its key up: compiling the query and preparing the statement once, rather than per
  // request as Kysely would, takes that lookup from about 60 µs to a few.
  const compiled = ownerByHashQuery(db, "").compile();
  const ownerStatement = sqlite.prepare<[string], OwnerRow>(compiled.sql);
  // This relay is the database's only writer of changes (init and `keys create` beside it only add rows, and a new
  // key is found because only keys that exist are remembered); every write passes the statement cache, which forgets the
  // remembered owners the moment any statement changes data or a transaction ends: a revoked key, a removed user
  // or a changed role is seen by the very next request, and the hot path skips SQLite (its locks and a file
  // check) for keys that keep coming back. Only keys that exist are remembered, so a new key is found at once.
  // A remembered owner is shared by the requests that use it, so it is frozen.
  const ownerByHash = (hash: string) => {
    const remembered = owners.get(hash);
    if (remembered) return remembered;
    const row = ownerStatement.get(hash);
    if (!row) return undefined;
    const owner = toKeyOwner(row);
    for (const part of [owner.key.scopes, owner.key, owner.user, owner.workspace, owner]) Object.freeze(part);
    if (owners.size >= OWNER_CACHE_SIZE) owners.clear();
    owners.set(hash, owner);
    return owner;
  };
  return createKyselyStore(db, close, { ownerByHash });
}

/**
 * `tab-relay migrate` on an existing SQLite database: applies pending migrations, as opening the store does, and
 * returns the names of those this call applied (none when it was up to date).
 */
export async function migrateSqlite(path: string): Promise<string[]> {
  const sqlite = new SqliteDatabase(path, { fileMustExist: true });
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  try {
    const { error, results } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error("the migrations failed", { cause: error });
    return (results ?? []).filter((result) => result.status === "Success").map((result) => result.migrationName);
  } finally {
    await db.destroy();
  }
}

/** Prepared statements kept per SQL text; enough for every query the relay makes, with room for `in (...)` variants. */
const STATEMENT_CACHE_SIZE = 500;
/** Key owners remembered between writes; far more keys than one relay sees in active use. */
const OWNER_CACHE_SIZE = 10_000;
/** Ending a transaction settles what its writes did (a rollback undoes them), so it counts as a write too. */
const ENDS_TRANSACTION = /^\s*(?:commit|rollback|release|end)\b/i;

/**
 * Kysely's SQLite driver prepares every statement afresh, which costs more than running most of them. The same
 * few dozen SQL texts repeat forever, so each is prepared once. better-sqlite3 runs one statement at a time on
 * the connection, and Kysely never iterates, so sharing a prepared statement is safe.
 */
function withStatementCache(sqlite: SqliteDatabase.Database, beforeWrite: () => void) {
  const cache = new Map<string, { statement: SqliteDatabase.Statement; writes: boolean }>();
  return {
    close: () => sqlite.close(),
    // Kysely's driver prepares each statement right before running it, so this is where a write announces itself.
    prepare(sql: string) {
      let entry = cache.get(sql);
      if (entry === undefined) {
        const statement = sqlite.prepare(sql);
        entry = { statement, writes: !statement.readonly || ENDS_TRANSACTION.test(sql) };
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
        cache.set(sql, entry);
      }
      if (entry.writes) beforeWrite();
      return entry.statement;
    },
  };
}
