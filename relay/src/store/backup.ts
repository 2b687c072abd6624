import {
  closeSync,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import SqliteDatabase from "better-sqlite3";
import { LOCK_FILE, lockDataFolder, processAlive } from "../dataFolder";
import { MODELS_FOLDER } from "../engine/models/store";
import { migrationProvider } from "./migrations";

/** A mistake or a refusal, told in one line that starts with the flag it is about. */
export class BackupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "BackupError";
  }
}

export interface BackupDeps {
  /** One line of progress, written as it happens. */
  progress(line: string): void;
  /** Milliseconds from any origin, for the elapsed time. */
  now(): number;
  /** Whether a process runs; the relay.pid lock's own test by default. */
  alive?: (pid: number) => boolean;
}

/** What a tab-relay database holds, as backup and restore report it. */
export interface DatabaseSummary {
  /** The migrations applied, in order. */
  migrations: string[];
  /** This relay's migrations the database lacks; `tab-relay migrate` (or `serve`) applies them. */
  pending: string[];
  workspaces: string[];
  bytes: number;
}

/**
 * SQLite restarts an online backup from its first page whenever another connection writes to the source between
 * two steps (sqlite.org/backup.html; backup.c's sqlite3BackupRestart, called when the pager finds the database
 * changed). Under a serving relay's steady writes a backup in small steps might never end, so once a step shows
 * no progress the rest is copied in one step: one read transaction, which in WAL mode never blocks the relay's
 * writers. better-sqlite3 takes the callback's number as the next step's page count (lib/methods/backup.js).
 */
const ONE_PASS = 0x7fffffff;
/** Steps are a tenth of the database (about ten progress lines), and at least this many pages. */
const MIN_STEP_PAGES = 256;

async function copyDatabase(
  source: SqliteDatabase.Database,
  target: string,
  progress: (line: string) => void,
): Promise<number> {
  let last = Number.POSITIVE_INFINITY;
  let step = MIN_STEP_PAGES;
  const result = await source.backup(target, {
    progress({ totalPages, remainingPages }) {
      if (last === Number.POSITIVE_INFINITY) {
        step = Math.max(MIN_STEP_PAGES, Math.ceil(totalPages / 10));
      } else if (remainingPages >= last) {
        progress("  the database changed meanwhile (the relay wrote); copying the rest in one pass");
        last = remainingPages;
        return ONE_PASS;
      } else {
        progress(
          `  copied ${totalPages - remainingPages} of ${totalPages} pages (${Math.floor(((totalPages - remainingPages) / totalPages) * 100)}%)`,
        );
      }
      last = remainingPages;
      return step;
    },
  });
  progress(`  copied ${result.totalPages} of ${result.totalPages} pages (100%)`);
  return result.totalPages;
}

/** Creates `path` 0600, failing if it exists (O_EXCL), so no moment passes with looser modes. */
function createPrivateFile(path: string): void {
  closeSync(openSync(path, "wx", 0o600));
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const INTEGRITY_PROBLEMS_SHOWN = 3;

async function knownMigrations(): Promise<string[]> {
  return Object.keys(await migrationProvider.getMigrations()).sort();
}

/**
 * Reads what a database holds, failing with `flag`'s name when it is damaged or not a tab-relay database, or when
 * a newer relay made it (a migration this relay does not know: its schema may hold what this one cannot serve).
 */
export async function inspectDatabase(
  db: SqliteDatabase.Database,
  path: string,
  flag: string,
): Promise<DatabaseSummary> {
  let problems: string[];
  try {
    // At most a few problems, each on one line of its own (a row may hold several, and a header naming the schema).
    problems = (db.pragma(`integrity_check(${INTEGRITY_PROBLEMS_SHOWN})`) as { integrity_check: string }[])
      .flatMap((row) => row.integrity_check.split("\n"))
      .filter((line) => line !== "ok" && !/^\*\*\* in database \w+ \*\*\*$/.test(line));
  } catch (error) {
    throw new BackupError(`${flag}: ${path} is not a SQLite database (${errorText(error)})`, { cause: error });
  }
  if (problems.length > 0)
    throw new BackupError(
      `${flag}: ${path} is damaged (integrity_check: ${problems.slice(0, INTEGRITY_PROBLEMS_SHOWN).join("; ")})`,
    );
  const hasTable = (name: string) =>
    db.prepare("select 1 from sqlite_master where type = 'table' and name = ?").get(name) !== undefined;
  if (!hasTable("kysely_migration") || !hasTable("workspaces"))
    throw new BackupError(
      `${flag}: ${path} is a SQLite database, but not tab-relay's (it has no migrations table or no workspaces)`,
    );
  const migrations = (db.prepare("select name from kysely_migration order by name").all() as { name: string }[]).map(
    (row) => row.name,
  );
  const known = await knownMigrations();
  const unknown = migrations.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new BackupError(
      `${flag}: ${path} was made by a newer tab-relay (its migration ${unknown.join(", ")} is unknown to this one); use that version or newer`,
    );
  }
  const workspaces = (db.prepare("select slug from workspaces order by slug").all() as { slug: string }[]).map(
    (row) => row.slug,
  );
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  const pages = db.pragma("page_count", { simple: true }) as number;
  return {
    migrations,
    pending: known.filter((name) => !migrations.includes(name)),
    workspaces,
    bytes: pageSize * pages,
  };
}

