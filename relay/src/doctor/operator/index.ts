import { resolve } from "node:path";
import type { WallClock } from "../../clock";
import type { OperatorConfig } from "../../config";
import { migrationProviderFor } from "../../store/migrations";
import type { DoctorCheck } from "../checks";
import { type ReferenceClock, clockCheck } from "./clock";
import { databaseCheck } from "./database";
import { dataFolderCheck } from "./dataFolder";
import { type ProbeOpeners, createProbes, realOpeners } from "./probes";
import { publicUrlCheck } from "./publicUrl";
import { redisCheck } from "./redis";
import { withoutPassword } from "./result";
import { webhookGuardCheck } from "./webhookGuard";

export interface OperatorDeps {
  /** The wall clock: compared with the servers' clocks, and times Redis's answer. */
  clock: WallClock;
  /** The database file's name in the data folder. */
  databaseFile: string;
  openers?: ProbeOpeners;
  /** Whether a process runs, for relay.pid. */
  alive?: (pid: number) => boolean;
}

export interface OperatorChecks {
  checks: DoctorCheck[];
  /** Secrets the report must not show (the passwords in the database and Redis URLs). */
  secrets: string[];
  /** Closes the connections the checks opened. */
  close(): Promise<void>;
}

function passwordOf(url: string | undefined): string[] {
  if (url === undefined) return [];
  try {
    const parsed = new URL(url);
    return [decodeURIComponent(parsed.password), parsed.password, parsed.searchParams.get("password") ?? ""].filter(
      (secret) => secret !== "",
    );
  } catch {
    return [];
  }
}

/**
 * The checks of a deployment, in the order an operator fixes things: the data folder (SQLite), the database, Redis
 * (when configured), the public URL against the listening address, the clock against the database's and Redis's,
 * and the webhook guard. They share one connection to the database and one to Redis.
 */
export async function operatorChecks(config: Readonly<OperatorConfig>, deps: OperatorDeps): Promise<OperatorChecks> {
  const databaseFile = config.dataDir === undefined ? undefined : resolve(config.dataDir, deps.databaseFile);
  const probes = createProbes(config, databaseFile, deps.openers ?? realOpeners);
  const engine = config.databaseUrl ? "postgres" : "sqlite";
  const known = Object.keys(await migrationProviderFor(engine).getMigrations()).sort();
  const flag = config.databaseUrl ? "--database URL" : `--data ${config.dataDir ?? "DIR"}`;
  const references: ReferenceClock[] = [];
  if (config.databaseUrl) {
    references.push({
      name: "PostgreSQL",
      async now() {
        const probe = await probes.database();
        if (!probe.serverNow) throw new Error("no server clock");
        return probe.serverNow();
      },
    });
  }
  if (config.redisUrl) references.push({ name: "Redis", now: async () => (await probes.redis()).serverNow() });
  const checks: DoctorCheck[] = [
    ...(config.dataDir === undefined
      ? []
      : [dataFolderCheck(config.dataDir, deps.databaseFile, deps.alive ? { alive: deps.alive } : {})]),
    databaseCheck({
      where: config.databaseUrl ? withoutPassword(config.databaseUrl) : (databaseFile ?? ""),
      flag,
      known,
      open: () => probes.database(),
    }),
    ...(config.redisUrl === undefined ? [] : [redisCheck(config.redisUrl, () => probes.redis(), deps.clock)]),
    publicUrlCheck(config),
    clockCheck(references, deps.clock),
    webhookGuardCheck(config, async () => (await probes.database()).webhooks()),
  ];
  return {
    checks,
    secrets: [...new Set([...passwordOf(config.databaseUrl), ...passwordOf(config.redisUrl)])],
    close: () => probes.close(),
  };
}
