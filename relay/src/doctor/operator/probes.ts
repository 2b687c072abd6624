import SqliteDatabase from "better-sqlite3";
import type { Redis } from "ioredis";
import type pg from "pg";
import { lazyRequire } from "../../lazyRequire";
import type { OperatorConfig } from "../../config";
import { withoutPassword } from "./result";

const loadPg = lazyRequire<typeof pg>("pg");
const loadRedis = lazyRequire<{ Redis: typeof Redis }>("ioredis");

/** How long a connection, and each query on it, may take: a database or Redis answers these at once. */
export const PROBE_TIMEOUT_MS = 5_000;

/** The relay's database, read-only, as the checks need it. */
export interface AgentWebhook {
  workspace: string;
  id: string;
  name: string;
  url: string;
}

const WEBHOOKS_SQL =
  "select w.slug as workspace, a.id, a.name, a.webhook_url as url from agents a join workspaces w on w.id = a.workspace_id where a.removed_at is null and a.webhook_url is not null order by a.created_at";

export interface DatabaseProbe {
  engine: "sqlite" | "postgres";
  /** The file, or the URL without its password. */
  where: string;
  /** The migrations applied, in name order; undefined when the database has no migrations table. */
  migrations(): Promise<string[] | undefined>;
  /** The workspaces' slugs; undefined when there is no workspaces table. */
  workspaces(): Promise<string[] | undefined>;
  /** The webhook URLs of agents not removed; undefined when there is no agents table. */
  webhooks(): Promise<AgentWebhook[] | undefined>;
  /** The database server's clock, in ms since the epoch (PostgreSQL only: SQLite has no server). */
  serverNow?(): Promise<number>;
  close(): Promise<void>;
}

export interface RedisProbe {
  /** Answers PING, or throws why not. */
  ping(): Promise<void>;
  /** The Redis server's clock (TIME), in ms since the epoch. */
  serverNow(): Promise<number>;
  close(): Promise<void>;
}

/** Opens the SQLite file read-only; it must exist (doctor never creates a database). */
export async function openSqliteProbe(path: string): Promise<DatabaseProbe> {
  const db = new SqliteDatabase(path, { readonly: true, fileMustExist: true, timeout: PROBE_TIMEOUT_MS });
  const hasTable = (name: string) =>
    db.prepare("select 1 from sqlite_master where type = 'table' and name = ?").get(name) !== undefined;
  try {
    // Opening reads nothing; this is where a file that is not a database says so.
    hasTable("kysely_migration");
  } catch (error) {
    db.close();
    throw error;
  }
  return {
    engine: "sqlite",
    where: path,
    async migrations() {
      if (!hasTable("kysely_migration")) return undefined;
      return (db.prepare("select name from kysely_migration order by name").all() as { name: string }[]).map(
        (row) => row.name,
      );
    },
    async workspaces() {
      if (!hasTable("workspaces")) return undefined;
      return (db.prepare("select slug from workspaces order by slug").all() as { slug: string }[]).map(
        (row) => row.slug,
      );
    },
    async webhooks() {
      if (!hasTable("agents")) return undefined;
      return db.prepare(WEBHOOKS_SQL).all() as AgentWebhook[];
    },
    async close() {
      db.close();
    },
  };
}

export async function openPostgresProbe(url: string): Promise<DatabaseProbe> {
  const client = new (loadPg().Client)({
    connectionString: url,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
    query_timeout: PROBE_TIMEOUT_MS,
    application_name: "tab-relay doctor",
  });
  // A connection that breaks between queries emits 'error'; the next query fails instead of the process.
  client.on("error", () => undefined);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  const hasTable = async (name: string) =>
    (await client.query<{ present: boolean }>("select to_regclass($1) is not null as present", [`public.${name}`]))
      .rows[0]?.present === true;
  return {
    engine: "postgres",
    where: withoutPassword(url),
    async migrations() {
      if (!(await hasTable("kysely_migration"))) return undefined;
      return (await client.query<{ name: string }>("select name from public.kysely_migration order by name")).rows.map(
        (row) => row.name,
      );
    },
    async workspaces() {
      if (!(await hasTable("workspaces"))) return undefined;
      return (await client.query<{ slug: string }>("select slug from public.workspaces order by slug")).rows.map(
        (row) => row.slug,
      );
    },
    async webhooks() {
      if (!(await hasTable("agents"))) return undefined;
      return (await client.query<AgentWebhook>(WEBHOOKS_SQL)).rows;
    },
    async serverNow() {
      // clock_timestamp(), not now(): now() is when the transaction began.
      return (
        (await client.query<{ ms: number }>("select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms"))
          .rows[0]?.ms ?? Number.NaN
      );
    },
    async close() {
      await client.end().catch(() => undefined);
    },
  };
}

export async function openRedisProbe(url: string): Promise<RedisProbe> {
  const client = new (loadRedis().Redis)(url, {
    lazyConnect: true,
    connectTimeout: PROBE_TIMEOUT_MS,
    commandTimeout: PROBE_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    // One try: doctor reports what it found rather than waiting for Redis to come back.
    retryStrategy: () => null,
  });
  let lastError: unknown;
  client.on("error", (error) => (lastError = error));
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    throw lastError ?? error;
  }
  return {
    async ping() {
      await client.ping();
    },
    async serverNow() {
      const [seconds = "", micros = ""] = await client.time();
      return Number(seconds) * 1000 + Number(micros) / 1000;
    },
    async close() {
      client.disconnect();
    },
  };
}

/**
 * The connections the checks share, each opened once on first use (a failure is remembered too, so a database that
 * does not answer costs one timeout, not one per check) and closed at the end.
 */
export interface Probes {
  database(): Promise<DatabaseProbe>;
  redis(): Promise<RedisProbe>;
  close(): Promise<void>;
}

export interface ProbeOpeners {
  sqlite(path: string): Promise<DatabaseProbe>;
  postgres(url: string): Promise<DatabaseProbe>;
  redis(url: string): Promise<RedisProbe>;
}

export const realOpeners: ProbeOpeners = {
  sqlite: openSqliteProbe,
  postgres: openPostgresProbe,
  redis: openRedisProbe,
};

export function createProbes(
  config: Pick<OperatorConfig, "databaseUrl" | "redisUrl">,
  databaseFile: string | undefined,
  openers: ProbeOpeners = realOpeners,
): Probes {
  let database: Promise<DatabaseProbe> | undefined;
  let redis: Promise<RedisProbe> | undefined;
  const settled = async <T>(probe: Promise<T> | undefined) =>
    probe?.then(
      (value) => value,
      () => undefined,
    );
  return {
    database() {
      database ??= config.databaseUrl
        ? openers.postgres(config.databaseUrl)
        : databaseFile
          ? openers.sqlite(databaseFile)
          : Promise.reject(new Error("no database configured"));
      return database;
    },
    redis() {
      redis ??= config.redisUrl ? openers.redis(config.redisUrl) : Promise.reject(new Error("no Redis configured"));
      return redis;
    },
    async close() {
      await Promise.all([(await settled(database))?.close(), (await settled(redis))?.close()]);
    },
  };
}
