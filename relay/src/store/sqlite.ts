import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import SqliteDatabase from "better-sqlite3";
import { Kysely, Migrator, SqliteDialect } from "kysely";
import { type OwnerRow, createKyselyStore, ownerByHashQuery } from "./kyselyStore";
import { migrationProvider } from "./migrations";
import type { Database } from "./schema";
import type { Store } from "./types";

export { createKyselyStore } from "./kyselyStore";

/** Opens (creating if needed) the SQLite database at `path` in WAL mode and applies pending migrations. */
export async function openSqliteStore(path: string): Promise<Store> {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const sqlite = new SqliteDatabase(path);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  const { error } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
  if (error) {
    await db.destroy();
    throw error instanceof Error ? error : new Error(String(error));
  }
  // Every API request looks its key up: compiling the query and preparing the statement once, rather than per
  // request as Kysely would, takes that lookup from about 60 µs to a few.
  const compiled = ownerByHashQuery(db, "").compile();
  const ownerStatement = sqlite.prepare<[string], OwnerRow>(compiled.sql);
  return createKyselyStore(db, async () => db.destroy(), { ownerRowByHash: (hash) => ownerStatement.get(hash) });
}

/** Prepared statements kept per SQL text; enough for every query the relay makes, with room for `in (...)` variants. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely's SQLite driver prepares every statement afresh, which costs more than running most of them. The same
 * few dozen SQL texts repeat forever, so each is prepared once. better-sqlite3 runs one statement at a time on
 * the connection, and Kysely never iterates, so sharing a prepared statement is safe.
 */
function withStatementCache(sqlite: SqliteDatabase.Database) {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = cache.get(sql);
      if (statement === undefined) {
        statement = sqlite.prepare(sql);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
        cache.set(sql, statement);
      }
      return statement;
    },
  };
}
