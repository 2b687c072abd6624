/**
 * Makes the upgrade fixture: a database as a released tab-relay leaves it, for test/relay/upgrade.test.ts to upgrade
 * with today's `tab-relay migrate` and serve. Run it once per release, at the release:
 *
 *   node --import tsx test/support/makeUpgradeFixture.ts                  # the working tree is the release
 *   node --import tsx test/support/makeUpgradeFixture.ts --revision REV   # the relay as it was at a commit or tag
 *
 * With --revision, the relay and shared sources of REV (`git archive`) run against this checkout's node_modules.
 * The relay runs as its own process, `init` then `serve`, first on a SQLite folder and then on a scratch database of
 * the local PostgreSQL (127.0.0.1:5432, user postgres), and the data is made through its HTTP API only, so the rows
 * are exactly what that release writes: a workspace, people, API keys (one revoked), a console session, an agent
 * whose webhook receiver answers 503 (one event pending, one failed attempt), a channel with a thread, DMs and the
 * notification of the agent's DM. The results go to test/fixtures/previous-release/: sqlite.sql (a dump of
 * relay.db, loaded into a new file by the test), postgres.sql (pg_dump's plain SQL, without psql's meta-commands,
 * so the pg client loads it), and fixture.json (the revision, the migrations, and the keys, ids and texts the test
 * checks). Needs `pg_dump` on the PATH and the local PostgreSQL.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import SqliteDatabase from "better-sqlite3";
import { type RelayProcess, spawnRelay, until } from "./relayProcess";
import { createDatabase, dropDatabases } from "./scaleOutServices";
import { type WebhookReceiver, answerWith, startWebhookReceiver } from "./webhookReceiver";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const FIXTURE_DIR = join(ROOT, "test/fixtures/previous-release");

/** What the test needs to know about one engine's data: the secrets and ids the release handed out. */
export interface FixtureData {
  workspace: { id: string; slug: string };
  owner: { id: string; name: string; key: string };
  member: { id: string; name: string; key: string; laptop_key: string };
  revoked_key: string;
  /** The console session's cookie value. */
  session_token: string;
  agent: { id: string; name: string; token: string; signing_secret: string };
  channel: { id: string; name: string };
  /** The channel's top-level messages, oldest first, and the thread's replies. */
  messages: { id: string; text: string; thread_id: string | null }[];
  dm: { id: string; messages: { id: string; text: string }[] };
  /** The event waiting for the agent (its receiver was down), with the message it is about. */
  pending_event: { id: string; message_id: string };
  /** The owner's notification of the agent's DM. */
  notification: { conversation_id: string; message_id: string; text: string };
}

export interface Fixture {
  revision: string;
  made_at: string;
  /** The migrations that release applied, in order. */
  migrations: string[];
  sqlite: FixtureData;
  postgres: FixtureData;
}

