import assert from "node:assert/strict";
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type Server, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import SqliteDatabase from "better-sqlite3";
import pg from "pg";
import {
  REDIS_URL,
  createDatabase,
  dropDatabases,
  postgresProblem,
  redisProblem,
} from "../../../../test/support/scaleOutServices";
import type { OperatorConfig } from "../../config";
import { LOCK_FILE } from "../../dataFolder";
import { migrationProviderFor } from "../../store/migrations";
import { openSqliteStore } from "../../store/sqlite";
import type { CheckResult, DoctorCheck } from "../checks";
import { SKEW_FAIL_MS, SKEW_WARN_MS, clockCheck } from "./clock";
import { databaseCheck } from "./database";
import { dataFolderCheck } from "./dataFolder";
import { operatorChecks } from "./index";
import {
  type DatabaseProbe,
  type ProbeOpeners,
  openPostgresProbe,
  openRedisProbe,
  openSqliteProbe,
  realOpeners,
} from "./probes";
import { publicUrlCheck } from "./publicUrl";
import { redisCheck } from "./redis";
import { webhookGuardCheck } from "./webhookGuard";

/** The operator checks of `tab-relay doctor`, each on real files, a real PostgreSQL and Redis where it reads them. */

const FIXTURE_SQL = join(import.meta.dirname, "../../../../test/fixtures/previous-release");
const run = (check: DoctorCheck): Promise<CheckResult> => check.run(() => undefined);
const advice = (result: CheckResult) => result.details["advice"] as string[];
const systemClock = { now: () => Date.now() };
const known = async (engine: "sqlite" | "postgres") =>
  Object.keys(await migrationProviderFor(engine).getMigrations()).sort();

const BASE: OperatorConfig = Object.freeze({
  dataDir: "/srv/data",
  databaseUrl: undefined,
  redisUrl: undefined,
  host: "127.0.0.1",
  port: 8787,
  publicUrl: undefined,
  trustProxy: false,
  webhookAllowPrivate: false,
});

