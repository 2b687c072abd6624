import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";

export const LOCK_FILE = "relay.pid";

/**
 * The state letter of a `/proc/PID/stat` line (proc(5): `pid (comm) state ppid ...`). The command name may hold
 * spaces and parentheses of its own (a process can name itself `x) Z (y`), so the state is read after the last `)`.
 */
export function stateFromStat(stat: string): string | undefined {
  const end = stat.lastIndexOf(")");
  if (end === -1) return undefined;
  return /^ (\S)/.exec(stat.slice(end + 1))?.[1];
}

/** `/proc/PID/stat`, or undefined where there is no /proc (macOS) or the process is gone. */
function readStat(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Whether a process with this id is running (a process of another user counts). A zombie (state `Z`, or `X` as it
 * is being reaped) has exited and only waits for its parent to collect its status: signal 0 still finds its id,
 * but it runs nothing and holds nothing, so it counts as gone.
 */
export function processAlive(pid: number, stat: (pid: number) => string | undefined = readStat): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const line = stat(pid);
  const state = line === undefined ? undefined : stateFromStat(line);
  return state !== "Z" && state !== "X";
}

/**
 * Holds a SQLite data folder for one serving relay. A relay alone on its database relies on being alone: it
 * releases claims left behind at start and remembers key owners between its own writes, so a second relay on the
 * same folder would break both. The folder holds the serving relay's process id; a file naming a process that no
 * longer runs (a crash, SIGKILL) is taken over. Returns the release.
 */
export function lockDataFolder(
  dataDir: string,
  pid: number,
  alive: (pid: number) => boolean = processAlive,
): () => void {
  const path = join(dataDir, LOCK_FILE);
  for (let tries = 0; tries < 3; tries++) {
    try {
      const fd = openSync(path, "wx");
      try {
        writeSync(fd, `${pid}\n`);
      } finally {
        closeSync(fd);
      }
      return () => {
        try {
          if (readFileSync(path, "utf8").trim() === String(pid)) unlinkSync(path);
        } catch {
          // Already gone: nothing to release.
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    let holder: number;
    try {
      holder = Number.parseInt(readFileSync(path, "utf8"), 10);
    } catch {
      continue;
    }
    if (Number.isInteger(holder) && holder > 0 && holder !== pid && alive(holder)) {
      throw new Error(
        `Another tab-relay (process ${holder}) is serving ${dataDir}; a data folder serves one relay (several relays share PostgreSQL: --database)`,
      );
    }
    try {
      unlinkSync(path);
    } catch {
      // Another starting relay removed it first; the next try decides between us.
    }
  }
  throw new Error(`Could not take ${path}; is another tab-relay starting on ${dataDir}?`);
}

/** Any permission for group or others. */
const SHARED_BITS = 0o077;

/** A path as a shell word, quoted only when it must be. */
function shellWord(path: string): string {
  return /^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}

/**
 * The data folder and the database files hold the agents' signing secrets. The relay creates them private (0700,
 * 0600) but leaves the modes of existing ones alone: an operator may share a folder on purpose (a backup group),
 * and changing it behind their back would surprise them. Each one that group or others can use gets a warning
 * with the chmod that closes it. Windows has no such modes.
 */
export function looseModeWarnings(dataDir: string, databaseFile: string): string[] {
  return modeFindings(
    dataDir,
    databaseFile,
    SHARED_BITS,
    (what, path, bits) =>
      `${what} ${path} holds the agents' signing secrets but other users have access (mode ${bits})`,
  );
}

/**
 * Beyond shared: a data folder or database file that anyone on the machine may write. Then anyone may swap the
 * database (or its journal) for one holding their own keys, so this is an error, not a preference: `doctor` fails
 * and `serve` refuses to start unless TAB_RELAY_ALLOW_INSECURE_DATA_FOLDER says the operator means it.
 */
export function worldWritableProblems(dataDir: string, databaseFile: string): string[] {
  return modeFindings(
    dataDir,
    databaseFile,
    0o002,
    (what, path, bits) =>
      `${what} ${path} is writable by every user on this machine (mode ${bits}), so anyone could replace the database`,
  );
}

/** The folder and database files whose mode has any of `bits`, each described with the chmod that closes it. */
function modeFindings(
  dataDir: string,
  databaseFile: string,
  bits: number,
  describe: (what: string, path: string, mode: string) => string,
): string[] {
  if (process.platform === "win32") return [];
  const findings: string[] = [];
  const check = (path: string, what: string, mode: string) => {
    let current: number;
    try {
      current = statSync(path).mode & 0o777;
    } catch {
      return;
    }
    if ((current & bits) === 0) return;
    findings.push(`${describe(what, path, current.toString(8))}; run: chmod ${mode} ${shellWord(path)}`);
  };
  const folder = resolve(dataDir);
  check(folder, "The data folder", "700");
  for (const suffix of ["", "-wal", "-shm"])
    check(join(folder, `${databaseFile}${suffix}`), "The database file", "600");
  return findings;
}
