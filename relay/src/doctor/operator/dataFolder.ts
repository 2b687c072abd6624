import { readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { LOCK_FILE, looseModeWarnings, processAlive, worldWritableProblems } from "../../dataFolder";
import type { DoctorCheck } from "../checks";
import { operatorResult } from "./result";

export interface DataFolderDeps {
  /** Whether a process runs (relay.pid's holder); the lock's own test by default. */
  alive?: (pid: number) => boolean;
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

/**
 * The SQLite data folder: it exists and holds the database, only its owner can read it (the agents' signing secrets
 * are in it; the same warnings `serve` logs; nobody else may write it, or it fails as `serve` refuses it), and whether a relay serves it now (relay.pid).
 */
export function dataFolderCheck(dataDir: string, databaseFile: string, deps: DataFolderDeps = {}): DoctorCheck {
  const name = "data folder";
  const label = "Data folder";
  return {
    name,
    async run() {
      const folder = resolve(dataDir);
      const database = join(folder, databaseFile);
      const init = `run \`tab-relay init --data ${folder} --workspace SLUG --owner NAME\`, or set --data (TAB_RELAY_DATA) to the folder \`serve\` uses`;
      let isFolder: boolean;
      try {
        isFolder = statSync(folder).isDirectory();
      } catch {
        return operatorResult(name, label, {
          status: "failed",
          summary: `no folder at ${folder}`,
          todo: [init],
          details: { path: folder },
        });
      }
      if (!isFolder)
        return operatorResult(name, label, {
          status: "failed",
          summary: `${folder} is not a folder`,
          todo: ["set --data (TAB_RELAY_DATA) to the data folder"],
          details: { path: folder },
        });
      let databaseMode: string;
      try {
        databaseMode = mode(database);
      } catch {
        return operatorResult(name, label, {
          status: "failed",
          summary: `${folder} holds no ${databaseFile}`,
          todo: [init],
          details: { path: folder },
        });
      }
      const served = servedBy(folder, deps.alive ?? processAlive);
      const details = { path: folder, mode: mode(folder), database_mode: databaseMode, served_by: served.pid ?? null };
      const summary = `${folder} (mode ${mode(folder)}), ${databaseFile} (mode ${databaseMode}); ${served.text}`;
      const warnings = looseModeWarnings(folder, databaseFile);
      // Doctor reads its own flags and environment; the serving relay was started with its own, which may differ.
      const notes =
        served.pid === undefined
          ? []
          : [
              `the checks below use doctor's own settings (its flags and environment); the relay serving this folder may run with others (port, public URL, TAB_RELAY_WEBHOOK_ALLOW_PRIVATE): give doctor the same ones`,
            ];
      // Anyone on the machine could swap the database: `serve` refuses it, so doctor fails it.
      const writable = worldWritableProblems(folder, databaseFile);
      if (writable.length > 0)
        return operatorResult(name, label, { status: "failed", summary, notes, todo: writable, details });
      if (warnings.length > 0)
        return operatorResult(name, label, { status: "warn", summary, notes, todo: warnings, details });
      return operatorResult(name, label, { status: "ok", summary, notes, details });
    },
  };
}

function servedBy(folder: string, alive: (pid: number) => boolean): { pid?: number; text: string } {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(join(folder, LOCK_FILE), "utf8"), 10);
  } catch {
    return { text: "no relay serves it now" };
  }
  if (!Number.isInteger(pid) || pid <= 0)
    return { text: `${LOCK_FILE} names no process; the next relay takes the folder over` };
  if (!alive(pid))
    return { text: `${LOCK_FILE} names process ${pid}, which no longer runs; the next relay takes the folder over` };
  return { pid, text: `served by process ${pid}` };
}
