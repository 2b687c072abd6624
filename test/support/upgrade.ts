/**
 * What test/relay/upgrade.test.ts checks after upgrading the previous release's database, shared with the installed
 * package's test (test/package/relayPackage.test.ts), which runs the same upgrade through `npm install -g`'s command:
 * the fixture loaded into a new SQLite data folder, and everything the release handed out working on the relay that
 * serves it.
 */
import assert from "node:assert/strict";
import { closeSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import SqliteDatabase from "better-sqlite3";
import type { MessageCreatedEvent } from "@tab-relay/shared";
import { Webhook } from "standardwebhooks";
import { FIXTURE_DIR, type Fixture, type FixtureData } from "./makeUpgradeFixture";
import { type RelayProcess, until } from "./relayProcess";
import { startWebhookReceiver } from "./webhookReceiver";

export const fixture = JSON.parse(readFileSync(join(FIXTURE_DIR, "fixture.json"), "utf8")) as Fixture;

/**
 * The relay's environment for an upgraded database. At start the relay retries the pending event at once, at the URL
 * the release knew, whose receiver is gone; the retries then come every 2 s (the 20 retries the setting allows: 40 s),
 * so the URL the test gives the agent is tried within 2 s.
 */
export function upgradeEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith("TAB_RELAY_"))),
    TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
    TAB_RELAY_LOG_LEVEL: "warn",
    TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 20 }, () => "2000").join(","),
  };
}

/**
 * The console session the release started lasts a week from when the fixture was made; the test moves its end to
 * tomorrow, as if the fixture had been made today, so the session's row is what is checked, not the calendar.
 */
export const TOMORROW = new Date(Date.now() + 24 * 3600 * 1000).toISOString();

/** Makes `data` (a new folder) hold the previous release's SQLite database, its console session still valid. */
export function loadSqliteFixture(data: string): string {
  mkdirSync(data, { mode: 0o700 });
  const file = join(data, "relay.db");
  closeSync(openSync(file, "wx", 0o600));
  const db = new SqliteDatabase(file);
  try {
    db.exec(readFileSync(join(FIXTURE_DIR, "sqlite.sql"), "utf8"));
    assert.deepEqual(
      (db.prepare("select name from kysely_migration order by name").all() as { name: string }[]).map(
        (row) => row.name,
      ),
      fixture.migrations,
    );
    db.prepare("update sessions set expires_at = ?").run(TOMORROW);
  } finally {
    db.close();
  }
  return file;
}

