import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { migrationProvider } from "../../relay/src/store/migrations";
import { FIXTURE_DIR } from "../support/makeUpgradeFixture";
import { type CommandRun as Run, runCommand, spawnRelay } from "../support/relayProcess";
import { createDatabase, dropDatabases, postgresProblem } from "../support/scaleOutServices";
import { TOMORROW, expectServes, fixture, loadSqliteFixture, upgradeEnv } from "../support/upgrade";

/**
 * Upgrading from the previous release: test/fixtures/previous-release holds a database that release made through its
 * own API (see test/support/makeUpgradeFixture.ts, which also remakes it at each release), as SQL for SQLite and for
 * PostgreSQL. Each test loads it into a new database, runs today's `tab-relay migrate`, serves it, and checks that
 * what the release handed out still works (test/support/upgrade.ts): keys, the agent's token and signing secret, a
 * console session, the conversations and notifications, and the event the release left pending. Runs the built CLI:
 * needs a fresh `npm run build -w relay`. test/package/relayPackage.test.ts runs the SQLite case through the
 * installed package.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "relay/bin/tab-relay.js");
const relayEnv = upgradeEnv(process.env);

function cli(args: string[]): Promise<Run> {
  return runCommand(process.execPath, [BIN, ...args], { cwd: ROOT, env: relayEnv, killAfterMs: 60_000 });
}

const children = new Set<ChildProcess>();
const dirs: string[] = [];

/** Today's migrations the release did not have, in order. */
async function newMigrations(): Promise<string[]> {
  return Object.keys(await migrationProvider.getMigrations())
    .sort()
    .filter((name) => !fixture.migrations.includes(name));
}

describe("upgrading a database made by the previous release", () => {
  after(async () => {
    for (const child of children) child.kill("SIGKILL");
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test(`SQLite: tab-relay migrate brings ${fixture.revision}'s database up to date, and it serves`, async () => {
    const applied = await newMigrations();
    assert.ok(applied.length > 0, "this release has migrations the previous one did not");
    const dir = mkdtempSync(join(tmpdir(), "tab-relay-upgrade-"));
    dirs.push(dir);
    const data = join(dir, "data");
    const file = loadSqliteFixture(data);

    const migrate = await cli(["migrate", "--data", data]);
    assert.equal(migrate.status, 0, migrate.stderr);
    assert.equal(migrate.stdout, `Applied ${applied.join(", ")} to ${file}\n`);
    assert.equal((await cli(["migrate", "--data", data])).stdout, `${file} is up to date\n`);

    const relay = await spawnRelay({
      name: "upgraded relay",
      args: [BIN, "serve", "--data", data, "--port", "0"],
      cwd: ROOT,
      env: relayEnv,
      tracked: children,
      startTimeoutMs: 20_000,
      outputChars: 8_000,
    });
    await expectServes(relay, fixture.sqlite);
    relay.child.kill("SIGTERM");
    assert.equal(await relay.exited, 0, relay.output());
  });

  test(`PostgreSQL: tab-relay migrate brings ${fixture.revision}'s database up to date, and it serves`, async (t) => {
    const problem = await postgresProblem();
    if (problem) {
      console.error(`SKIPPED: ${problem}: the PostgreSQL upgrade test did not run`);
      return t.skip(problem);
    }
    const applied = await newMigrations();
    const database = await createDatabase("tab_relay_upgrade");
    try {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        await client.query(readFileSync(join(FIXTURE_DIR, "postgres.sql"), "utf8"));
        assert.deepEqual(
          (await client.query<{ name: string }>("select name from public.kysely_migration order by name")).rows.map(
            (row) => row.name,
          ),
          fixture.migrations,
        );
        await client.query("update public.sessions set expires_at = $1", [TOMORROW]);
      } finally {
        await client.end();
      }

      const migrate = await cli(["migrate", "--database", database.url]);
      assert.equal(migrate.status, 0, migrate.stderr);
      assert.equal(migrate.stdout, `Applied ${applied.join(", ")}\n`);
      assert.equal((await cli(["migrate", "--database", database.url])).stdout, "The database is up to date\n");

      const relay = await spawnRelay({
        name: "upgraded relay",
        args: [BIN, "serve", "--database", database.url, "--port", "0"],
        cwd: ROOT,
        env: relayEnv,
        tracked: children,
        startTimeoutMs: 20_000,
        outputChars: 8_000,
      });
      await expectServes(relay, fixture.postgres);
      relay.child.kill("SIGTERM");
      assert.equal(await relay.exited, 0, relay.output());
    } finally {
      await dropDatabases([database.name]);
    }
  });
});