let dir: string;
/** What the checks opened: in doctor, the shared probes close them; here, the end of the file does. */
const opened: { close(): Promise<void> }[] = [];
function kept<T extends { close(): Promise<void> }>(open: () => Promise<T>): () => Promise<T> {
  return async () => {
    const probe = await open();
    opened.push(probe);
    return probe;
  };
}
before(() => {
  dir = mkdtempSync(join(tmpdir(), "tab-relay-doctor-"));
});
after(async () => {
  await Promise.all(opened.map((probe) => probe.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** A data folder as `init` leaves it: 0700, relay.db 0600 with every migration and one workspace. */
async function initialised(name: string): Promise<string> {
  const folder = join(dir, name);
  await (await openSqliteStore(join(folder, "relay.db"))).close();
  const db = new SqliteDatabase(join(folder, "relay.db"));
  db.prepare(
    "insert into workspaces (id, slug, name, created_at) values ('ws_1', 'acme', 'Acme', '2026-01-01T00:00:00.000Z')",
  ).run();
  db.close();
  return folder;
}

/** The previous release's database (the upgrade fixture), loaded into a new file. */
function previousRelease(name: string): string {
  const folder = join(dir, name);
  mkdirSync(folder, { mode: 0o700 });
  const file = join(folder, "relay.db");
  closeSync(openSync(file, "wx", 0o600));
  const db = new SqliteDatabase(file);
  db.exec(readFileSync(join(FIXTURE_SQL, "sqlite.sql"), "utf8"));
  db.close();
  return folder;
}

async function sqliteDatabase(folder: string, flag = `--data ${folder}`): Promise<CheckResult> {
  const file = join(folder, "relay.db");
  return run(
    databaseCheck({ where: file, flag, known: await known("sqlite"), open: kept(() => openSqliteProbe(file)) }),
  );
}

describe("doctor: the data folder", () => {
  test("as init leaves it: ok, with its modes and whether a relay serves it", async () => {
    const folder = await initialised("private");
    const result = await run(dataFolderCheck(folder, "relay.db"));
    assert.equal(result.status, "ok");
    assert.equal(result.summary, `${folder} (mode 700), relay.db (mode 600); no relay serves it now`);
    assert.match(result.lines[0] ?? "", /^Data folder {2}ok {5}\//);

    assert.deepEqual(result.details["notes"], []);
    writeFileSync(join(folder, LOCK_FILE), "4242\n");
    const served = await run(dataFolderCheck(folder, "relay.db", { alive: (pid) => pid === 4242 }));
    assert.match(served.summary, /; served by process 4242$/);
    assert.match(
      served.lines[1] ?? "",
      /the relay serving this folder may run with others \(port, public URL, TAB_RELAY_WEBHOOK_ALLOW_PRIVATE\): give doctor the same ones$/,
      "doctor says its settings may not be the serving relay's",
    );
    assert.match(
      (await run(dataFolderCheck(folder, "relay.db", { alive: () => false }))).summary,
      /; relay\.pid names process 4242, which no longer runs; the next relay takes the folder over$/,
    );
  });

  test(
    "readable by others: warn, with the chmod for each (serve's own warnings)",
    { skip: process.platform === "win32" },
    async () => {
      const folder = await initialised("shared");
      chmodSync(folder, 0o755);
      chmodSync(join(folder, "relay.db"), 0o644);
      const result = await run(dataFolderCheck(folder, "relay.db"));
      assert.equal(result.status, "warn");
      assert.equal(advice(result).length, 2);
      assert.match(advice(result)[0] ?? "", new RegExp(`\\(mode 755\\); run: chmod 700 ${folder}$`));
      assert.match(advice(result)[1] ?? "", new RegExp(`\\(mode 644\\); run: chmod 600 ${join(folder, "relay.db")}$`));
      assert.ok(result.lines.includes(`                    To do: ${advice(result)[0]}`), result.lines.join("\n"));
    },
  );

  test("missing, a file, or without a database: failed, saying to init or to point --data at the right folder", async () => {
    const missing = await run(dataFolderCheck(join(dir, "nowhere"), "relay.db"));
    assert.deepEqual([missing.status, missing.summary], ["failed", `no folder at ${join(dir, "nowhere")}`]);
    assert.match(
      advice(missing)[0] ?? "",
      /^run `tab-relay init --data .*nowhere --workspace SLUG --owner NAME`, or set --data \(TAB_RELAY_DATA\)/,
    );
    writeFileSync(join(dir, "a-file"), "");
    assert.equal(
      (await run(dataFolderCheck(join(dir, "a-file"), "relay.db"))).summary,
      `${join(dir, "a-file")} is not a folder`,
    );
    mkdirSync(join(dir, "empty"));
    const empty = await run(dataFolderCheck(join(dir, "empty"), "relay.db"));
    assert.deepEqual([empty.status, empty.summary], ["failed", `${join(dir, "empty")} holds no relay.db`]);
  });
});

describe("doctor: the database (SQLite)", () => {
  test("up to date with a workspace: ok", async () => {
    const result = await sqliteDatabase(await initialised("current"));
    assert.equal(result.status, "ok");
    // As many as the relay has: a new migration must not break this test.
    const all = Object.keys(await migrationProviderFor("sqlite").getMigrations()).length;
    assert.match(
      result.summary,
      new RegExp(`^SQLite .*relay\\.db: 1 workspace, ${all} of ${all} migrations applied \\(up to date\\)$`),
    );
  });

  test("made by the previous release: warn, naming the migrations to apply and the command", async () => {
    const folder = previousRelease("previous");
    const result = await sqliteDatabase(folder);
    assert.equal(result.status, "warn");
    const pending = (await known("sqlite")).slice(4);
    assert.deepEqual(result.details["pending"], pending);
    assert.equal(
      advice(result)[0],
      `run \`tab-relay migrate --data ${folder}\` to apply ${pending.join(", ")} (serve applies them at start too; with several relays, migrate once before starting the new ones)`,
    );
  });

  test("migrated by a newer relay, without a workspace, not tab-relay's, not a database, or missing: failed, each saying what to do", async () => {
    const newer = await initialised("newer");
    new SqliteDatabase(join(newer, "relay.db"))
      .prepare("insert into kysely_migration (name, timestamp) values ('0099_future', 'x')")
      .run();
    const fromTheFuture = await sqliteDatabase(newer);
    assert.deepEqual(
      [fromTheFuture.status, advice(fromTheFuture)[0]],
      [
        "failed",
        "run the tab-relay version that migrated it, or newer; this one may not understand what that one stores",
      ],
    );
    assert.match(fromTheFuture.summary, /was migrated by a newer tab-relay \(0099_future\)$/);

    const bare = join(dir, "bare");
    await (await openSqliteStore(join(bare, "relay.db"))).close();
    const noWorkspace = await sqliteDatabase(bare);
    assert.equal(noWorkspace.status, "failed");
    assert.match(
      advice(noWorkspace)[0] ?? "",
      /^run `tab-relay init --data .*bare --workspace SLUG --owner NAME`: serve refuses a database without a workspace$/,
    );

    const other = join(dir, "other");
    mkdirSync(other);
    new SqliteDatabase(join(other, "relay.db")).exec("create table notes (text)").close();
    const foreign = await sqliteDatabase(other);
    assert.deepEqual(
      [foreign.status, foreign.summary],
      ["failed", `SQLite ${join(other, "relay.db")} answers, but holds no tab-relay schema`],
    );

    const garbage = join(dir, "garbage");
    mkdirSync(garbage);
    writeFileSync(join(garbage, "relay.db"), "not a database, long enough to have a header of sorts. ".repeat(20));
    const notDatabase = await sqliteDatabase(garbage);
    assert.deepEqual(
      [notDatabase.status, notDatabase.summary],
      ["failed", `SQLite ${join(garbage, "relay.db")}: file is not a database`],
    );
    assert.match(
      advice(notDatabase)[0] ?? "",
      /^restore the database from a backup: `tab-relay restore --from FILE --data .* --force` with the relay stopped$/,
    );

    const missing = await sqliteDatabase(join(dir, "missing"));
    assert.deepEqual(
      [missing.status, missing.summary],
      ["failed", `no database at ${join(dir, "missing", "relay.db")}`],
    );
  });
});

describe("doctor: the database (PostgreSQL)", () => {
  const names: string[] = [];
  after(() => dropDatabases(names));
  const pgCheck = async (url: string, where = url) =>
    run(
      databaseCheck({
        where,
        flag: "--database URL",
        known: await known("postgres"),
        open: kept(() => openPostgresProbe(url)),
      }),
    );

  test("nothing listening: unreachable; a database that does not exist: failed, naming the setting", async () => {
    const silent = await pgCheck("postgres://postgres@127.0.0.1:1/tab");
    assert.equal(silent.status, "unreachable");
    assert.match(
      silent.summary,
      /^PostgreSQL postgres:\/\/postgres@127\.0\.0\.1:1\/tab: no answer: connect ECONNREFUSED 127\.0\.0\.1:1$/,
    );
    assert.deepEqual(advice(silent), ["start PostgreSQL, or correct the host and port in TAB_RELAY_DATABASE_URL"]);
  });

  test("an empty database: failed (no schema); the previous release's: warn (a migration to apply); after migrate: ok", async (t) => {
    const problem = await postgresProblem();
    if (problem) return t.skip(problem);
    const database = await createDatabase("tab_relay_doctor");
    names.push(database.name);
    const wrongName = await pgCheck(database.url.replace(database.name, `${database.name}_nope`));
    assert.deepEqual(
      [wrongName.status, advice(wrongName)],
      ["failed", ["check the user, password and database name in TAB_RELAY_DATABASE_URL"]],
    );
    assert.match(wrongName.summary, /refused: database ".*_nope" does not exist$/);

    assert.equal(
      (await pgCheck(database.url)).summary,
      `PostgreSQL ${database.url} answers, but holds no tab-relay schema`,
    );
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(readFileSync(join(FIXTURE_SQL, "postgres.sql"), "utf8"));
    await client.end();
    const previous = await pgCheck(database.url);
    assert.equal(previous.status, "warn");
    assert.match(advice(previous)[0] ?? "", /^run `tab-relay migrate --database URL` to apply 0005_sessions_by_key/);
  });
});

describe("doctor: Redis", () => {
  const servers: Server[] = [];
  after(() => servers.forEach((server) => server.close()));
  /** A server that answers every command with `reply`, as a Redis refusing the client does. */
  async function answering(reply: string): Promise<string> {
    const server = createServer((socket) => socket.on("data", () => socket.write(reply)));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `127.0.0.1:${(server.address() as { port: number }).port}`;
  }

  test("the local Redis answers PING: ok", async (t) => {
    const problem = await redisProblem();
    if (problem) return t.skip(problem);
    const result = await run(
      redisCheck(
        REDIS_URL,
        kept(() => openRedisProbe(REDIS_URL)),
        systemClock,
      ),
    );
    assert.equal(result.status, "ok");
    assert.match(result.summary, /^redis:\/\/127\.0\.0\.1:6379 answered PING in \d+ ms$/);
  });

  test("nothing listening: unreachable; a refused password: failed, and the password is not shown", async () => {
    const silent = await run(
      redisCheck(
        "redis://127.0.0.1:1",
        kept(() => openRedisProbe("redis://127.0.0.1:1")),
        systemClock,
      ),
    );
    assert.equal(silent.status, "unreachable");
    assert.deepEqual(advice(silent), ["start Redis, or correct TAB_RELAY_REDIS_URL (host and port)"]);
    const url = `redis://:hunter2@${await answering("-WRONGPASS invalid username-password pair or user is disabled.\r\n")}`;
    const refused = await run(
      redisCheck(
        url,
        kept(() => openRedisProbe(url)),
        systemClock,
      ),
    );
    assert.equal(refused.status, "failed");
    assert.match(refused.summary, /^redis:\/\/:\*\*\*@127\.0\.0\.1:\d+: WRONGPASS/);
    assert.deepEqual(advice(refused), ["check the user and password in TAB_RELAY_REDIS_URL"]);
    assert.ok(!JSON.stringify(refused).includes("hunter2"));
  });
});

describe("doctor: the public URL against the listening address", () => {
  const judge = async (config: Partial<OperatorConfig>) => run(publicUrlCheck({ ...BASE, ...config }));

  test("on loopback without a public URL: ok (this machine only)", async () => {
    const result = await judge({});
    assert.deepEqual(
      [result.status, result.summary],
      ["ok", "unset: links in events use http://127.0.0.1:8787, which only this machine reaches"],
    );
  });

  test("on an address others reach without a public URL: warn, links and keys in plain http", async () => {
    const result = await judge({ host: "0.0.0.0" });
    assert.equal(result.status, "warn");
    assert.match(
      result.summary,
      /^unset while the relay listens on 0\.0\.0\.0, which other machines reach, in plain http$/,
    );
    assert.match(advice(result)[0] ?? "", /TLS-terminating proxy .* TAB_RELAY_PUBLIC_URL to its https:\/\/ address/);
  });

  test("an https public URL with the relay on loopback and the proxy trusted: ok; not trusted: warn with TAB_RELAY_TRUST_PROXY", async () => {
    const trusted = await judge({ publicUrl: "https://relay.example.com", trustProxy: 1 });
    assert.deepEqual(
      [trusted.status, trusted.summary],
      ["ok", "https://relay.example.com, through a proxy to http://127.0.0.1:8787"],
    );
    const untrusted = await judge({ publicUrl: "https://relay.example.com" });
    assert.equal(untrusted.status, "warn");
    assert.match(
      advice(untrusted)[0] ?? "",
      /^set TAB_RELAY_TRUST_PROXY to the proxy's address \(or 1 for one proxy in front\)/,
    );
  });

  test("an https public URL while the relay listens in plain http on an address others reach: warn, the proxy can be bypassed", async () => {
    const result = await judge({
      host: "0.0.0.0",
      port: 8801,
      publicUrl: "https://relay.example.com",
      trustProxy: ["10.0.0.0/8"],
    });
    assert.equal(result.status, "warn");
    assert.deepEqual(result.details["notes"], [
      "the relay itself answers plain http on http://0.0.0.0:8801, which other machines reach: keys sent there directly bypass the proxy's TLS",
    ]);
    assert.deepEqual(advice(result), [
      "listen on 127.0.0.1 (--host 127.0.0.1) when the proxy runs on this machine; otherwise let only the proxy reach port 8801 (a firewall rule)",
    ]);
  });

  test("a plain http public URL others reach: warn; one on this machine ([::1] included): ok", async () => {
    assert.equal((await judge({ publicUrl: "http://relay.internal:8787" })).status, "warn");
    assert.equal((await judge({ publicUrl: "http://localhost:8787" })).status, "ok");
    assert.equal((await judge({ host: "::1", publicUrl: "http://[::1]:8787" })).status, "ok");
  });
});

describe("doctor: the clock", () => {
  const reference = (offsetMs: number) => ({ name: "PostgreSQL", now: async () => Date.now() + offsetMs });

  test("within 2 s of the servers: ok; beyond: warn; beyond Standard Webhooks' 5 minutes: failed", async () => {
    const close = await run(clockCheck([reference(0), { name: "Redis", now: async () => Date.now() }], systemClock));
    assert.equal(close.status, "ok");
    assert.match(
      close.summary,
      /^within 2 s: \d+ ms (ahead of|behind) PostgreSQL's \(±\d+ ms\); \d+ ms (ahead of|behind) Redis's \(±\d+ ms\)$/,
    );
    const ahead = await run(clockCheck([reference(-(SKEW_WARN_MS + 8_000))], systemClock));
    assert.equal(ahead.status, "warn");
    assert.match(ahead.summary, /^this machine's clock is 10 s ahead of PostgreSQL's \(±\d+ ms\)$/);
    assert.match(advice(ahead)[0] ?? "", /^synchronise this machine's clock \(NTP/);
    const behind = await run(clockCheck([reference(SKEW_FAIL_MS + 60_000)], systemClock));
    assert.equal(behind.status, "failed");
    assert.match(behind.summary, /^this machine's clock is 360 s behind PostgreSQL's/);
  });

  test("nothing to compare with, or a server that cannot be read: ok, saying so", async () => {
    const none = await run(clockCheck([], systemClock));
    assert.deepEqual([none.status, none.summary], ["ok", "nothing to compare with (no PostgreSQL or Redis server)"]);
    const unread = await run(
      clockCheck(
        [{ name: "Redis", now: () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:1")) }],
        systemClock,
      ),
    );
    assert.deepEqual(
      [unread.status, unread.summary, unread.details["unread"]],
      ["ok", "no server's clock could be read", ["Redis: connect ECONNREFUSED 127.0.0.1:1"]],
    );
  });

  test("against the real PostgreSQL and Redis, a machine clock 10 s fast is found", async (t) => {
    const problem = (await postgresProblem()) ?? (await redisProblem());
    if (problem) return t.skip(problem);
    const fast = { now: () => Date.now() + 10_000 };
    const checks = await operatorChecks(
      { ...BASE, dataDir: undefined, databaseUrl: "postgres://postgres@127.0.0.1:5432/postgres", redisUrl: REDIS_URL },
      { clock: fast, databaseFile: "relay.db" },
    );
    try {
      const clock = await run(checks.checks.find((check) => check.name === "clock") as DoctorCheck);
      assert.equal(clock.status, "warn");
      assert.match(
        clock.summary,
        /^this machine's clock is (9\.\d|10) s ahead of PostgreSQL's \(±\d+ ms\); (9\.\d|10) s ahead of Redis's \(±\d+ ms\)$/,
      );
    } finally {
      await checks.close();
    }
  });
});

describe("doctor: the webhook guard", () => {
  const judge = async (config: Partial<OperatorConfig>) => run(webhookGuardCheck({ ...BASE, ...config }));

  test("on: ok; lifted on a relay only this machine reaches: ok; lifted where others reach it: warn, saying what it exposes", async () => {
    assert.equal((await judge({})).status, "ok");
    assert.equal((await judge({ webhookAllowPrivate: true })).status, "ok");
    for (const exposed of [{ host: "0.0.0.0" }, { publicUrl: "https://relay.example.com" }]) {
      const result = await judge({ webhookAllowPrivate: true, ...exposed });
      assert.equal(result.status, "warn", JSON.stringify(exposed));
      assert.match((result.details["notes"] as string[])[0] ?? "", /169\.254\.169\.254/);
      assert.deepEqual(advice(result), [
        "unset TAB_RELAY_WEBHOOK_ALLOW_PRIVATE (or set it to false); an agent inside your network can connect out through Socket Mode instead",
      ]);
    }
  });
});

describe("doctor: the operator checks together", () => {
  test("SQLite: data folder, database, public URL, clock, webhook guard; PostgreSQL and Redis: no data folder, Redis added; one connection each", async () => {
    const sqlite = await operatorChecks(
      { ...BASE, dataDir: join(dir, "whatever") },
      { clock: systemClock, databaseFile: "relay.db" },
    );
    assert.deepEqual(
      sqlite.checks.map((check) => check.name),
      ["data folder", "database", "public url", "clock", "webhook guard"],
    );
    await sqlite.close();

    const opened: string[] = [];
    const probe: DatabaseProbe = {
      engine: "postgres",
      where: "x",
      migrations: async () => [],
      workspaces: async () => [],
      webhooks: async () => [],
      serverNow: async () => Date.now(),
      close: async () => undefined,
    };
    const openers: ProbeOpeners = {
      ...realOpeners,
      postgres: async () => (opened.push("postgres"), probe),
      redis: async () => (
        opened.push("redis"),
        { ping: async () => undefined, serverNow: async () => Date.now(), close: async () => undefined }
      ),
    };
    const shared = await operatorChecks(
      { ...BASE, dataDir: undefined, databaseUrl: "postgres://u:pw%21@db/tab", redisUrl: "redis://:secret@cache:6379" },
      { clock: systemClock, databaseFile: "relay.db", openers },
    );
    assert.deepEqual(
      shared.checks.map((check) => check.name),
      ["database", "redis", "public url", "clock", "webhook guard"],
    );
    for (const check of shared.checks) await run(check);
    assert.deepEqual(opened, ["postgres", "redis"]);
    assert.deepEqual(shared.secrets, ["pw!", "pw%21", "secret"]);
    await shared.close();
  });
});
