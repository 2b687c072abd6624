import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import SqliteDatabase from "better-sqlite3";
import pg from "pg";
import {
  POSTGRES_HOST,
  dropDatabases as dropScratchDatabases,
  postgresProblem,
  withAdmin,
} from "../../../test/support/scaleOutServices";
import { migratePostgres, openPostgresStore } from "./postgres";
import { createSortableIds } from "./sortableIds";
import { openSqliteStore } from "./sqlite";
import type {
  AuditRecord,
  Conversation,
  DeliveryAttempt,
  Message,
  NewAgent,
  NewApiKey,
  Notification,
  Store,
  StoredEvent,
  UsageGroupBy,
  UsageRow,
  UsageSummary,
} from "./types";
import { type UsageCounts, emptyCounts } from "../usage/columns";

/**
 * One contract for every Store engine: each test runs on SQLite and on PostgreSQL, from empty tables, and
 * asserts what callers rely on, so an engine passes only by behaving exactly like the other.
 */

/** Children first, so deleting in this order never trips a foreign key. */
const TABLES = [
  "tab_usage",
  "tab_usage_days",
  "tab_usage_weeks",
  "audit_log",
  "delivery_attempts",
  "events",
  "notifications",
  "messages",
  "conversation_members",
  "conversations",
  "sessions",
  "agent_sockets",
  "api_keys",
  "agents",
  "users",
  "workspaces",
];
const MIGRATIONS = [
  "0001_workspaces_users_keys",
  "0002_conversations_agents_outbox",
  "0003_sessions",
  "0004_agent_sockets",
  "0005_sessions_by_key",
  "0006_audit_log",
  "0007_tab_usage",
  "0008_tab_usage_next_edits",
];

interface Harness {
  store: Store;
  /** Empties every table, keeping the schema. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

interface Engine {
  name: string;
  /** Why the engine cannot run here; its tests then skip, saying so. */
  unavailable?: string | undefined;
  start(): Promise<Harness>;
}