const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));
const relayEnv = { ...baseEnv, TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true", TAB_RELAY_LOG_LEVEL: "warn" };

/** The sources of `revision` in a temporary folder, wired to this checkout's node_modules; removed by the caller. */
function checkOut(revision: string): string {
  if (!/^[\w./^~-]+$/.test(revision)) throw new Error(`--revision: "${revision}" is not a commit or tag name`);
  const dir = mkdtempSync(join(tmpdir(), "tab-relay-release-"));
  const archive = spawnSync(
    "sh",
    [
      "-c",
      `git archive --format=tar "$1" relay shared tsconfig.base.json package.json | tar -x -C "$2"`,
      "sh",
      revision,
      dir,
    ],
    { cwd: ROOT, encoding: "utf8" },
  );
  if (archive.status !== 0) throw new Error(`git archive ${revision} failed: ${archive.stderr}`);
  mkdirSync(join(dir, "node_modules", "@tab-relay"), { recursive: true });
  for (const entry of readdirSync(join(ROOT, "node_modules"))) {
    if (entry !== "@tab-relay" && entry !== ".bin")
      symlinkSync(join(ROOT, "node_modules", entry), join(dir, "node_modules", entry));
  }
  // The release's own shared package, not this checkout's.
  symlinkSync(join(dir, "shared"), join(dir, "node_modules", "@tab-relay", "shared"));
  symlinkSync(join(dir, "relay"), join(dir, "node_modules", "@tab-relay", "relay"));
  for (const pkg of ["relay", "shared"]) {
    const nested = join(ROOT, pkg, "node_modules");
    try {
      if (readdirSync(nested).length > 0) symlinkSync(nested, join(dir, pkg, "node_modules"));
    } catch {
      // No dependencies of its own.
    }
  }
  return dir;
}

function runCli(root: string, args: string[]): string {
  const result = spawnSync(process.execPath, ["--import", "tsx", join(root, "relay/src/cli.ts"), ...args], {
    cwd: root,
    env: relayEnv,
    encoding: "utf8",
    timeout: 120_000,
  });
  if (result.status !== 0) throw new Error(`tab-relay ${args[0]} failed (${String(result.status)}): ${result.stderr}`);
  return result.stdout;
}

async function call<T>(
  relay: RelayProcess,
  key: string,
  path: string,
  init: { method?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<{ data: T; response: Response }> {
  const response = await fetch(`${relay.url}/api/v1${path}`, {
    method: init.method ?? "GET",
    headers: {
      ...(key ? { Authorization: `Bearer ${key}` } : {}),
      ...(init.json === undefined ? {} : { "Content-Type": "application/json" }),
      ...init.headers,
    },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${init.method ?? "GET"} ${path} answered ${response.status}: ${text}`);
  return { data: (JSON.parse(text) as { data: T }).data, response };
}

/** Makes the data through the API of a relay that was just initialised (`ownerKey`), whose agent's receiver answers 503. */
async function populate(
  relay: RelayProcess,
  ownerKey: string,
  receiver: WebhookReceiver,
): Promise<Omit<FixtureData, "workspace" | "owner"> & { owner: { id: string; name: string } }> {
  const me = (await call<{ user: { id: string; name: string } }>(relay, ownerKey, "/me")).data.user;
  const member = (
    await call<{ user: { id: string; name: string }; api_key: { secret: string } }>(relay, ownerKey, "/users", {
      method: "POST",
      json: { name: "Mo Member", role: "member" },
    })
  ).data;
  await call(relay, ownerKey, "/users", { method: "POST", json: { name: "Gil Guest", role: "guest" } });
  const laptop = (
    await call<{ secret: string }>(relay, member.api_key.secret, "/api-keys", {
      method: "POST",
      json: { name: "Mo's laptop", scopes: ["tab.complete"] },
    })
  ).data;
  const revoked = (
    await call<{ id: string; secret: string }>(relay, ownerKey, "/api-keys", {
      method: "POST",
      json: { name: "old CI key", scopes: ["tab.complete"] },
    })
  ).data;
  await call(relay, ownerKey, `/api-keys/${revoked.id}`, { method: "DELETE" });
  const signIn = await call(relay, "", "/sessions", { method: "POST", json: { api_key: ownerKey } });
  const sessionToken = /=([^;]+)/.exec(signIn.response.headers.get("set-cookie") ?? "")?.[1];
  assert.ok(sessionToken, "the sign-in set a session cookie");

  const agent = (
    await call<{ agent: { id: string; name: string }; token: string; signing_secret: string }>(
      relay,
      ownerKey,
      "/agents",
      { method: "POST", json: { name: "Releasebot", description: "Announces releases", webhook_url: receiver.url } },
    )
  ).data;
  const channel = (
    await call<{ id: string; name: string }>(relay, ownerKey, "/channels", {
      method: "POST",
      json: { name: "releases" },
    })
  ).data;
  await call(relay, ownerKey, `/channels/${channel.id}/members`, { method: "POST", json: { user_id: member.user.id } });
  await call(relay, ownerKey, `/channels/${channel.id}/members`, {
    method: "POST",
    json: { agent_id: agent.agent.id },
  });

  type Posted = { id: string; text: string; thread_id: string | null };
  const post = async (key: string, conversation: string, text: string, threadId?: string) =>
    (
      await call<Posted>(relay, key, `/conversations/${conversation}/messages`, {
        method: "POST",
        json: { text, ...(threadId ? { thread_id: threadId } : {}) },
      })
    ).data;
  const messages: Posted[] = [];
  messages.push(
    await post(ownerKey, `channel/${channel.id}`, "Release 0.1 is out: the relay, the extension and the console."),
  );
  messages.push(
    await post(
      member.api_key.secret,
      `channel/${channel.id}`,
      `@${me.name} the changelog says "migrations run at start" — do we still need \`tab-relay migrate\`?`,
    ),
  );
  messages.push(
    await post(
      ownerKey,
      `channel/${channel.id}`,
      "Only when several relays share PostgreSQL.\nThen run it once, before the new relays start.",
      messages[1]?.id,
    ),
  );
  const mention = await post(ownerKey, `channel/${channel.id}`, "@Releasebot please announce 0.1 in #general ✨");
  messages.push(mention);
  const dm = (
    await call<{ id: string }>(relay, ownerKey, "/dms", { method: "POST", json: { member_ids: [member.user.id] } })
  ).data;
  const dmMessages = [
    await post(ownerKey, `dm/${dm.id}`, "Can you check the backup job tonight?"),
    await post(member.api_key.secret, `dm/${dm.id}`, "Will do."),
  ];
  // The agent writes to the owner first: a DM from an agent notifies the people in it.
  const agentDm = (
    await call<{ id: string }>(relay, ownerKey, "/dms", { method: "POST", json: { member_ids: [agent.agent.id] } })
  ).data;
  const fromAgent = (
    await call<Posted>(relay, agent.token, `/agent-api/conversations/dm/${agentDm.id}/messages`, {
      method: "POST",
      json: { text: "Announced 0.1 in #general." },
    })
  ).data;

  // The receiver is down: the event's first attempt fails and it waits for its retry.
  await receiver.waitFor(1, 30_000);
  const deliveries = await until("the failed attempt in the delivery log", 30_000, async () => {
    const log = (
      await call<{ id: string; status: string; attempts: { outcome: string }[] }[]>(
        relay,
        ownerKey,
        `/agents/${agent.agent.id}/deliveries`,
      )
    ).data;
    return log.length === 1 && log[0]?.status === "pending" && log[0].attempts.length === 1 ? log : undefined;
  });
  return {
    owner: { id: me.id, name: me.name },
    member: { id: member.user.id, name: member.user.name, key: member.api_key.secret, laptop_key: laptop.secret },
    revoked_key: revoked.secret,
    session_token: sessionToken,
    agent: { id: agent.agent.id, name: agent.agent.name, token: agent.token, signing_secret: agent.signing_secret },
    channel: { id: channel.id, name: channel.name },
    messages: messages.map((m) => ({ id: m.id, text: m.text, thread_id: m.thread_id })),
    dm: { id: dm.id, messages: dmMessages.map((m) => ({ id: m.id, text: m.text })) },
    pending_event: { id: deliveries[0]?.id as string, message_id: mention.id },
    notification: { conversation_id: agentDm.id, message_id: fromAgent.id, text: fromAgent.text },
  };
}

/** init, serve, populate and stop one relay; `target` is `--data DIR` or `--database URL`. */
async function makeData(root: string, target: string[]): Promise<FixtureData> {
  const children = new Set<ChildProcess>();
  const receiver = await startWebhookReceiver(answerWith(503, {}, "down"));
  try {
    const init = JSON.parse(
      runCli(root, ["init", ...target, "--workspace", "acme", "--owner", "Olive Owner", "--name", "Acme", "--json"]),
    ) as { workspace: { id: string; slug: string }; user: { id: string; name: string }; api_key: string };
    const relay = await spawnRelay({
      name: "release relay",
      args: ["--import", "tsx", join(root, "relay/src/cli.ts"), "serve", ...target, "--port", "0"],
      cwd: root,
      env: relayEnv,
      tracked: children,
      startTimeoutMs: 120_000,
      outputChars: 8_000,
    });
    try {
      const made = await populate(relay, init.api_key, receiver);
      return {
        ...made,
        workspace: { id: init.workspace.id, slug: init.workspace.slug },
        owner: { ...made.owner, key: init.api_key },
      };
    } finally {
      relay.child.kill("SIGTERM");
      await relay.exited;
    }
  } finally {
    for (const child of children) child.kill("SIGKILL");
    await receiver.close();
  }
}

/** SQL text that rebuilds the database: tables and their rows in the order they were made, then indexes. */
export function dumpSqlite(path: string): string {
  const db = new SqliteDatabase(path, { readonly: true });
  try {
    const literal = (value: unknown): string => {
      if (value === null) return "NULL";
      if (typeof value === "number" || typeof value === "bigint") return String(value);
      if (Buffer.isBuffer(value)) return `X'${value.toString("hex")}'`;
      return `'${String(value).replaceAll("'", "''")}'`;
    };
    const out = ["PRAGMA foreign_keys=OFF;", "BEGIN TRANSACTION;"];
    const objects = db
      .prepare(
        "select type, name, sql from sqlite_master where sql is not null and name not like 'sqlite_%' order by rowid",
      )
      .all() as { type: string; name: string; sql: string }[];
    for (const table of objects.filter((o) => o.type === "table")) {
      out.push(`${table.sql};`);
      const rows = db.prepare(`select * from "${table.name}" order by rowid`).raw().all() as unknown[][];
      for (const row of rows) out.push(`INSERT INTO "${table.name}" VALUES(${row.map(literal).join(",")});`);
    }
    for (const other of objects.filter((o) => o.type !== "table")) out.push(`${other.sql};`);
    out.push("COMMIT;");
    return `${out.join("\n")}\n`;
  } finally {
    db.close();
  }
}

function migrationsOf(path: string): string[] {
  const db = new SqliteDatabase(path, { readonly: true });
  try {
    return (db.prepare("select name from kysely_migration order by name").all() as { name: string }[]).map(
      (row) => row.name,
    );
  } finally {
    db.close();
  }
}

/** pg_dump's plain SQL without its psql meta-commands (`\restrict`), so any PostgreSQL client can run it. */
function dumpPostgres(url: string): string {
  const dump = spawnSync("pg_dump", ["--no-owner", "--no-privileges", "--inserts", "--dbname", url], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (dump.status !== 0) throw new Error(`pg_dump failed: ${dump.error?.message ?? dump.stderr}`);
  return dump.stdout
    .split("\n")
    .filter((line) => !line.startsWith("\\"))
    .join("\n");
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { revision: { type: "string" }, out: { type: "string" } } });
  const out = values.out ?? FIXTURE_DIR;
  const revision =
    values.revision ??
    spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).stdout.trim();
  const root = values.revision ? checkOut(values.revision) : ROOT;
  const scratch = mkdtempSync(join(tmpdir(), "tab-relay-fixture-"));
  const database = await createDatabase("tab_relay_fixture");
  try {
    process.stdout.write(`Making the fixture with the relay of ${revision} (sources in ${root})\n`);
    const dataDir = join(scratch, "data");
    const sqlite = await makeData(root, ["--data", dataDir]);
    const postgres = await makeData(root, ["--database", database.url]);
    const migrations = migrationsOf(join(dataDir, "relay.db"));
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, "sqlite.sql"), dumpSqlite(join(dataDir, "relay.db")));
    writeFileSync(join(out, "postgres.sql"), dumpPostgres(database.url));
    const fixture: Fixture = { revision, made_at: new Date().toISOString(), migrations, sqlite, postgres };
    writeFileSync(join(out, "fixture.json"), `${JSON.stringify(fixture, null, 2)}\n`);
    process.stdout.write(
      `Wrote ${out}: sqlite.sql, postgres.sql and fixture.json (migrations ${migrations.join(", ")})\n`,
    );
  } finally {
    await dropDatabases([database.name]);
    rmSync(scratch, { recursive: true, force: true });
    if (root !== ROOT) rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