async function call<T>(
  relay: RelayProcess,
  key: string,
  path: string,
  init: { method?: string; json?: unknown } = {},
): Promise<T> {
  const response = await fetch(`${relay.url}/api/v1${path}`, {
    method: init.method ?? "GET",
    headers: {
      Authorization: `Bearer ${key}`,
      ...(init.json === undefined ? {} : { "Content-Type": "application/json" }),
    },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${init.method ?? "GET"} ${path} answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { data: T }).data;
}

async function status(relay: RelayProcess, path: string, headers: Record<string, string>): Promise<number> {
  const response = await fetch(`${relay.url}/api/v1${path}`, { headers });
  await response.arrayBuffer();
  return response.status;
}

/** Everything the release handed out works on today's relay, and the event it left pending is delivered. */
export async function expectServes(relay: RelayProcess, data: FixtureData): Promise<void> {
  const me = await call<{ user: { id: string; name: string; role: string }; workspace: { slug: string } }>(
    relay,
    data.owner.key,
    "/me",
  );
  assert.deepEqual(
    [me.user.id, me.user.name, me.user.role, me.workspace.slug],
    [data.owner.id, data.owner.name, "owner", data.workspace.slug],
  );
  assert.equal((await call<{ user: { id: string } }>(relay, data.member.key, "/me")).user.id, data.member.id);
  assert.equal(
    await status(relay, "/tab/models", { Authorization: `Bearer ${data.member.laptop_key}` }),
    200,
    "the laptop key completes",
  );
  assert.equal(
    await status(relay, "/users", { Authorization: `Bearer ${data.member.laptop_key}` }),
    403,
    "and keeps its one scope",
  );
  assert.equal(
    await status(relay, "/me", { Authorization: `Bearer ${data.revoked_key}` }),
    401,
    "a key revoked stays revoked",
  );
  assert.equal(
    await status(relay, "/sessions/current", { Cookie: `tab_session=${data.session_token}` }),
    200,
    "the console session still signs in",
  );
  assert.equal(
    (await call<{ agent: { id: string; name: string } }>(relay, data.agent.token, "/agent-api/me")).agent.id,
    data.agent.id,
  );

  const topLevel = data.messages.filter((m) => m.thread_id === null);
  const listed = await call<{ id: string; text: string }[]>(
    relay,
    data.owner.key,
    `/conversations/channel/${data.channel.id}/messages?limit=100`,
  );
  assert.deepEqual(
    listed
      .filter((m) => topLevel.some((t) => t.id === m.id))
      .map((m) => [m.id, m.text])
      .reverse(),
    topLevel.map((m) => [m.id, m.text]),
  );
  for (const reply of data.messages.filter((m) => m.thread_id !== null)) {
    const thread = await call<{ id: string; text: string }[]>(
      relay,
      data.member.key,
      `/conversations/channel/${data.channel.id}/messages?thread_id=${reply.thread_id}`,
    );
    assert.ok(
      thread.some((m) => m.id === reply.id && m.text === reply.text),
      `the reply ${reply.id} in its thread`,
    );
  }
  const dm = await call<{ id: string; text: string }[]>(
    relay,
    data.member.key,
    `/conversations/dm/${data.dm.id}/messages`,
  );
  assert.deepEqual(
    dm.map((m) => [m.id, m.text]).reverse(),
    data.dm.messages.map((m) => [m.id, m.text]),
  );
  const notifications = await call<{ message?: { id: string; text: string } }[]>(
    relay,
    data.owner.key,
    "/notifications",
  );
  assert.ok(
    notifications.some(
      (n) => n.message?.id === data.notification.message_id && n.message.text === data.notification.text,
    ),
    JSON.stringify(notifications),
  );

  // The receiver the release sent to is gone; the agent's owner points the agent at the new one, and the event goes.
  const receiver = await startWebhookReceiver();
  try {
    await call(relay, data.owner.key, `/agents/${data.agent.id}`, {
      method: "PATCH",
      json: { webhook_url: receiver.url },
    });
    const [delivery] = await receiver.waitFor(1, 20_000);
    assert.ok(delivery);
    assert.equal(delivery.headers["webhook-id"], data.pending_event.id, "the event the release left, under its own id");
    const headers = {
      "webhook-id": String(delivery.headers["webhook-id"]),
      "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
      "webhook-signature": String(delivery.headers["webhook-signature"]),
    };
    const event = new Webhook(data.agent.signing_secret).verify(delivery.body, headers) as MessageCreatedEvent;
    assert.equal(event.message.id, data.pending_event.message_id);
    const log = await until("the delivery log to show the event delivered", 10_000, async () => {
      const deliveries = await call<
        { id: string; status: string; attempts: { outcome: string; status_code: number | null }[] }[]
      >(relay, data.owner.key, `/agents/${data.agent.id}/deliveries`);
      return deliveries.every((d) => d.status === "delivered") ? deliveries : undefined;
    });
    assert.deepEqual(
      log.map((d) => d.id),
      [data.pending_event.id],
    );
    const attempts = log[0]?.attempts.map((a) => [a.outcome, a.status_code]) ?? [];
    assert.deepEqual(attempts[0], ["failed", 503], "the release's failed attempt");
    assert.deepEqual(attempts.at(-1), ["success", 204], "today's attempt at the new URL");
    assert.ok(
      attempts.slice(1, -1).every(([outcome, code]) => outcome === "failed" && code === null),
      "between them, only the old URL's refusals",
    );
  } finally {
    await receiver.close();
  }
}