const sqliteEngine: Engine = {
  name: "SQLite",
  async start() {
    const dir = mkdtempSync(join(tmpdir(), "tab-relay-contract-"));
    const path = join(dir, "relay.db");
    const store = await openSqliteStore(path);
    const raw = new SqliteDatabase(path);
    raw.pragma("busy_timeout = 5000");
    return {
      store,
      async reset() {
        for (const table of TABLES) raw.exec(`delete from ${table}`);
      },
      async close() {
        raw.close();
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const createdDatabases: string[] = [];

/**
 * A new, empty database for this run. It gets a linguistic (ICU) collation where the server has one: that orders `_`
 * and lower case unlike SQLite, so the byte-order test fails if the schema leaves ordering to the database's default.
 */
async function freshDatabase(): Promise<string> {
  const name = `tab_relay_contract_${randomBytes(6).toString("hex")}`;
  await withAdmin(async (admin) => {
    try {
      await admin.query(
        `create database ${name} template template0 locale_provider icu icu_locale 'en-US' locale 'C.UTF-8'`,
      );
    } catch {
      await admin.query(`create database ${name}`);
    }
  });
  createdDatabases.push(name);
  return `postgres://postgres@${POSTGRES_HOST}/${name}`;
}

async function dropDatabases(): Promise<void> {
  await dropScratchDatabases(createdDatabases.splice(0));
}

const postgresEngine: Engine = {
  name: "PostgreSQL",
  unavailable: await postgresProblem().then(
    (problem) => problem && `${problem}: the PostgreSQL store contract tests did not run`,
  ),
  async start() {
    const url = await freshDatabase();
    const store = await openPostgresStore(url, { poolSize: 4 });
    const raw = new pg.Client({ connectionString: url });
    await raw.connect();
    return {
      store,
      async reset() {
        await raw.query(`truncate ${TABLES.join(", ")}`);
      },
      async close() {
        await raw.end();
        await store.close();
        await dropDatabases();
      },
    };
  },
};

/** `seconds` after a fixed instant, as the ISO text the store keeps. */
function at(seconds: number): string {
  return new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString();
}

const WS = "ws_acme";
const OLIVE = "usr_olive";
const BOB = "usr_bob";

async function seedWorkspace(store: Store): Promise<void> {
  await store.workspaces.create({ id: WS, slug: "acme", name: "Acme", createdAt: at(0) });
  await store.users.create({ id: OLIVE, workspaceId: WS, name: "Olive", role: "owner", createdAt: at(1) });
  await store.users.create({ id: BOB, workspaceId: WS, name: "Bob", role: "member", createdAt: at(2) });
}

function newAgent(id: string, extra: Partial<NewAgent> = {}): NewAgent {
  return {
    id,
    workspaceId: WS,
    ownerUserId: OLIVE,
    name: id,
    description: `the ${id} agent`,
    webhookUrl: `https://agents.test/${id}`,
    tokenHash: `token-hash-${id}`,
    tokenHint: "tr_a…",
    signingSecret: `whsec_${id}`,
    createdAt: at(10),
    ...extra,
  };
}

function newEvent(id: string, agentId: string, extra: Partial<StoredEvent> = {}): StoredEvent {
  return {
    id,
    workspace_id: WS,
    agent_id: agentId,
    type: "message.created",
    payload: JSON.stringify({ id }),
    status: "pending",
    attempts: 0,
    next_attempt_at: at(100),
    next_trigger: "scheduled",
    retries: 1,
    sending: false,
    created_at: at(100),
    updated_at: at(100),
    ...extra,
  };
}

function newAttempt(id: string, event: StoredEvent, extra: Partial<DeliveryAttempt> = {}): DeliveryAttempt {
  return {
    id,
    event_id: event.id,
    agent_id: event.agent_id,
    attempt: 1,
    trigger: "scheduled",
    url: "https://agents.test/hook",
    started_at: at(200),
    duration_ms: 42,
    status_code: 500,
    error: null,
    response_excerpt: "boom",
    outcome: "failed",
    next_attempt_at: at(260),
    ...extra,
  };
}

function channel(
  id: string,
  name: string,
  visibility: "public" | "private",
  createdAt = at(20),
): Conversation & { dm_key: null } {
  return {
    id,
    workspace_id: WS,
    type: "channel",
    name,
    visibility,
    created_by: OLIVE,
    created_at: createdAt,
    dm_key: null,
  };
}

function dm(id: string, dmKey: string): Conversation & { dm_key: string } {
  return {
    id,
    workspace_id: WS,
    type: "dm",
    name: null,
    visibility: null,
    created_by: OLIVE,
    created_at: at(20),
    dm_key: dmKey,
  };
}

function message(id: string, conversationId: string, extra: Partial<Message> = {}): Message {
  return {
    id,
    workspace_id: WS,
    conversation_id: conversationId,
    thread_id: null,
    author: { id: OLIVE, type: "user", name: "Olive" },
    text: `text of ${id}`,
    aside: false,
    mentions: [],
    created_at: at(30),
    ...extra,
  };
}

const ids = (rows: readonly { id: string }[]) => rows.map((row) => row.id);

const engines = [sqliteEngine, postgresEngine];

for (const engine of engines) {
  describe(`the store contract on ${engine.name}`, () => {
    if (engine.unavailable !== undefined) {
      const reason = engine.unavailable;
      test(`runs on ${engine.name}`, (t) => {
        // eslint-disable-next-line no-console -- a skipped engine must stand out in `npm test` output
        console.error(`SKIPPED: ${reason}`);
        t.skip(reason);
      });
      return;
    }

    let harness: Harness;
    let store: Store;
    before(async () => {
      harness = await engine.start();
      store = harness.store;
    });
    after(() => harness.close());
    beforeEach(() => harness.reset());

    describe("workspaces", () => {
      test("are created, found by slug and counted", async () => {
        assert.equal(await store.workspaces.count(), 0);
        const created = await store.workspaces.create({ id: WS, slug: "acme", name: "Acme", createdAt: at(0) });
        assert.deepEqual(created, { id: WS, slug: "acme", name: "Acme", created_at: at(0) });
        await store.workspaces.create({ id: "ws_other", slug: "other", name: "Other", createdAt: at(1) });
        assert.equal(await store.workspaces.count(), 2);
        assert.deepEqual(await store.workspaces.getBySlug("acme"), created);
        assert.equal(await store.workspaces.getBySlug("nobody"), undefined);
      });

      test("are listed oldest first, then by id", async () => {
        assert.deepEqual(await store.workspaces.list(), []);
        await store.workspaces.create({ id: "ws_c", slug: "c", name: "C", createdAt: at(2) });
        await store.workspaces.create({ id: "ws_b", slug: "b", name: "B", createdAt: at(1) });
        await store.workspaces.create({ id: "ws_a", slug: "a", name: "A", createdAt: at(2) });
        assert.deepEqual(await store.workspaces.list(), [
          { id: "ws_b", slug: "b", name: "B", created_at: at(1) },
          { id: "ws_a", slug: "a", name: "A", created_at: at(2) },
          { id: "ws_c", slug: "c", name: "C", created_at: at(2) },
        ]);
      });

      test("refuse a second workspace with the same slug", async () => {
        await store.workspaces.create({ id: WS, slug: "acme", name: "Acme", createdAt: at(0) });
        await assert.rejects(
          store.workspaces.create({ id: "ws_2", slug: "acme", name: "Acme again", createdAt: at(1) }),
        );
        assert.equal(await store.workspaces.count(), 1);
      });
    });

    describe("users", () => {
      test("are read within their own workspace only", async () => {
        await seedWorkspace(store);
        await store.workspaces.create({ id: "ws_other", slug: "other", name: "Other", createdAt: at(0) });
        assert.deepEqual(await store.users.get(WS, OLIVE), {
          id: OLIVE,
          workspace_id: WS,
          name: "Olive",
          role: "owner",
          created_at: at(1),
          removed_at: null,
        });
        assert.equal(await store.users.get("ws_other", OLIVE), undefined);
        assert.equal(await store.users.get(WS, "usr_nobody"), undefined);
      });

      test("are listed by creation time then id, without removed users", async () => {
        await store.workspaces.create({ id: WS, slug: "acme", name: "Acme", createdAt: at(0) });
        await store.users.create({ id: "usr_c", workspaceId: WS, name: "C", role: "member", createdAt: at(2) });
        await store.users.create({ id: "usr_b", workspaceId: WS, name: "B", role: "admin", createdAt: at(1) });
        await store.users.create({ id: "usr_a", workspaceId: WS, name: "A", role: "guest", createdAt: at(2) });
        assert.deepEqual(ids(await store.users.list(WS)), ["usr_b", "usr_a", "usr_c"]);
        assert.equal(await store.users.remove(WS, "usr_a", at(3)), true);
        assert.deepEqual(ids(await store.users.list(WS)), ["usr_b", "usr_c"]);
        assert.equal((await store.users.get(WS, "usr_a"))?.removed_at, at(3));
      });

      test("are removed once, and only from their own workspace", async () => {
        await seedWorkspace(store);
        await store.workspaces.create({ id: "ws_other", slug: "other", name: "Other", createdAt: at(0) });
        assert.equal(await store.users.remove("ws_other", BOB, at(5)), false);
        assert.equal(await store.users.remove(WS, BOB, at(5)), true);
        assert.equal(await store.users.remove(WS, BOB, at(6)), false);
        assert.equal((await store.users.get(WS, BOB))?.removed_at, at(5));
        assert.equal(await store.users.remove(WS, "usr_nobody", at(6)), false);
      });

      test("change roles only of people still in their own workspace, and count the owners still there", async () => {
        await seedWorkspace(store);
        await store.workspaces.create({ id: "ws_other", slug: "other", name: "Other", createdAt: at(0) });
        assert.equal(await store.users.countOwners(WS), 1);
        assert.equal(await store.users.setRole("ws_other", BOB, "owner"), false);
        assert.equal(await store.users.setRole(WS, BOB, "owner"), true);
        assert.equal((await store.users.get(WS, BOB))?.role, "owner");
        assert.equal(await store.users.countOwners(WS), 2);
        assert.equal(await store.users.countOwners("ws_other"), 0);
        await store.users.remove(WS, OLIVE, at(5));
        assert.equal(await store.users.countOwners(WS), 1);
        assert.equal(await store.users.setRole(WS, OLIVE, "admin"), false);
        assert.equal((await store.users.get(WS, OLIVE))?.role, "owner");
      });

      test("counted in a transaction, the owners are held: a second count waits for the first transaction's change", async () => {
        await seedWorkspace(store);
        await store.users.setRole(WS, BOB, "owner");
        let releaseFirst = () => {};
        let counted = () => {};
        const firstCounted = new Promise<void>((resolve) => (counted = resolve));
        const first = store.transaction(async (tx) => {
          const owners = await tx.users.countOwners(WS);
          counted();
          await new Promise<void>((resolve) => (releaseFirst = resolve));
          if (owners > 1) await tx.users.setRole(WS, BOB, "member");
          return owners;
        });
        await firstCounted;
        const second = store.transaction(async (tx) => {
          const owners = await tx.users.countOwners(WS);
          if (owners > 1) await tx.users.setRole(WS, OLIVE, "member");
          return owners;
        });
        // Nothing announces that a transaction is waiting for a lock: the pause gives a count that does not wait
        // the time to read two owners, which the assertion below would catch.
        await new Promise((resolve) => setTimeout(resolve, 50));
        releaseFirst();
        assert.deepEqual(await Promise.all([first, second]), [2, 1]);
        assert.equal(await store.users.countOwners(WS), 1);
        assert.equal((await store.users.get(WS, OLIVE))?.role, "owner");
      });
    });

    describe("API keys", () => {
      const key = (id: string, createdAt: string, extra: Partial<NewApiKey> = {}): NewApiKey => ({
        id,
        workspaceId: WS,
        userId: BOB,
        name: `key ${id}`,
        scopes: ["tab.complete"],
        secretHash: `hash-${id}`,
        hint: "tr_…abcd",
        createdAt,
        ...extra,
      });

      test("find their key, user and workspace by the secret's hash", async () => {
        await seedWorkspace(store);
        const created = await store.apiKeys.create(key("key_1", at(3), { scopes: ["tab.complete", "messages.read"] }));
        assert.deepEqual(created, {
          id: "key_1",
          workspace_id: WS,
          user_id: BOB,
          name: "key key_1",
          scopes: ["tab.complete", "messages.read"],
          hint: "tr_…abcd",
          created_at: at(3),
          revoked_at: null,
        });
        assert.deepEqual(await store.apiKeys.findOwnerByHash("hash-key_1"), {
          key: created,
          user: { id: BOB, workspace_id: WS, name: "Bob", role: "member", created_at: at(2), removed_at: null },
          workspace: { id: WS, slug: "acme", name: "Acme", created_at: at(0) },
        });
        assert.equal(await store.apiKeys.findOwnerByHash("hash-unknown"), undefined);
        assert.deepEqual(await store.apiKeys.get(WS, "key_1"), created);
        assert.equal(await store.apiKeys.get("ws_other", "key_1"), undefined);
      });

      test("the owner lookup shows a revocation, a removal and a rolled-back revocation right after an earlier lookup", async () => {
        await seedWorkspace(store);
        await store.apiKeys.create(key("key_1", at(3)));
        assert.equal((await store.apiKeys.findOwnerByHash("hash-key_1"))?.key.revoked_at, null);

        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.apiKeys.revoke(WS, "key_1", at(4));
            await store.apiKeys.findOwnerByHash("hash-key_1");
            throw new Error("changed my mind");
          }),
          /changed my mind/,
        );
        assert.equal((await store.apiKeys.findOwnerByHash("hash-key_1"))?.key.revoked_at, null, "the rollback is seen");

        assert.equal(await store.apiKeys.revoke(WS, "key_1", at(5)), true);
        assert.equal((await store.apiKeys.findOwnerByHash("hash-key_1"))?.key.revoked_at, at(5));

        await store.apiKeys.create(key("key_2", at(6)));
        assert.equal((await store.apiKeys.findOwnerByHash("hash-key_2"))?.user.removed_at, null);
        assert.equal(await store.users.remove(WS, BOB, at(7)), true);
        assert.equal((await store.apiKeys.findOwnerByHash("hash-key_2"))?.user.removed_at, at(7));
      });

      test("are listed newest first for their user", async () => {
        await seedWorkspace(store);
        await store.apiKeys.create(key("key_old", at(3)));
        await store.apiKeys.create(key("key_b", at(4)));
        await store.apiKeys.create(key("key_a", at(4)));
        await store.apiKeys.create(key("key_olive", at(5), { userId: OLIVE }));
        assert.deepEqual(ids(await store.apiKeys.listForUser(WS, BOB)), ["key_a", "key_b", "key_old"]);
        assert.deepEqual(ids(await store.apiKeys.listForUser(WS, OLIVE)), ["key_olive"]);
        assert.deepEqual(await store.apiKeys.listForUser("ws_other", BOB), []);
      });

      test("are revoked once, and the owner lookup then shows the revocation", async () => {
        await seedWorkspace(store);
        await store.apiKeys.create(key("key_1", at(3)));
        assert.equal(await store.apiKeys.revoke("ws_other", "key_1", at(4)), false);
        assert.equal(await store.apiKeys.revoke(WS, "key_1", at(4)), true);
        assert.equal(await store.apiKeys.revoke(WS, "key_1", at(5)), false);
        assert.equal((await store.apiKeys.get(WS, "key_1"))?.revoked_at, at(4));
        assert.equal((await store.apiKeys.findOwnerByHash("hash-key_1"))?.key.revoked_at, at(4));
      });

      test("refuse a secret hash that is already taken", async () => {
        await seedWorkspace(store);
        await store.apiKeys.create(key("key_1", at(3), { secretHash: "same" }));
        await assert.rejects(store.apiKeys.create(key("key_2", at(3), { secretHash: "same" })));
      });
    });

    describe("agents", () => {
      test("are created, and read back without their token hash or signing secret", async () => {
        await seedWorkspace(store);
        const expected = {
          id: "agt_1",
          workspace_id: WS,
          owner_user_id: OLIVE,
          name: "agt_1",
          description: "the agt_1 agent",
          webhook_url: "https://agents.test/agt_1",
          state: "active",
          token_hint: "tr_a…",
          created_at: at(10),
          updated_at: at(10),
        };
        const created = await store.agents.create(newAgent("agt_1"));
        assert.deepEqual(created, expected, "exactly the agent's fields: no token hash, no signing secret");
        assert.deepEqual(await store.agents.get(WS, "agt_1"), expected);
        assert.equal(await store.agents.get("ws_other", "agt_1"), undefined);
        assert.deepEqual(await store.agents.findByTokenHash("token-hash-agt_1"), {
          agent: expected,
          workspace: { id: WS, slug: "acme", name: "Acme", created_at: at(0) },
        });
        assert.equal(await store.agents.findByTokenHash("token-hash-nobody"), undefined);
      });

      test("are listed by creation time then id", async () => {
        await seedWorkspace(store);
        await store.agents.create(newAgent("agt_c", { createdAt: at(11) }));
        await store.agents.create(newAgent("agt_b", { createdAt: at(12) }));
        await store.agents.create(newAgent("agt_a", { createdAt: at(11), webhookUrl: null }));
        assert.deepEqual(ids(await store.agents.list(WS)), ["agt_a", "agt_c", "agt_b"]);
        assert.equal((await store.agents.get(WS, "agt_a"))?.webhook_url, null);
      });

      test("are updated, and a replaced token hash stops matching", async () => {
        await seedWorkspace(store);
        await store.agents.create(newAgent("agt_1"));
        const updated = await store.agents.update(
          WS,
          "agt_1",
          { name: "Renamed", state: "paused", webhook_url: null, token_hash: "new-hash", token_hint: "tr_n…" },
          at(50),
        );
        assert.deepEqual(updated, {
          id: "agt_1",
          workspace_id: WS,
          owner_user_id: OLIVE,
          name: "Renamed",
          description: "the agt_1 agent",
          webhook_url: null,
          state: "paused",
          token_hint: "tr_n…",
          created_at: at(10),
          updated_at: at(50),
        });
        assert.equal(await store.agents.findByTokenHash("token-hash-agt_1"), undefined);
        assert.equal((await store.agents.findByTokenHash("new-hash"))?.agent.name, "Renamed");
        assert.equal(await store.agents.update(WS, "agt_nobody", { name: "x" }, at(51)), undefined);
        assert.equal(await store.agents.update("ws_other", "agt_1", { name: "x" }, at(51)), undefined);
      });

      test("are removed once: gone from reads, their token hash replaced so it can be used again", async () => {
        await seedWorkspace(store);
        await store.agents.create(newAgent("agt_1"));
        assert.equal(await store.agents.remove("ws_other", "agt_1", at(60)), false);
        assert.equal(await store.agents.remove(WS, "agt_1", at(60)), true);
        assert.equal(await store.agents.remove(WS, "agt_1", at(61)), false);
        assert.equal(await store.agents.get(WS, "agt_1"), undefined);
        assert.deepEqual(await store.agents.list(WS), []);
        assert.equal(await store.agents.findByTokenHash("token-hash-agt_1"), undefined);
        assert.equal(await store.agents.update(WS, "agt_1", { name: "back" }, at(62)), undefined);
        await store.agents.create(newAgent("agt_2", { tokenHash: "token-hash-agt_1" }));
        assert.equal((await store.agents.findByTokenHash("token-hash-agt_1"))?.agent.id, "agt_2");
      });
    });

    describe("conversations", () => {
      test("channels and DMs are read by type and id, channel name and DM key", async () => {
        await seedWorkspace(store);
        const general = await store.conversations.create(channel("cnv_general", "general", "public"));
        const { dm_key: _key, ...generalRow } = channel("cnv_general", "general", "public");
        assert.deepEqual(general, generalRow);
        await store.conversations.create(dm("cnv_dm", `${BOB}+${OLIVE}`));
        assert.deepEqual(await store.conversations.get(WS, "channel", "cnv_general"), generalRow);
        assert.equal(await store.conversations.get(WS, "dm", "cnv_general"), undefined);
        assert.equal(await store.conversations.get("ws_other", "channel", "cnv_general"), undefined);
        assert.deepEqual(await store.conversations.findChannel(WS, "general"), generalRow);
        assert.equal(await store.conversations.findChannel(WS, "random"), undefined);
        assert.equal(await store.conversations.findChannel("ws_other", "general"), undefined);
        assert.deepEqual(await store.conversations.findDm(WS, `${BOB}+${OLIVE}`), {
          id: "cnv_dm",
          workspace_id: WS,
          type: "dm",
          name: null,
          visibility: null,
          created_by: OLIVE,
          created_at: at(20),
        });
        assert.equal(await store.conversations.findDm(WS, "usr_x+usr_y"), undefined);
      });

      test("a channel name and a DM key are each taken once per workspace", async () => {
        await seedWorkspace(store);
        await store.conversations.create(channel("cnv_1", "general", "public"));
        await assert.rejects(store.conversations.create(channel("cnv_2", "general", "private")));
        await store.conversations.create(dm("cnv_dm1", "a+b"));
        await assert.rejects(store.conversations.create(dm("cnv_dm2", "a+b")));
        await store.conversations.create(dm("cnv_dm3", "a+c"));
      });

      test("members are added once, checked, and listed in joining order", async () => {
        await seedWorkspace(store);
        await store.conversations.create(channel("cnv_1", "general", "public"));
        assert.equal(await store.conversations.addMember("cnv_1", { id: OLIVE, type: "user" }, at(21)), true);
        assert.equal(await store.conversations.addMember("cnv_1", { id: OLIVE, type: "user" }, at(22)), false);
        assert.equal(await store.conversations.addMember("cnv_1", { id: "agt_x", type: "agent" }, at(23)), true);
        assert.equal(await store.conversations.addMember("cnv_1", { id: BOB, type: "user" }, at(23)), true);
        assert.equal(await store.conversations.isMember("cnv_1", OLIVE), true);
        assert.equal(await store.conversations.isMember("cnv_1", "usr_nobody"), false);
        assert.deepEqual(await store.conversations.members("cnv_1"), [
          { id: OLIVE, type: "user" },
          { id: "agt_x", type: "agent" },
          { id: BOB, type: "user" },
        ]);
        assert.deepEqual(await store.conversations.members("cnv_none"), []);
      });

      test("listVisible gives a member's conversations, plus public channels when asked, by type then name", async () => {
        await seedWorkspace(store);
        await store.conversations.create(channel("cnv_r", "random", "public"));
        await store.conversations.create(channel("cnv_g", "general", "public"));
        await store.conversations.create(channel("cnv_s", "secret", "private"));
        await store.conversations.create(channel("cnv_p", "plans", "private"));
        await store.conversations.create(dm("cnv_dm", `${BOB}+${OLIVE}`));
        await store.conversations.create(dm("cnv_dm_other", "usr_x+usr_y"));
        for (const id of ["cnv_g", "cnv_p", "cnv_dm"])
          await store.conversations.addMember(id, { id: BOB, type: "user" }, at(21));
        await store.conversations.addMember("cnv_s", { id: OLIVE, type: "user" }, at(21));
        const mine = await store.conversations.listVisible(WS, BOB, false);
        assert.deepEqual(
          mine.map((c) => [c.id, c.is_member]),
          [
            ["cnv_g", true],
            ["cnv_p", true],
            ["cnv_dm", true],
          ],
        );
        assert.deepEqual(mine[0], {
          id: "cnv_g",
          workspace_id: WS,
          type: "channel",
          name: "general",
          visibility: "public",
          created_by: OLIVE,
          created_at: at(20),
          is_member: true,
        });
        const withPublic = await store.conversations.listVisible(WS, BOB, true);
        assert.deepEqual(
          withPublic.map((c) => [c.id, c.is_member]),
          [
            ["cnv_g", true],
            ["cnv_p", true],
            ["cnv_r", false],
            ["cnv_dm", true],
          ],
        );
        assert.deepEqual(await store.conversations.listVisible("ws_other", BOB, true), []);
      });

      test("the directory lists users and agents still in the workspace", async () => {
        await seedWorkspace(store);
        await store.agents.create(newAgent("agt_1", { name: "Helper" }));
        await store.agents.create(newAgent("agt_2", { name: "Gone" }));
        await store.agents.remove(WS, "agt_2", at(30));
        await store.users.remove(WS, BOB, at(30));
        const directory = await store.conversations.directory(WS);
        assert.deepEqual(
          [...directory].sort((a, b) => (a.id < b.id ? -1 : 1)),
          [
            { id: "agt_1", name: "Helper", type: "agent" },
            { id: OLIVE, name: "Olive", type: "user" },
          ],
        );
        assert.deepEqual(await store.conversations.directory("ws_other"), []);
      });

      test("the directory version moves when a user or agent joins, is renamed or leaves, and only then", async () => {
        await store.workspaces.create({ id: WS, slug: "acme", name: "Acme", createdAt: at(0) });
        const versions: number[] = [await store.conversations.directoryVersion(WS)];
        const record = async () => versions.push(await store.conversations.directoryVersion(WS));
        await store.users.create({ id: OLIVE, workspaceId: WS, name: "Olive", role: "owner", createdAt: at(1) });
        await record();
        await store.agents.create(newAgent("agt_1"));
        await record();
        await store.agents.update(WS, "agt_1", { name: "Renamed" }, at(40));
        await record();
        await store.agents.update(WS, "agt_1", { state: "paused", description: "quiet" }, at(41));
        await record();
        await store.agents.remove(WS, "agt_1", at(42));
        await record();
        await store.agents.remove(WS, "agt_1", at(43));
        await record();
        await store.users.remove(WS, OLIVE, at(44));
        await record();
        for (const version of versions) assert.equal(typeof version, "number");
        const moved = versions.slice(1).map((version, i) => version !== versions[i]);
        assert.deepEqual(moved, [true, true, true, false, true, false, true]);
        assert.equal(await store.conversations.directoryVersion("ws_nobody"), 0);
      });
    });

    describe("messages", () => {
      test("keep their author, aside flag and mentions", async () => {
        await seedWorkspace(store);
        await store.conversations.create(channel("cnv_1", "general", "public"));
        const written = message("msg_1", "cnv_1", {
          author: { id: "agt_1", type: "agent", name: "Helper" },
          aside: true,
          mentions: [
            { id: BOB, type: "user", name: "Bob" },
            { id: "agt_2", type: "agent", name: "Other" },
          ],
          thread_id: "msg_0",
          text: "héllo @Bob 👋",
        });
        assert.deepEqual(await store.messages.create(written), written);
        assert.deepEqual(await store.messages.get("cnv_1", "msg_1"), written);
        assert.equal(await store.messages.get("cnv_other", "msg_1"), undefined);
      });

      test("list newest first, page with before, keep to a thread and leave asides out unless asked", async () => {
        await seedWorkspace(store);
        await store.conversations.create(channel("cnv_1", "general", "public"));
        await store.conversations.create(channel("cnv_2", "random", "public"));
        let now = Date.UTC(2026, 0, 1);
        const next = createSortableIds({ now: () => now });
        const made: string[] = [];
        const post = async (extra: Partial<Message> = {}, conversationId = "cnv_1") => {
          now += 1000;
          const id = next("msg");
          await store.messages.create(
            message(id, conversationId, { created_at: new Date(now).toISOString(), ...extra }),
          );
          made.push(id);
          return id;
        };
        const root = await post();
        const reply1 = await post({ thread_id: root });
        const aside = await post({ aside: true });
        const other = await post();
        const reply2 = await post({ thread_id: root, aside: true });
        await post({}, "cnv_2");
        const list = (query: Partial<Parameters<Store["messages"]["list"]>[1]> = {}) =>
          store.messages.list("cnv_1", { limit: 50, includeAsides: true, ...query }).then(ids);
        assert.deepEqual(await list(), [reply2, other, aside, reply1, root]);
        assert.deepEqual(await list({ includeAsides: false }), [other, reply1, root]);
        assert.deepEqual(await list({ limit: 2 }), [reply2, other]);
        assert.deepEqual(await list({ limit: 2, before: other }), [aside, reply1]);
        assert.deepEqual(await list({ threadId: root }), [reply2, reply1, root]);
        assert.deepEqual(await list({ threadId: root, includeAsides: false, before: reply2 }), [reply1, root]);
        assert.deepEqual(await list({ before: root }), []);
      });

      test("agentAuthorsInThread names each agent that wrote the thread's first message or a reply", async () => {
        await seedWorkspace(store);
        await store.conversations.create(channel("cnv_1", "general", "public"));
        const agent = (id: string) => ({ author: { id, type: "agent" as const, name: id } });
        await store.messages.create(message("msg_1", "cnv_1", agent("agt_root")));
        await store.messages.create(message("msg_2", "cnv_1", { thread_id: "msg_1" }));
        await store.messages.create(message("msg_3", "cnv_1", { thread_id: "msg_1", ...agent("agt_reply") }));
        await store.messages.create(message("msg_4", "cnv_1", { thread_id: "msg_1", ...agent("agt_reply") }));
        await store.messages.create(message("msg_5", "cnv_1", agent("agt_elsewhere")));
        await store.messages.create(message("msg_6", "cnv_1", { thread_id: "msg_5", ...agent("agt_other_thread") }));
        assert.deepEqual((await store.messages.agentAuthorsInThread("cnv_1", "msg_1")).sort(), [
          "agt_reply",
          "agt_root",
        ]);
        assert.deepEqual(await store.messages.agentAuthorsInThread("cnv_other", "msg_1"), []);
      });
    });

    describe("events", () => {
      async function seedAgents(): Promise<void> {
        await seedWorkspace(store);
        await store.agents.create(newAgent("agt_a"));
        await store.agents.create(newAgent("agt_b"));
      }

      test("are read back for their agent only, and listed newest first", async () => {
        await seedAgents();
        const first = newEvent("evt_1", "agt_a", { created_at: at(100) });
        await store.events.create(first);
        await store.events.create(newEvent("evt_3", "agt_a", { created_at: at(101) }));
        await store.events.create(newEvent("evt_2", "agt_a", { created_at: at(101) }));
        await store.events.create(newEvent("evt_b", "agt_b", { created_at: at(102) }));
        assert.deepEqual(await store.events.get("agt_a", "evt_1"), first);
        assert.equal(await store.events.get("agt_b", "evt_1"), undefined);
        assert.deepEqual(ids(await store.events.listForAgent("agt_a", 10)), ["evt_3", "evt_2", "evt_1"]);
        assert.deepEqual(ids(await store.events.listForAgent("agt_a", 2)), ["evt_3", "evt_2"]);
      });

      test("are due oldest first, with what the attempt needs from the agent", async () => {
        await seedAgents();
        await store.events.create(newEvent("evt_2", "agt_a", { next_attempt_at: at(100) }));
        await store.events.create(newEvent("evt_1", "agt_b", { next_attempt_at: at(100) }));
        await store.events.create(newEvent("evt_0", "agt_a", { next_attempt_at: at(101) }));
        await store.events.create(newEvent("evt_early", "agt_a", { next_attempt_at: at(99) }));
        await store.events.create(newEvent("evt_later", "agt_a", { next_attempt_at: at(150) }));
        await store.events.create(newEvent("evt_done", "agt_a", { status: "delivered", next_attempt_at: at(90) }));
        const due = await store.events.due(at(120), { limit: 10, skipAgents: new Set(), socketAgents: new Set() });
        assert.deepEqual(
          due.map((d) => d.event.id),
          ["evt_early", "evt_1", "evt_2", "evt_0"],
        );
        assert.deepEqual(due[1], {
          event: newEvent("evt_1", "agt_b", { next_attempt_at: at(100) }),
          webhookUrl: "https://agents.test/agt_b",
          signingSecret: "whsec_agt_b",
        });
        const limited = await store.events.due(at(120), { limit: 2, skipAgents: new Set(), socketAgents: new Set() });
        assert.deepEqual(
          limited.map((d) => d.event.id),
          ["evt_early", "evt_1"],
        );
        const exact = await store.events.due(at(100), { limit: 10, skipAgents: new Set(), socketAgents: new Set() });
        assert.deepEqual(
          exact.map((d) => d.event.id),
          ["evt_early", "evt_1", "evt_2"],
        );
      });

      test("due skips agents that cannot take events, and agents the caller names", async () => {
        await seedWorkspace(store);
        await store.agents.create(newAgent("agt_hook"));
        await store.agents.create(newAgent("agt_socket", { webhookUrl: null }));
        await store.agents.create(newAgent("agt_paused"));
        await store.agents.update(WS, "agt_paused", { state: "paused" }, at(11));
        await store.agents.create(newAgent("agt_removed"));
        await store.events.create(newEvent("evt_1", "agt_hook"));
        await store.events.create(newEvent("evt_2", "agt_socket"));
        await store.events.create(newEvent("evt_3", "agt_paused"));
        await store.events.create(newEvent("evt_4", "agt_paused", { type: "ping" }));
        await store.events.create(newEvent("evt_5", "agt_removed"));
        await store.agents.remove(WS, "agt_removed", at(12));
        const due = (query: { skipAgents?: string[]; socketAgents?: string[]; agentId?: string }) =>
          store.events
            .due(at(200), {
              limit: 10,
              skipAgents: new Set(query.skipAgents),
              socketAgents: new Set(query.socketAgents),
              ...(query.agentId === undefined ? {} : { agentId: query.agentId }),
            })
            .then((rows) => rows.map((row) => row.event.id));
        assert.deepEqual(await due({}), ["evt_1", "evt_4"]);
        assert.deepEqual(await due({ socketAgents: ["agt_socket"] }), ["evt_1", "evt_2", "evt_4"]);
        assert.deepEqual(await due({ socketAgents: ["agt_socket"], skipAgents: ["agt_hook", "agt_socket"] }), [
          "evt_4",
        ]);
        assert.deepEqual(await due({ agentId: "agt_paused" }), ["evt_4"]);
        assert.deepEqual(await due({ agentId: "agt_socket" }), []);
        assert.deepEqual(await due({ agentId: "agt_socket", socketAgents: ["agt_socket"] }), ["evt_2"]);
        const socketOnly = await store.events.due(at(200), {
          limit: 10,
          skipAgents: new Set(),
          socketAgents: new Set(["agt_socket"]),
          agentId: "agt_socket",
        });
        assert.equal(socketOnly[0]?.webhookUrl, null);
      });

      test("a claim keeps events from being due until it lapses, and releasing claims makes them due at once", async () => {
        await seedAgents();
        await store.events.create(newEvent("evt_1", "agt_a"));
        await store.events.create(newEvent("evt_2", "agt_a"));
        await store.events.create(newEvent("evt_done", "agt_a", { status: "delivered" }));
        await store.events.claim(["evt_1", "evt_done"], at(400));
        await store.events.claim([], at(400));
        const claimed = await store.events.get("agt_a", "evt_1");
        assert.equal(claimed?.sending, true);
        assert.equal(claimed?.next_attempt_at, null);
        assert.equal((await store.events.get("agt_a", "evt_done"))?.sending, false);
        const dueIds = async (now: string) =>
          (await store.events.due(now, { limit: 10, skipAgents: new Set(), socketAgents: new Set() })).map(
            (d) => d.event.id,
          );
        assert.deepEqual(await dueIds(at(399)), ["evt_2"]);
        assert.deepEqual(await dueIds(at(400)), ["evt_2", "evt_1"]);
        assert.equal(await store.events.releaseClaims(at(150)), 1);
        assert.equal(await store.events.releaseClaims(at(151)), 0);
        const released = await store.events.get("agt_a", "evt_1");
        assert.equal(released?.sending, false);
        assert.equal(released?.next_attempt_at, at(150));
        assert.deepEqual(await dueIds(at(150)), ["evt_2", "evt_1"]);
      });

      test("dueNow brings an agent's waiting events forward, leaving claimed and finished ones alone", async () => {
        await seedAgents();
        await store.events.create(newEvent("evt_wait", "agt_a", { next_attempt_at: at(500) }));
        await store.events.create(newEvent("evt_past", "agt_a", { next_attempt_at: at(100) }));
        await store.events.create(newEvent("evt_claimed", "agt_a", { next_attempt_at: at(100) }));
        await store.events.create(newEvent("evt_failed", "agt_a", { status: "failed", next_attempt_at: at(500) }));
        await store.events.create(newEvent("evt_other", "agt_b", { next_attempt_at: at(500) }));
        await store.events.claim(["evt_claimed"], at(600));
        assert.equal(await store.events.dueNow("agt_a", at(200)), 1);
        assert.equal((await store.events.get("agt_a", "evt_wait"))?.next_attempt_at, at(200));
        assert.equal((await store.events.get("agt_a", "evt_past"))?.next_attempt_at, at(100));
        assert.equal((await store.events.get("agt_a", "evt_claimed"))?.sending, true);
        assert.equal((await store.events.get("agt_a", "evt_failed"))?.next_attempt_at, at(500));
        assert.equal((await store.events.get("agt_b", "evt_other"))?.next_attempt_at, at(500));
      });

      test("nextDueAt is the earliest later due time among events that could be attempted", async () => {
        await seedWorkspace(store);
        await store.agents.create(newAgent("agt_a"));
        await store.agents.create(newAgent("agt_paused"));
        await store.agents.update(WS, "agt_paused", { state: "paused" }, at(11));
        await store.agents.create(newAgent("agt_socket", { webhookUrl: null }));
        assert.equal(await store.events.nextDueAt(at(0)), undefined);
        await store.events.create(newEvent("evt_1", "agt_a", { next_attempt_at: at(300) }));
        await store.events.create(newEvent("evt_2", "agt_a", { next_attempt_at: at(200) }));
        await store.events.create(newEvent("evt_3", "agt_a", { next_attempt_at: at(100) }));
        await store.events.create(newEvent("evt_4", "agt_a", { status: "delivered", next_attempt_at: at(150) }));
        await store.events.create(newEvent("evt_5", "agt_paused", { next_attempt_at: at(120) }));
        await store.events.create(newEvent("evt_6", "agt_socket", { next_attempt_at: at(110) }));
        assert.equal(await store.events.nextDueAt(at(100)), at(200));
        assert.equal(await store.events.nextDueAt(at(99)), at(100));
        assert.equal(await store.events.nextDueAt(at(300)), undefined);
        await store.events.create(newEvent("evt_7", "agt_paused", { type: "ping", next_attempt_at: at(130) }));
        assert.equal(await store.events.nextDueAt(at(100)), at(130));
      });

      test("recording an attempt keeps it, updates the event and ends its claim", async () => {
        await seedAgents();
        const event = newEvent("evt_1", "agt_a");
        await store.events.create(event);
        await store.events.claim(["evt_1"], at(400));
        const attempt = newAttempt("att_1", event);
        assert.equal(
          await store.events.recordAttempt(
            attempt,
            { status: "pending", attempts: 1, next_attempt_at: at(260), next_trigger: "scheduled", retries: 1 },
            at(201),
            at(400),
          ),
          true,
        );
        assert.deepEqual(await store.events.get("agt_a", "evt_1"), {
          ...event,
          attempts: 1,
          next_attempt_at: at(260),
          updated_at: at(201),
        });
        const success = newAttempt("att_2", event, {
          attempt: 2,
          trigger: "manual",
          started_at: at(300),
          status_code: 200,
          response_excerpt: "",
          outcome: "success",
          next_attempt_at: null,
        });
        await store.events.claim(["evt_1"], at(700));
        await store.events.recordAttempt(
          success,
          { status: "delivered", attempts: 2, next_attempt_at: null, next_trigger: "manual", retries: 0 },
          at(301),
          at(700),
        );
        assert.deepEqual(await store.events.get("agt_a", "evt_1"), {
          ...event,
          status: "delivered",
          attempts: 2,
          next_attempt_at: null,
          next_trigger: "manual",
          retries: 0,
          updated_at: at(301),
        });
        assert.deepEqual(await store.events.attempts(["evt_1"]), [attempt, success]);
      });

      /** Relay A claimed the event until 400, stalled past that lease, and relay B claimed it again until 900. */
      async function claimedTwice(): Promise<StoredEvent> {
        await seedAgents();
        const event = newEvent("evt_1", "agt_a");
        await store.events.create(event);
        await store.events.claim(["evt_1"], at(400));
        await store.events.claim(["evt_1"], at(900));
        return event;
      }

      test("an attempt whose claim lapsed and was taken over is kept and counted, but leaves the event to the new claim", async () => {
        const event = await claimedTwice();
        const stale = newAttempt("att_a", event, { status_code: 500, outcome: "failed", next_attempt_at: at(460) });
        assert.equal(
          await store.events.recordAttempt(
            stale,
            { status: "pending", attempts: 1, next_attempt_at: at(460), next_trigger: "scheduled", retries: 1 },
            at(450),
            at(400),
          ),
          false,
        );
        const dueIds = async (now: string) =>
          (await store.events.due(now, { limit: 10, skipAgents: new Set(), socketAgents: new Set() })).map(
            (d) => d.event.id,
          );
        const afterStale = await store.events.get("agt_a", "evt_1");
        assert.equal(afterStale?.sending, true, "B's claim stands");
        assert.equal(afterStale?.attempts, 1);
        assert.deepEqual(await dueIds(at(800)), [], "not due again while B attempts it");

        // A's stale give-back does not end B's claim either.
        await store.events.unclaim("evt_1", at(455), at(400));
        assert.equal((await store.events.get("agt_a", "evt_1"))?.sending, true);
        assert.deepEqual(await dueIds(at(800)), []);
        assert.deepEqual(await dueIds(at(901)), ["evt_1"], "B's own lease still lapses");

        const fresh = newAttempt("att_b", event, {
          started_at: at(500),
          status_code: 204,
          outcome: "success",
          next_attempt_at: null,
        });
        assert.equal(
          await store.events.recordAttempt(
            fresh,
            { status: "delivered", attempts: 1, next_attempt_at: null, next_trigger: "scheduled", retries: 1 },
            at(501),
            at(900),
          ),
          true,
        );
        assert.equal((await store.events.get("agt_a", "evt_1"))?.status, "delivered");
        assert.deepEqual(await store.events.attempts(["evt_1"]), [{ ...stale, next_attempt_at: null }, fresh]);
      });

      test("recording an attempt does not bring back an event cancelled meanwhile", async () => {
        await seedAgents();
        const event = newEvent("evt_1", "agt_a");
        await store.events.create(event);
        await store.events.claim(["evt_1"], at(400));
        assert.equal(await store.events.cancelPending("agt_a", at(150)), 1);
        const held = await store.events.recordAttempt(
          newAttempt("att_1", event),
          { status: "pending", attempts: 1, next_attempt_at: at(260), next_trigger: "scheduled", retries: 1 },
          at(201),
          at(400),
        );
        assert.equal(held, false);
        const afterwards = await store.events.get("agt_a", "evt_1");
        assert.equal(afterwards?.status, "cancelled");
        assert.equal(afterwards?.next_attempt_at, null);
        assert.equal(afterwards?.attempts, 1, "the attempt happened, so it is counted");
        assert.equal(afterwards?.sending, false);
        assert.deepEqual(ids(await store.events.attempts(["evt_1"])), ["att_1"]);
        assert.equal((await store.events.attempts(["evt_1"]))[0]?.next_attempt_at, null);
        assert.deepEqual(
          await store.events.due(at(1000), { limit: 10, skipAgents: new Set(), socketAgents: new Set() }),
          [],
        );
      });

      test("attempts are listed by event then attempt number, and the latest is the agent's last", async () => {
        await seedAgents();
        const e1 = newEvent("evt_1", "agt_a");
        const e2 = newEvent("evt_2", "agt_a");
        const eb = newEvent("evt_b", "agt_b");
        for (const e of [e1, e2, eb]) await store.events.create(e);
        const update = {
          status: "pending",
          attempts: 1,
          next_attempt_at: at(500),
          next_trigger: "scheduled",
          retries: 1,
        } as const;
        const record = async (attempt: DeliveryAttempt) => {
          await store.events.claim([attempt.event_id], at(1000));
          await store.events.recordAttempt(attempt, update, attempt.started_at, at(1000));
        };
        await record(newAttempt("att_x", e2, { attempt: 2, started_at: at(220) }));
        await record(newAttempt("att_y", e1, { attempt: 1, started_at: at(230) }));
        await record(newAttempt("att_z", e2, { attempt: 1, started_at: at(210) }));
        await record(newAttempt("att_b", eb, { attempt: 1, started_at: at(900) }));
        assert.deepEqual(ids(await store.events.attempts(["evt_2", "evt_1"])), ["att_y", "att_z", "att_x"]);
        assert.deepEqual(await store.events.attempts([]), []);
        assert.equal((await store.events.lastAttempt("agt_a"))?.id, "att_y");
        assert.equal(await store.events.lastAttempt("agt_nobody"), undefined);
      });

      test("schedule with a claim changes the event only while that claim holds it", async () => {
        await claimedTwice();
        await store.events.schedule(
          "evt_1",
          { status: "pending", next_attempt_at: at(450), next_trigger: "scheduled", retries: 1 },
          at(450),
          at(400),
        );
        assert.equal((await store.events.get("agt_a", "evt_1"))?.sending, true);
        await store.events.schedule(
          "evt_1",
          { status: "pending", next_attempt_at: at(460), next_trigger: "scheduled", retries: 1 },
          at(460),
          at(900),
        );
        assert.equal((await store.events.get("agt_a", "evt_1"))?.next_attempt_at, at(460));
        assert.equal((await store.events.get("agt_a", "evt_1"))?.sending, false);
      });

      test("schedule sets the next attempt of any event, ending a claim", async () => {
        await seedAgents();
        const pending = newEvent("evt_1", "agt_a");
        const delivered = newEvent("evt_2", "agt_a", { status: "delivered", next_attempt_at: null });
        await store.events.create(pending);
        await store.events.create(delivered);
        await store.events.claim(["evt_1"], at(400));
        await store.events.schedule(
          "evt_1",
          { status: "pending", next_attempt_at: at(500), next_trigger: "manual", retries: 0 },
          at(300),
        );
        assert.deepEqual(await store.events.get("agt_a", "evt_1"), {
          ...pending,
          next_attempt_at: at(500),
          next_trigger: "manual",
          retries: 0,
          updated_at: at(300),
        });
        await store.events.schedule(
          "evt_2",
          { status: "pending", next_attempt_at: at(310), next_trigger: "manual", retries: 0 },
          at(310),
        );
        assert.deepEqual(await store.events.get("agt_a", "evt_2"), {
          ...delivered,
          status: "pending",
          next_attempt_at: at(310),
          next_trigger: "manual",
          retries: 0,
          updated_at: at(310),
        });
      });

      test("an agent whose socket another relay holds is left to that relay until the record lapses", async () => {
        await seedAgents();
        await store.events.create(newEvent("evt_a", "agt_a"));
        await store.events.create(newEvent("evt_b", "agt_b"));
        const dueIds = async (now: string, socketAgents: string[] = []) =>
          (await store.events.due(now, { limit: 10, skipAgents: new Set(), socketAgents: new Set(socketAgents) })).map(
            (d) => d.event.id,
          );
        await store.agentSockets.mark(["agt_a"], "rly_other", at(1000));
        assert.equal(await store.agentSockets.connected("agt_a", at(500)), true);
        assert.equal(await store.agentSockets.connected("agt_b", at(500)), false);
        assert.deepEqual(await dueIds(at(500)), ["evt_b"], "relay_other delivers agt_a's events");
        assert.deepEqual(
          await dueIds(at(500), ["agt_a"]),
          ["evt_a", "evt_b"],
          "the relay holding the socket delivers them",
        );
        assert.deepEqual(await dueIds(at(1500)), ["evt_a", "evt_b"], "a lapsed record no longer holds them back");
        await store.agentSockets.mark(["agt_a"], "rly_other", at(3000));
        assert.equal(await store.agentSockets.connected("agt_a", at(2000)), true, "marking again renews");
        await store.agentSockets.unmark("agt_a", "rly_other");
        assert.equal(await store.agentSockets.connected("agt_a", at(2000)), false);
        await store.agentSockets.mark(["agt_a", "agt_b"], "rly_gone", at(3000));
        await store.agentSockets.unmarkRelay("rly_gone");
        assert.deepEqual(await dueIds(at(2000)), ["evt_a", "evt_b"]);
      });

      test("cancelPending cancels the agent's pending events only", async () => {
        await seedAgents();
        await store.events.create(newEvent("evt_1", "agt_a"));
        await store.events.create(newEvent("evt_2", "agt_a", { next_attempt_at: at(900) }));
        await store.events.create(newEvent("evt_done", "agt_a", { status: "delivered", next_attempt_at: null }));
        await store.events.create(newEvent("evt_b", "agt_b"));
        assert.equal(await store.events.cancelPending("agt_a", at(150)), 2);
        assert.equal(await store.events.cancelPending("agt_a", at(151)), 0);
        const cancelled = await store.events.get("agt_a", "evt_2");
        assert.deepEqual(
          [cancelled?.status, cancelled?.next_attempt_at, cancelled?.updated_at],
          ["cancelled", null, at(150)],
        );
        assert.equal((await store.events.get("agt_a", "evt_done"))?.status, "delivered");
        assert.equal((await store.events.get("agt_b", "evt_b"))?.status, "pending");
      });
    });

    describe("notifications", () => {
      test("are listed newest first for their user, paging with before", async () => {
        await seedWorkspace(store);
        const notification = (id: string, userId = BOB): Notification => ({
          id,
          workspace_id: WS,
          user_id: userId,
          type: "mention",
          conversation_id: "cnv_1",
          message_id: `msg_${id}`,
          created_at: at(30),
          read_at: null,
        });
        for (const id of ["ntf_2", "ntf_1", "ntf_3"]) await store.notifications.create(notification(id));
        await store.notifications.create(notification("ntf_9", OLIVE));
        assert.deepEqual(await store.notifications.listForUser(BOB, { limit: 10 }), [
          notification("ntf_3"),
          notification("ntf_2"),
          notification("ntf_1"),
        ]);
        assert.deepEqual(ids(await store.notifications.listForUser(BOB, { limit: 1 })), ["ntf_3"]);
        assert.deepEqual(ids(await store.notifications.listForUser(BOB, { limit: 10, before: "ntf_3" })), [
          "ntf_2",
          "ntf_1",
        ]);
        assert.deepEqual(ids(await store.notifications.listForUser(OLIVE, { limit: 10, before: undefined })), [
          "ntf_9",
        ]);
      });
    });

    describe("sessions", () => {
      test("are found by token hash with their key's owner, and end once", async () => {
        await seedWorkspace(store);
        const key = await store.apiKeys.create({
          id: "key_1",
          workspaceId: WS,
          userId: BOB,
          name: "console",
          scopes: ["messages.read"],
          secretHash: "key-hash",
          hint: "tr_…",
          createdAt: at(3),
        });
        const session = { id: "ses_1", api_key_id: "key_1", created_at: at(4), expires_at: at(86_400), ended_at: null };
        assert.deepEqual(await store.sessions.create({ ...session, token_hash: "cookie-hash" }), session);
        const found = await store.sessions.findByTokenHash("cookie-hash");
        assert.deepEqual(found, {
          session,
          owner: {
            key,
            user: { id: BOB, workspace_id: WS, name: "Bob", role: "member", created_at: at(2), removed_at: null },
            workspace: { id: WS, slug: "acme", name: "Acme", created_at: at(0) },
          },
        });
        assert.equal(await store.sessions.findByTokenHash("other-hash"), undefined);
        assert.equal(await store.sessions.end("ses_1", at(5)), true);
        assert.equal(await store.sessions.end("ses_1", at(6)), false);
        assert.equal(await store.sessions.end("ses_nobody", at(6)), false);
        assert.equal((await store.sessions.findByTokenHash("cookie-hash"))?.session.ended_at, at(5));
      });

      test("past the cap, a key's oldest live sessions end; ended, expired and other keys' sessions are left alone", async () => {
        await seedWorkspace(store);
        const key = (id: string, userId: string) =>
          store.apiKeys.create({
            id,
            workspaceId: WS,
            userId,
            name: id,
            scopes: ["messages.read"],
            secretHash: `hash-${id}`,
            hint: "tr_…",
            createdAt: at(3),
          });
        await key("key_1", BOB);
        await key("key_2", OLIVE);
        const session = (
          id: string,
          apiKeyId: string,
          created: number,
          extra: { expires?: number; ended?: number } = {},
        ) =>
          store.sessions.create({
            id,
            api_key_id: apiKeyId,
            token_hash: `cookie-${id}`,
            created_at: at(created),
            expires_at: at(extra.expires ?? 86_400),
            ended_at: extra.ended === undefined ? null : at(extra.ended),
          });
        await session("ses_a", "key_1", 10);
        await session("ses_b", "key_1", 20);
        // Made within the same instant: the id orders them.
        await session("ses_c1", "key_1", 30);
        await session("ses_c2", "key_1", 30);
        await session("ses_d", "key_1", 40);
        await session("ses_gone", "key_1", 5, { ended: 6 });
        await session("ses_lapsed", "key_1", 1, { expires: 50 });
        await session("ses_other", "key_2", 1);
        const endedAt = (id: string) =>
          store.sessions.findByTokenHash(`cookie-${id}`).then((found) => found?.session.ended_at);

        assert.deepEqual(await store.sessions.endOldest("key_1", 5, at(100)), []);
        assert.deepEqual((await store.sessions.endOldest("key_1", 2, at(100))).sort(), ["ses_a", "ses_b", "ses_c1"]);
        for (const id of ["ses_a", "ses_b", "ses_c1"]) assert.equal(await endedAt(id), at(100), id);
        for (const id of ["ses_c2", "ses_d", "ses_lapsed", "ses_other"]) assert.equal(await endedAt(id), null, id);
        assert.equal(await endedAt("ses_gone"), at(6));
        assert.deepEqual(await store.sessions.endOldest("key_1", 2, at(101)), []);
        assert.deepEqual(await store.sessions.endOldest("key_1", 0, at(102)), ["ses_d", "ses_c2"]);
        assert.deepEqual(await store.sessions.endOldest("key_nobody", 0, at(103)), []);
      });
    });

    describe("the audit log", () => {
      const record = (id: string, seconds: number, extra: Partial<AuditRecord> = {}): AuditRecord => ({
        id,
        workspace_id: WS,
        at: at(seconds),
        action: "api_key.created",
        actor_user_id: OLIVE,
        via: "api_key",
        via_id: "key_1",
        address: "203.0.113.7",
        target_type: "api_key",
        target_id: "key_2",
        details: JSON.stringify({ scopes: ["tab.complete"] }),
        ...extra,
      });

      test("keeps each record as written and lists the workspace's own, newest first", async () => {
        const failed = {
          action: "session.sign_in_failed",
          actor_user_id: null,
          via: "none",
          via_id: null,
          target_type: null,
          target_id: null,
        } as const;
        await store.audit.create(record("aud_1", 1));
        await store.audit.create(record("aud_2", 2, failed));
        await store.audit.create(record("aud_3", 3, { workspace_id: "ws_other" }));
        await store.audit.create(
          record("aud_4", 4, {
            action: "user.role_changed",
            actor_user_id: BOB,
            target_type: "user",
            target_id: OLIVE,
          }),
        );
        const rows = await store.audit.list(WS, { limit: 10 });
        assert.deepEqual(ids(rows), ["aud_4", "aud_2", "aud_1"]);
        assert.deepEqual(rows[1], record("aud_2", 2, failed));
        assert.deepEqual(rows[2], record("aud_1", 1));
        assert.deepEqual(ids(await store.audit.list("ws_other", { limit: 10 })), ["aud_3"]);
      });

      test("filter by time (since inclusive, until exclusive), actor and action, and page with before and limit", async () => {
        for (let i = 1; i <= 6; i++)
          await store.audit.create(
            record(`aud_${i}`, i * 10, i % 2 === 0 ? { actor_user_id: BOB, action: "agent.paused" } : {}),
          );
        assert.deepEqual(ids(await store.audit.list(WS, { limit: 10, since: at(20), until: at(50) })), [
          "aud_4",
          "aud_3",
          "aud_2",
        ]);
        assert.deepEqual(ids(await store.audit.list(WS, { limit: 10, actor: BOB })), ["aud_6", "aud_4", "aud_2"]);
        assert.deepEqual(ids(await store.audit.list(WS, { limit: 10, action: "api_key.created" })), [
          "aud_5",
          "aud_3",
          "aud_1",
        ]);
        assert.deepEqual(ids(await store.audit.list(WS, { limit: 2 })), ["aud_6", "aud_5"]);
        assert.deepEqual(ids(await store.audit.list(WS, { limit: 2, before: "aud_5" })), ["aud_4", "aud_3"]);
        assert.deepEqual(ids(await store.audit.list(WS, { limit: 2, before: "aud_5", actor: BOB, since: at(30) })), [
          "aud_4",
        ]);
      });

      test("prune deletes exactly the records older than the given time, in every workspace", async () => {
        await store.audit.create(record("aud_1", 1));
        await store.audit.create(record("aud_2", 2, { workspace_id: "ws_other" }));
        await store.audit.create(record("aud_3", 3, { workspace_id: "ws_third" }));
        await store.audit.create(record("aud_4", 4));
        assert.equal(await store.audit.prune(at(4)), 3);
        assert.deepEqual(ids(await store.audit.list(WS, { limit: 10 })), ["aud_4"]);
        assert.equal(await store.audit.prune(at(4)), 0);
      });

      test("a record written in a transaction that fails is not kept", async () => {
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.audit.create(record("aud_1", 1));
            throw new Error("the change failed");
          }),
        );
        assert.deepEqual(await store.audit.list(WS, { limit: 10 }), []);
      });
    });

    describe("Tab usage aggregates", () => {
      const row = (day: string, user: string, language: string, counts: Partial<UsageCounts> = {}): UsageRow => ({
        workspace_id: WS,
        day,
        user_id: user,
        language,
        model: "tab-v1",
        ...emptyCounts(),
        ...counts,
      });
      const keys = (rows: UsageSummary[]) => rows.map((r) => r.key);

      test("add merges counts into the row of the same key, across calls, and keeps other keys apart", async () => {
        await store.usage.add([
          row("2026-11-01", OLIVE, "typescript", { requests: 2, shown: 1, accepted: 1, ghost_ms_b2: 1 }),
          row("2026-11-01", BOB, "typescript", { requests: 1 }),
        ]);
        await store.usage.add([
          row("2026-11-01", OLIVE, "typescript", { requests: 3, accepted_chars: 40, ghost_ms_b2: 2, ghost_ms_b12: 1 }),
          row("2026-11-02", OLIVE, "python", { requests: 1, errors: 1 }),
        ]);
        const [olive] = await store.usage.summarize(WS, {
          since: "2026-11-01",
          until: "2026-11-02",
          userId: OLIVE,
          groupBy: "day",
        });
        assert.deepEqual(olive, {
          ...emptyCounts(),
          key: "2026-11-01",
          users: 1,
          requests: 5,
          shown: 1,
          accepted: 1,
          accepted_chars: 40,
          ghost_ms_b2: 3,
          ghost_ms_b12: 1,
        });
      });

      test("summarize sums per day, user, language, model or all, within [since, until) and the workspace", async () => {
        await store.usage.add([
          row("2026-11-01", OLIVE, "typescript", { requests: 1 }),
          row("2026-11-01", BOB, "python", { requests: 2 }),
          row("2026-11-02", OLIVE, "python", { requests: 4 }),
          row("2026-11-03", BOB, "typescript", { requests: 8 }),
          { ...row("2026-11-02", OLIVE, "go", { requests: 16 }), workspace_id: "ws_other" },
        ]);
        const range = { since: "2026-11-01", until: "2026-11-03" };
        const by = (groupBy: UsageGroupBy, userId?: string) =>
          store.usage.summarize(WS, { ...range, groupBy, ...(userId === undefined ? {} : { userId }) });
        const days = await by("day");
        assert.deepEqual(keys(days), ["2026-11-01", "2026-11-02"]);
        assert.deepEqual(
          days.map((d) => [d.requests, d.users]),
          [
            [3, 2],
            [4, 1],
          ],
        );
        assert.deepEqual(
          (await by("language")).map((d) => [d.key, d.requests]),
          [
            ["python", 6],
            ["typescript", 1],
          ],
        );
        assert.deepEqual(
          (await by("user")).map((d) => [d.key, d.requests]),
          [
            [BOB, 2],
            [OLIVE, 5],
          ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
        );
        assert.deepEqual(
          (await by("model")).map((d) => [d.key, d.requests]),
          [["tab-v1", 7]],
        );
        assert.deepEqual(
          (await by("all")).map((d) => [d.key, d.requests, d.users]),
          [["", 7, 2]],
        );
        assert.deepEqual(
          (await by("all", OLIVE)).map((d) => [d.requests, d.users]),
          [[5, 1]],
        );
        assert.deepEqual(
          await store.usage.summarize(WS, { since: "2027-01-01", until: "2027-02-01", groupBy: "all" }),
          [],
        );
      });

      test("by person over weeks, the weekly roll-up and the days either side add up exactly as the daily rows do", async () => {
        const rows: UsageRow[] = [];
        // 2026-10-01 to 2026-11-19: seven whole weeks and parts of two, for two people in two languages.
        for (let d = 0; d < 50; d++) {
          const day = new Date(Date.UTC(2026, 9, 1) + d * 86_400_000).toISOString().slice(0, 10);
          rows.push(row(day, OLIVE, "typescript", { requests: d + 1, shown: 1, ghost_ms_b4: d % 3 }));
          rows.push(row(day, OLIVE, "python", { requests: 100, accepted_chars: d }));
          if (d % 2 === 0) rows.push(row(day, BOB, "go", { requests: 1000 + d }));
        }
        await store.usage.add(rows);
        for (const [since, until] of [
          ["2026-10-03", "2026-11-17"],
          ["2026-10-05", "2026-11-16"],
          ["2026-10-07", "2026-10-12"],
          ["2026-09-01", "2027-01-01"],
        ] as const) {
          const expected = new Map<string, UsageCounts>();
          for (const r of rows.filter((r) => r.day >= since && r.day < until)) {
            const into = expected.get(r.user_id) ?? emptyCounts();
            for (const column of Object.keys(into) as (keyof UsageCounts)[]) into[column] += r[column];
            expected.set(r.user_id, into);
          }
          const got = await store.usage.summarize(WS, { since, until, groupBy: "user" });
          assert.deepEqual(
            got,
            [...expected.entries()]
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([key, counts]) => ({ ...counts, key, users: 1 })),
            `${since}..${until}`,
          );
          const [all] = await store.usage.summarize(WS, { since, until, groupBy: "all" });
          const inRange = rows.filter((r) => r.day >= since && r.day < until);
          assert.deepEqual(
            [all?.requests, all?.users],
            [inRange.reduce((n, r) => n + r.requests, 0), new Set(inRange.map((r) => r.user_id)).size],
          );
          const byLanguage = await store.usage.summarize(WS, { since, until, groupBy: "language" });
          assert.deepEqual(
            byLanguage.map((l) => [l.key, l.requests, l.users]),
            [...new Set(inRange.map((r) => r.language))].sort().map((language) => {
              const of = inRange.filter((r) => r.language === language);
              return [language, of.reduce((n, r) => n + r.requests, 0), new Set(of.map((r) => r.user_id)).size];
            }),
          );
        }
        // The same figures by day, for everything, and for one person.
        const byDay = await store.usage.summarize(WS, { since: "2026-10-03", until: "2026-10-05", groupBy: "day" });
        assert.deepEqual(
          byDay.map((d) => [d.key, d.requests, d.users]),
          [
            ["2026-10-03", 3 + 100 + 1002, 2],
            ["2026-10-04", 4 + 100, 1],
          ],
        );
        const bobs = await store.usage.summarize(WS, {
          since: "2026-10-01",
          until: "2026-10-04",
          groupBy: "language",
          userId: BOB,
        });
        assert.deepEqual(
          bobs.map((d) => [d.key, d.requests, d.users]),
          [["go", 1000 + 1002, 1]],
        );
        // Retention: a week goes once all of its days are before the cut.
        await store.usage.prune("2026-10-14");
        assert.deepEqual(
          (await store.usage.summarize(WS, { since: "2026-09-01", until: "2027-01-01", groupBy: "user" })).map(
            (p) => p.key,
          ),
          [BOB, OLIVE].sort(),
        );
        const olive = (
          await store.usage.summarize(WS, { since: "2026-10-12", until: "2026-10-19", groupBy: "user" })
        ).find((p) => p.key === OLIVE);
        // The week of 10-12 keeps all of its days in the roll-up; the daily rows before the 14th are gone.
        assert.equal(
          olive?.requests,
          [12, 13, 14, 15, 16, 17, 18].reduce((n, d) => n + d + 100, 0),
        );
      });

      test("prune deletes the days before the given one in every workspace", async () => {
        await store.usage.add([
          row("2026-11-01", OLIVE, "typescript", { requests: 1 }),
          { ...row("2026-11-01", OLIVE, "typescript", { requests: 1 }), workspace_id: "ws_other" },
          row("2026-11-02", OLIVE, "typescript", { requests: 1 }),
        ]);
        assert.equal(await store.usage.prune("2026-11-02"), 2);
        assert.deepEqual(
          keys(await store.usage.summarize(WS, { since: "2026-01-01", until: "2027-01-01", groupBy: "day" })),
          ["2026-11-02"],
        );
        assert.equal(await store.usage.prune("2026-11-02"), 0);
      });
    });

    describe("transactions", () => {
      test("commit all of their writes together", async () => {
        const result = await store.transaction(async (tx) => {
          await tx.workspaces.create({ id: WS, slug: "acme", name: "Acme", createdAt: at(0) });
          await tx.users.create({ id: OLIVE, workspaceId: WS, name: "Olive", role: "owner", createdAt: at(1) });
          return tx.transaction(async (inner) => inner.users.list(WS));
        });
        assert.deepEqual(ids(result), [OLIVE]);
        assert.deepEqual(ids(await store.users.list(WS)), [OLIVE]);
      });

      test("that throw leave none of their writes behind", async () => {
        const boom = new Error("boom");
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.workspaces.create({ id: WS, slug: "acme", name: "Acme", createdAt: at(0) });
            await tx.users.create({ id: OLIVE, workspaceId: WS, name: "Olive", role: "owner", createdAt: at(1) });
            assert.equal(await tx.workspaces.count(), 1);
            throw boom;
          }),
          (error) => error === boom,
        );
        assert.equal(await store.workspaces.count(), 0);
        assert.equal(await store.users.get(WS, OLIVE), undefined);
      });

      test("that fail on a constraint leave none of their writes behind", async () => {
        await store.workspaces.create({ id: WS, slug: "acme", name: "Acme", createdAt: at(0) });
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.users.create({ id: OLIVE, workspaceId: WS, name: "Olive", role: "owner", createdAt: at(1) });
            await tx.workspaces.create({ id: "ws_2", slug: "acme", name: "Clash", createdAt: at(2) });
          }),
        );
        assert.deepEqual(await store.users.list(WS), []);
        assert.equal(await store.conversations.directoryVersion(WS), 0);
      });
    });

    test("ids and timestamps compare byte by byte, as SQLite compares them", async () => {
      await seedWorkspace(store);
      await store.conversations.create(channel("cnv_1", "general", "public"));
      // Byte order: digits < upper case < `_` < lower case; a linguistic collation would order these differently.
      for (const id of ["msg_a", "msg_0", "msg__", "msg_Z"]) await store.messages.create(message(id, "cnv_1"));
      const list = (before?: string) =>
        store.messages.list("cnv_1", { limit: 10, includeAsides: true, before }).then(ids);
      assert.deepEqual(await list(), ["msg_a", "msg__", "msg_Z", "msg_0"]);
      assert.deepEqual(await list("msg__"), ["msg_Z", "msg_0"]);
      for (const [id, name] of [
        ["cnv_b", "b"],
        ["cnv_B", "B"],
        ["cnv_u", "_x"],
      ] as const) {
        await store.conversations.create(channel(id, name, "public"));
      }
      const names = (await store.conversations.listVisible(WS, BOB, true)).map((c) => c.name);
      assert.deepEqual(names, ["B", "_x", "b", "general"]);
    });

    if (engine === postgresEngine) {
      test("migrations run twice concurrently without harm", async () => {
        const url = await freshDatabase();
        const applied = await Promise.all([migratePostgres(url), migratePostgres(url)]);
        assert.deepEqual(applied.map((names) => names.length).sort(), [0, MIGRATIONS.length]);
        assert.deepEqual(applied.flat(), MIGRATIONS);
        assert.deepEqual(await migratePostgres(url), []);
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          const { rows } = await client.query<{ name: string }>("select name from kysely_migration order by name");
          assert.deepEqual(
            rows.map((row) => row.name),
            MIGRATIONS,
          );
        } finally {
          await client.end();
        }

        const second = await freshDatabase();
        const [one, two] = await Promise.all([openPostgresStore(second), openPostgresStore(second)]);
        try {
          await one.workspaces.create({ id: WS, slug: "acme", name: "Acme", createdAt: at(0) });
          assert.equal((await two.workspaces.getBySlug("acme"))?.id, WS);
        } finally {
          await one.close();
          await two.close();
        }
      });
    }
  });
}
