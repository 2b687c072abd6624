import { RelayError } from "@tab-relay/shared";
import {
  Kysely,
  type MigrationResult,
  Migrator,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  sql,
} from "kysely";
import type pg from "pg";
import { lazyRequire } from "../lazyRequire";
import type { Logger } from "../logger";
import { createKyselyStore } from "./kysely";
import { migrationProviderFor } from "./migrations";
import type { Database } from "./schema";
import type { Store } from "./types";

const loadPg = lazyRequire<typeof pg>("pg");

/**
 * Serialises migrations across every relay on the database. Kysely's migrator creates its bookkeeping tables before
 * taking its own lock (and its lock gives up after an hour), so relays starting together queue on this one for the
 * whole run instead: the first applies the migrations, the others then find nothing to do. The value ("tab_re" in
 * ASCII) only has to be the same in every relay.
 */
const MIGRATION_LOCK_KEY = 0x7461625f7265;

const DEFAULT_POOL_SIZE = 10;
/** How long a new connection may take; a server that neither accepts nor refuses (a dead host) costs no more. */
const CONNECT_TIMEOUT_MS = 5_000;
/** What a caller is told to wait while the database is unreachable: about what a restart takes. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * SQLSTATEs that say the server cannot serve now, not that the query is wrong (PostgreSQL, Appendix A):
 * 57P01 admin_shutdown (a fast shutdown or restart terminating sessions, or pg_terminate_backend), 57P02
 * crash_shutdown, 57P03 cannot_connect_now (starting up, shutting down, in recovery), 53300 too_many_connections.
 * Class 08 (connection exception) is matched by its prefix.
 */
const UNAVAILABLE_STATES: ReadonlySet<string> = new Set(["57P01", "57P02", "57P03", "53300"]);
/** Socket errors on the way to the server (Node's `code`). */
const UNAVAILABLE_SOCKET_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "EAI_AGAIN",
  "ENOTFOUND",
]);
/**
 * pg raises these as plain Errors, without a code: node_modules/pg/lib/client.js ("Connection terminated
 * unexpectedly" when the socket ends, "... is not queryable" for a query on a broken or ended client, "timeout
 * expired" for connectionTimeoutMillis) and node_modules/pg-pool/index.js (the pool's own connection timeouts).
 */
const UNAVAILABLE_MESSAGES: ReadonlySet<string> = new Set([
  "Connection terminated unexpectedly",
  "Connection terminated",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
  "timeout expired",
  "Connection terminated due to connection timeout",
  "timeout exceeded when trying to connect",
]);

/**
 * Whether `error` means PostgreSQL cannot be reached or is restarting (worth retrying shortly) rather than a bug or
 * a bad query. The one place this is decided: the store turns such errors into 503 SERVICE_UNAVAILABLE.
 */
export function isUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (
      typeof code === "string" &&
      (UNAVAILABLE_STATES.has(code) || code.startsWith("08") || UNAVAILABLE_SOCKET_CODES.has(code))
    )
      return true;
    if (UNAVAILABLE_MESSAGES.has(current.message)) return true;
    // Node reports a failed connection to a name with several addresses as one AggregateError of the attempts.
    if (current instanceof AggregateError && current.errors.some(isUnavailable)) return true;
    current = current.cause;
  }
  return false;
}

function translated(error: unknown): unknown {
  if (!isUnavailable(error)) return error;
  return new RelayError("SERVICE_UNAVAILABLE", "The database is not answering; retry shortly", {
    cause: error,
    headers: { "Retry-After": String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
  });
}

/**
 * The pool as Kysely sees it, with every failure that means "the database is unreachable" turned into a 503
 * SERVICE_UNAVAILABLE (with Retry-After) on its way out: the one error middleware renders a RelayError as it is, so
 * every route and the completion lane answer it without knowing about PostgreSQL, and the delivery worker can tell
 * an outage (worth retrying) from a failed query.
 */
function unavailableAs503(pool: pg.Pool): PostgresPool {
  return {
    async connect() {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw translated(error);
      }
      const query = (text: string, values: readonly unknown[]) =>
        client.query(text, values as unknown[]).catch((error: unknown) => {
          throw translated(error);
        });
      // Kysely passes a cursor only to stream queries, which the store never makes.
      return { query, release: () => client.release() } as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}

export interface PostgresStoreOptions {
  /** Connections this relay keeps open at most. */
  poolSize?: number;
  /** Told when an idle pooled connection breaks (the server restarted, say); the pool replaces it by itself. */
  logger?: Logger;
}

/** Connects to the PostgreSQL database at `url` and applies pending migrations, safely when several relays start at once. */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const pool = createPool(url, options.poolSize ?? DEFAULT_POOL_SIZE, options.logger);
  // Migrations see pg's own errors, so a relay that cannot start says why (the host, the refusal) to its operator.
  try {
    await migrate(new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }));
  } catch (error) {
    await pool.end();
    throw error;
  }
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: unavailableAs503(pool) }) });
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

function createPool(url: string, poolSize: number, logger?: Logger): pg.Pool {
  const pool = new (loadPg().Pool)({
    connectionString: url,
    max: poolSize,
    application_name: "tab-relay",
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // Without a listener, a broken idle connection would be an uncaught 'error' event and end the process.
  pool.on("error", (error) => logger?.warn("database connection lost", { error }));
  // pg-pool listens for errors only while a connection is idle (node_modules/pg-pool/index.js, _acquireClient removes
  // its listener). One broken while checked out but between queries (a transaction awaiting, a restart's 57P01 on a
  // connection just handed out) would emit 'error' with no listener and end the process. The next query on it fails
  // instead (pg marks it not queryable), and the pool drops it when it is released.
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

function connect(url: string, poolSize: number, logger?: Logger): Kysely<Database> {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: createPool(url, poolSize, logger) }) });
}

async function migrate(db: Kysely<Database>): Promise<MigrationResult[]> {
  // A session-level lock lives on one connection, so the migrator runs on that same connection while holding it.
  return db.connection().execute(async (connection) => {
    await sql`select pg_advisory_lock(${sql.lit(MIGRATION_LOCK_KEY)})`.execute(connection);
    try {
      const { error, results } = await new Migrator({
        db: connection,
        provider: migrationProviderFor("postgres"),
      }).migrateToLatest();
      if (error) throw error instanceof Error ? error : new Error("the migrations failed", { cause: error });
      return results ?? [];
    } finally {
      await sql`select pg_advisory_unlock(${sql.lit(MIGRATION_LOCK_KEY)})`.execute(connection);
    }
  });
}