export function describeSummary(summary: DatabaseSummary): string {
  const workspaces =
    summary.workspaces.length === 0
      ? "no workspace"
      : `workspace${summary.workspaces.length === 1 ? "" : "s"} ${summary.workspaces.join(", ")}`;
  const schema = summary.migrations.length === 0 ? "no migration" : `migrations up to ${summary.migrations.at(-1)}`;
  return `${workspaces}; ${schema}; ${formatBytes(summary.bytes)}`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

function realOrResolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * What of the relay's own a backup target would overwrite, if anything: the database and its journal files, the lock
 * file a serving relay holds (replacing it let a second relay start on the same folder), and the models and engine
 * folders. Checked by path, whether or not the file exists yet, and through symbolic links. Other files in the data
 * folder are the operator's to name.
 */
function relayOwned(database: string, to: string): string | undefined {
  const dataDir = realOrResolved(dirname(database));
  const inside = relative(dataDir, join(realOrResolved(dirname(to)), basename(to)));
  if (inside === "" || inside.startsWith("..") || isAbsolute(inside)) return undefined;
  if (["", "-wal", "-shm", "-journal"].some((suffix) => inside === `${basename(database)}${suffix}`))
    return "the live database or one of its files";
  if (inside === LOCK_FILE) return `the lock file (${LOCK_FILE}) of the relay serving ${dataDir}`;
  const [folder] = inside.split(sep);
  if (inside !== folder && (folder === MODELS_FOLDER || folder === "engine"))
    return `inside the relay's own ${folder} folder`;
  return undefined;
}

export interface BackupOptions {
  /** The data folder's database file. */
  database: string;
  to: string;
  /** Replace an existing file at `to`. */
  force: boolean;
}

export interface BackupResult {
  path: string;
  summary: DatabaseSummary;
  ms: number;
}

/**
 * `tab-relay backup`: a consistent copy of the database while a relay may be serving it, through SQLite's online
 * backup API from a read-only connection. The copy is made beside `to` under a temporary name created 0600, checked
 * (integrity_check, the migrations table), switched to rollback-journal mode so it is one self-contained file, and
 * only then given its name: a failed or interrupted backup leaves no file under `to` that looks complete.
 */
export async function backupDatabase(options: BackupOptions, deps: BackupDeps): Promise<BackupResult> {
  const started = deps.now();
  const database = resolve(options.database);
  const to = resolve(options.to);
  if (!existsSync(database))
    throw new BackupError(
      `--data: no database at ${database}: is this the data folder \`tab-relay serve --data\` uses?`,
    );
  if (!existsSync(dirname(to))) throw new BackupError(`--to: the folder ${dirname(to)} does not exist`);
  const owned = relayOwned(database, to);
  if (owned !== undefined) throw new BackupError(`--to: ${to} is ${owned}; write the backup to a file of its own`);
  if (existsSync(to)) {
    if (statSync(to).isDirectory())
      throw new BackupError(`--to: ${to} is a folder; name the file to write, e.g. ${join(to, "relay-backup.db")}`);
    // A link to the live database, by another name, is the live database too.
    if (["", "-wal", "-shm", "-journal"].some((suffix) => sameFile(to, `${database}${suffix}`)))
      throw new BackupError(
        `--to: ${to} is the live database or one of its files; write the backup to a file of its own`,
      );
    if (!options.force) throw new BackupError(`--to: ${to} exists; pass --force to replace it`);
  }
  const partial = join(dirname(to), `.${basename(to)}.${process.pid}.partial`);
  let source: SqliteDatabase.Database;
  try {
    source = new SqliteDatabase(database, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new BackupError(`--data: cannot open ${database} (${errorText(error)})`, { cause: error });
  }
  try {
    await inspectDatabase(source, database, "--data");
    createPrivateFile(partial);
    const pageSize = source.pragma("page_size", { simple: true }) as number;
    deps.progress(
      `Backing up ${database} (${formatBytes(pageSize * (source.pragma("page_count", { simple: true }) as number))}) to ${to}`,
    );
    try {
      await copyDatabase(source, partial, (line) => deps.progress(line));
    } catch (error) {
      throw new BackupError(`--to: the copy to ${to} failed (${errorText(error)})`, { cause: error });
    }
    const copy = new SqliteDatabase(partial, { fileMustExist: true });
    let summary: DatabaseSummary;
    try {
      // The copy keeps the live database's WAL mode in its header; a backup should be one file that reads anywhere.
      copy.pragma("journal_mode = DELETE");
      summary = await inspectDatabase(copy, to, "--to");
    } finally {
      copy.close();
    }
    if (options.force) {
      renameSync(partial, to);
    } else {
      // A link fails if the name was taken meanwhile, where a rename would silently replace it.
      try {
        linkSync(partial, to);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST")
          throw new BackupError(`--to: ${to} exists; pass --force to replace it`, { cause: error });
        throw error;
      }
      unlinkSync(partial);
    }
    return { path: to, summary, ms: Math.round(deps.now() - started) };
  } finally {
    source.close();
    removeQuietly(partial);
    removeQuietly(`${partial}-journal`);
  }
}

export interface RestoreOptions {
  from: string;
  dataDir: string;
  /** The database file's name in the data folder. */
  databaseFile: string;
  /** Replace a database the folder already holds. */
  force: boolean;
}

export interface RestoreResult {
  path: string;
  summary: DatabaseSummary;
  /** Files of the replaced database removed (its -wal, -shm, -journal). */
  removed: string[];
}

/**
 * `tab-relay restore`: puts a backup in place as a data folder's database. Refuses a file that is damaged or not a
 * tab-relay database, and a folder a relay is serving (its relay.pid names a running process); holds that lock
 * itself meanwhile, so no relay starts on a half-restored folder. The folder is created 0700 and the database
 * 0600. The replaced database's -wal and -shm go before the new file takes its name: SQLite would otherwise play
 * the old database's write-ahead log into the restored one.
 */
export async function restoreDatabase(options: RestoreOptions, deps: BackupDeps): Promise<RestoreResult> {
  const from = resolve(options.from);
  const dataDir = resolve(options.dataDir);
  const target = join(dataDir, options.databaseFile);
  if (!existsSync(from)) throw new BackupError(`--from: no file at ${from}`);
  if (statSync(from).isDirectory()) throw new BackupError(`--from: ${from} is a folder; name the backup file`);
  if (sameFile(from, target)) throw new BackupError(`--from: ${from} is the database of --data ${dataDir} itself`);
  const alive = deps.alive ?? processAlive;
  const refusal = () => {
    const holder = servingProcess(dataDir, alive);
    if (holder !== undefined)
      return new BackupError(
        `--data: a relay (process ${holder}) is serving ${dataDir}; stop it before restoring into this folder`,
      );
    if (existsSync(target) && !options.force)
      return new BackupError(
        `--data: ${dataDir} already holds a database (${options.databaseFile}); pass --force to replace it`,
      );
    return undefined;
  };
  // Told before the backup is read (which takes a while for a large one), and again under the lock.
  const early = refusal();
  if (early) throw early;
  let source: SqliteDatabase.Database;
  try {
    source = new SqliteDatabase(from, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new BackupError(`--from: cannot open ${from} (${errorText(error)})`, { cause: error });
  }
  try {
    const summary = await inspectDatabase(source, from, "--from");
    deps.progress(`Checked ${from}: integrity ok; ${describeSummary(summary)}`);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    let release: () => void;
    try {
      release = lockDataFolder(dataDir, process.pid, alive);
    } catch (error) {
      throw new BackupError(`--data: ${errorText(error)}`, { cause: error });
    }
    try {
      const late = refusal();
      if (late) throw late;
      const restoring = join(dataDir, `.${options.databaseFile}.restoring`);
      // A restore interrupted earlier left this; the lock says no one else is using it.
      removeQuietly(restoring);
      removeQuietly(`${restoring}-journal`);
      createPrivateFile(restoring);
      deps.progress(`Restoring into ${target}`);
      try {
        await copyDatabase(source, restoring, (line) => deps.progress(line));
      } catch (error) {
        removeQuietly(restoring);
        throw new BackupError(`--data: the copy into ${dataDir} failed (${errorText(error)})`, { cause: error });
      }
      const removed: string[] = [];
      for (const suffix of ["-wal", "-shm", "-journal"]) {
        const stale = `${target}${suffix}`;
        if (existsSync(stale)) {
          unlinkSync(stale);
          removed.push(stale);
        }
      }
      renameSync(restoring, target);
      return { path: target, summary, removed };
    } finally {
      release();
    }
  } finally {
    source.close();
  }
}

/** The running process that relay.pid names, if any. */
function servingProcess(dataDir: string, alive: (pid: number) => boolean): number | undefined {
  let text: string;
  try {
    text = readFileSync(join(dataDir, LOCK_FILE), "utf8");
  } catch {
    return undefined;
  }
  const pid = Number.parseInt(text, 10);
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) ? pid : undefined;
}
