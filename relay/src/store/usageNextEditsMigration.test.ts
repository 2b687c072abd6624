import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import SqliteDatabase from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from "kysely";
import pg from "pg";
import { POSTGRES_HOST, dropDatabases, postgresProblem, withAdmin } from "../../../test/support/scaleOutServices";
import { NEXT_EDIT_COUNTERS, emptyCounts } from "../usage/columns";
import { type Engine, migrationProviderFor } from "./migrations";
import { openPostgresStore } from "./postgres";
import { openSqliteStore } from "./sqlite";
import type { Store } from "./types";

const WS = "ws_acme";
const DAY = "2026-11-24";
const problem = await postgresProblem();
const KEY = `'${WS}', '${DAY}', 'usr_olive', 'typescript', 'tab-v1'`;

/**
 * A database at 0007 with a day of completion counts in each of the three tables, as a relay before next edits
 * wrote them; then today's migrations.
 */
async function upgradeWithUsage(db: Kysely<unknown>, engine: Engine): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProviderFor(engine) });
  const to7 = await migrator.migrateTo("0007_tab_usage");
  assert.equal(to7.error, undefined);
  await sql
    .raw(
      `insert into tab_usage (workspace_id, day, user_id, language, model, requests, shown, accepted, accepted_chars)
       values (${KEY}, 7, 5, 3, 120)`,
    )
    .execute(db);
  await sql
    .raw(
      `insert into tab_usage_days (workspace_id, day, language, model, requests, shown, accepted, accepted_chars)
       values ('${WS}', '${DAY}', 'typescript', 'tab-v1', 7, 5, 3, 120)`,
    )
    .execute(db);
  await sql
    .raw(
      `insert into tab_usage_weeks (workspace_id, week, user_id, language, model, requests, shown, accepted, accepted_chars)
       values ('${WS}', '2026-11-23', 'usr_olive', 'typescript', 'tab-v1', 7, 5, 3, 120)`,
    )
    .execute(db);
  const latest = await migrator.migrateToLatest();
  assert.equal(latest.error, undefined);
  assert.deepEqual(
    latest.results?.map((r) => [r.migrationName, r.status]).filter(([name]) => name === "0008_tab_usage_next_edits"),
    [["0008_tab_usage_next_edits", "Success"]],
  );
}

/** The old counts read back unchanged with no next edits, and next edits add up beside them afterwards. */
async function checkStore(store: Store): Promise<void> {
  const read = async () =>
    (await store.usage.summarize(WS, { since: DAY, until: "2026-11-25", groupBy: "language" }))[0];
  const before = await read();
  assert.deepEqual(before, {
    ...emptyCounts(),
    key: "typescript",
    users: 1,
    requests: 7,
    shown: 5,
    accepted: 3,
    accepted_chars: 120,
  });
  await store.usage.add([
    {
      ...emptyCounts(),
      workspace_id: WS,
      day: DAY,
      user_id: "usr_olive",
      language: "typescript",
      model: "tab-v1",
      next_edits_shown: 2,
      next_edits_accepted: 1,
      next_edit_chars_accepted: 9,
      next_edit_show_ms: 40,
    },
  ]);
  // A one-person report reads the daily rows; a workspace's by-language report the roll-ups.
  const self = await store.usage.summarize(WS, {
    since: DAY,
    until: "2026-11-25",
    groupBy: "all",
    userId: "usr_olive",
  });
  for (const sum of [await read(), self[0]]) {
    assert.equal(sum?.requests, 7);
    assert.equal(sum?.shown, 5);
    assert.deepEqual(
      NEXT_EDIT_COUNTERS.map((column) => sum?.[column]),
      [2, 1, 0, 0, 0, 9, 40],
    );
  }
}

describe("migration 0008 adds the next-edit counters to usage a relay already stored", () => {
  test("SQLite: a 0007 database's rows keep their counts and take next edits", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tab-relay-usage-0008-"));
    try {
      const path = join(dir, "relay.db");
      const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SqliteDatabase(path) }) });
      await upgradeWithUsage(db, "sqlite");
      await db.destroy();
      const store = await openSqliteStore(path);
      try {
        await checkStore(store);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const created: string[] = [];
  after(() => dropDatabases(created));
  test("PostgreSQL: a 0007 database's rows keep their counts and take next edits", { skip: problem }, async () => {
    const name = `tab_relay_usage_0008_${randomBytes(6).toString("hex")}`;
    await withAdmin((admin) => admin.query(`create database ${name}`));
    created.push(name);
    const url = `postgres://postgres@${POSTGRES_HOST}/${name}`;
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url }) }) });
    await upgradeWithUsage(db, "postgres");
    await db.destroy();
    const store = await openPostgresStore(url, { poolSize: 2 });
    try {
      await checkStore(store);
    } finally {
      await store.close();
    }
  });
});
