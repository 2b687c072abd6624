import { Kysely, type MigrationResult, Migrator, PostgresDialect, sql } from "kysely";
import pg from "pg";
import type { Logger } from "../logger";
import { createKyselyStore } from "./kyselyStore";
import { migrationProviderFor } from "./migrations";
import type { Database } from "./schema";
import type { Store } from "./types";

/**
 * Serialises migrations across every relay on the database. Kysely's migrator creates its bookkeeping tables before
 * taking its own lock (and its lock gives up after an hour), so relays starting together queue on this one for the
 * whole run instead: the first applies the migrations, the others then find nothing to do. The value ("tab_re" in
 * ASCII) only has to be the same in every relay.
 */
const MIGRATION_LOCK_KEY = 0x7461625f7265;

const DEFAULT_POOL_SIZE = 10;

export interface PostgresStoreOptions {
  /** Connections this relay keeps open at most. */
  poolSize?: number;
  /** Told when an idle pooled connection breaks (the server restarted, say); the pool replaces it by itself. */
  logger?: Logger;
}

/** Connects to the PostgreSQL database at `url` and applies pending migrations, safely when several relays start at once. */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const db = connect(url, options.poolSize ?? DEFAULT_POOL_SIZE, options.logger);
  try {
    await migrate(db);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return createKyselyStore(db, async () => db.destroy(), { rowLocks: true }, false);
}

/** Applies pending migrations to the database at `url`; the names of those this call applied (none when up to date). */
export async function migratePostgres(url: string): Promise<string[]> {
  const db = connect(url, 1);
  try {
    const results = await migrate(db);
    return results.filter((result) => result.status === "Success").map((result) => result.migrationName);
  } finally {
    await db.destroy();
  }
}

function connect(url: string, poolSize: number, logger?: Logger): Kysely<Database> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, application_name: "tab-relay" });
  // Without a listener, a broken idle connection would be an uncaught 'error' event and end the process.
  pool.on("error", (error) => logger?.warn("database connection lost", { error }));
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

async function migrate(db: Kysely<Database>): Promise<MigrationResult[]> {
  // A session-level lock lives on one connection, so the migrator runs on that same connection while holding it.
  return db.connection().execute(async (connection) => {
    await sql`select pg_advisory_lock(${sql.lit(MIGRATION_LOCK_KEY)})`.execute(connection);
    try {
      const { error, results } = await new Migrator({ db: connection, provider: migrationProviderFor("postgres") }).migrateToLatest();
      if (error) throw error instanceof Error ? error : new Error(String(error));
      return results ?? [];
    } finally {
      await sql`select pg_advisory_unlock(${sql.lit(MIGRATION_LOCK_KEY)})`.execute(connection);
    }
  });
}
