import { existsSync } from "node:fs";
import { isUnavailable } from "../../store/postgres";
import type { DoctorCheck } from "../checks";
import type { DatabaseProbe } from "./probes";
import { type Finding, errorText, operatorResult } from "./result";

export interface DatabaseCheckOptions {
  /** The database file, or the URL without its password. */
  where: string;
  /** The flag that names the database, for the commands in the advice: `--data DIR` or `--database URL`. */
  flag: string;
  /** This relay's migrations, in order. */
  known: readonly string[];
  open(): Promise<DatabaseProbe>;
}

/**
 * The database: it answers, holds tab-relay's schema with every migration this relay knows (none it does not: a
 * newer relay's database may hold what this one cannot serve) and at least one workspace.
 */
export function databaseCheck(options: DatabaseCheckOptions): DoctorCheck {
  const name = "database";
  const label = "Database";
  const { flag, known } = options;
  return {
    name,
    async run() {
      let probe: DatabaseProbe;
      try {
        probe = await options.open();
      } catch (error) {
        return operatorResult(name, label, openFailure(error, options));
      }
      const engine = probe.engine === "postgres" ? "PostgreSQL" : "SQLite";
      let migrations: string[] | undefined;
      let workspaces: string[] | undefined;
      try {
        [migrations, workspaces] = [await probe.migrations(), await probe.workspaces()];
      } catch (error) {
        return operatorResult(name, label, {
          status: isUnavailable(error) ? "unreachable" : "failed",
          summary: `${engine} ${probe.where}: ${errorText(error)}`,
        });
      }
      const details = {
        engine: probe.engine,
        where: probe.where,
        migrations: migrations ?? null,
        pending: [] as string[],
        workspaces: workspaces ?? null,
      };
      if (migrations === undefined || workspaces === undefined) {
        return operatorResult(name, label, {
          status: "failed",
          summary: `${engine} ${probe.where} answers, but holds no tab-relay schema`,
          todo: [
            `run \`tab-relay migrate ${flag}\`, then \`tab-relay init ${flag} --workspace SLUG --owner NAME\`; or point ${flag.split(" ")[0]} at the relay's database`,
          ],
          details,
        });
      }
      const unknown = migrations.filter((migration) => !known.includes(migration));
      const pending = known.filter((migration) => !migrations.includes(migration));
      details.pending = pending;
      const where = `${engine} ${probe.where}: ${workspaces.length === 1 ? "1 workspace" : `${workspaces.length} workspaces`}, ${migrations.length} of ${known.length} migrations applied`;
      if (unknown.length > 0) {
        return operatorResult(name, label, {
          status: "failed",
          summary: `${engine} ${probe.where} was migrated by a newer tab-relay (${unknown.join(", ")})`,
          todo: [
            "run the tab-relay version that migrated it, or newer; this one may not understand what that one stores",
          ],
          details,
        });
      }
      if (workspaces.length === 0) {
        return operatorResult(name, label, {
          status: "failed",
          summary: where,
          todo: [
            `run \`tab-relay init ${flag} --workspace SLUG --owner NAME\`: serve refuses a database without a workspace`,
          ],
          details,
        });
      }
      if (pending.length > 0) {
        return operatorResult(name, label, {
          status: "warn",
          summary: where,
          todo: [
            `run \`tab-relay migrate ${flag}\` to apply ${pending.join(", ")} (serve applies them at start too; with several relays, migrate once before starting the new ones)`,
          ],
          details,
        });
      }
      return operatorResult(name, label, { status: "ok", summary: `${where} (up to date)`, details });
    },
  };
}

function openFailure(error: unknown, options: DatabaseCheckOptions): Finding {
  const { where, flag } = options;
  const details = { where };
  if (flag.startsWith("--database")) {
    const unreachable = isUnavailable(error);
    return {
      status: unreachable ? "unreachable" : "failed",
      summary: `PostgreSQL ${where}: ${unreachable ? "no answer" : "refused"}: ${errorText(error)}`,
      todo: [
        unreachable
          ? "start PostgreSQL, or correct the host and port in TAB_RELAY_DATABASE_URL"
          : "check the user, password and database name in TAB_RELAY_DATABASE_URL",
      ],
      details,
    };
  }
  // better-sqlite3 says so with SQLITE_CANTOPEN, or a TypeError when the folder is missing too.
  if (!existsSync(where))
    return {
      status: "failed",
      summary: `no database at ${where}`,
      todo: [
        `run \`tab-relay init ${flag} --workspace SLUG --owner NAME\`, or restore a backup (\`tab-relay restore --from FILE ${flag}\`)`,
      ],
      details,
    };
  return {
    status: "failed",
    summary: `SQLite ${where}: ${errorText(error)}`,
    todo: [
      `restore the database from a backup: \`tab-relay restore --from FILE ${flag} --force\` with the relay stopped`,
    ],
    details,
  };
}
