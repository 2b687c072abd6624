import assert from "node:assert/strict";
import { type ChildProcess, spawnSync } from "node:child_process";
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import type { MessageCreatedEvent } from "@tab-relay/shared";
import type { Delivery } from "@tab-relay/shared/api";
import { type RelayProcess, spawnRelay, until } from "../support/relayProcess";
import { type ReceivedDelivery, type WebhookReceiver, startWebhookReceiver } from "../support/webhookReceiver";

/** A delivery is finished once it is neither waiting (pending) nor under way (sending). */
const finished = (status: string) => status !== "pending" && status !== "sending";

/**
 * Durability of the webhook outbox across a crash: the relay runs as its own process through the CLI, is
 * killed with SIGKILL (no shutdown code runs), and is started again on the same data folder. The CLI runs from
 * the TypeScript sources, so the test exercises the code as it is now rather than whatever was last built.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(ROOT, "relay/src/cli.ts");
const MESSAGES = 30;
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));
const relayEnv = {
  ...baseEnv,
  TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
  // Short enough that retries happen within the test, long enough that no event runs out of them before the kill.
  TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: "200,200,200,200,200",
  TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000",
  TAB_RELAY_LOG_LEVEL: "warn",
};

const children = new Set<ChildProcess>();
const dataDirs: string[] = [];
const receivers: WebhookReceiver[] = [];

function initDataDir(): { dataDir: string; apiKey: string } {
  const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-crash-"));
  dataDirs.push(dataDir);
  const result = spawnSync(
    process.execPath,
    ["--import", "tsx", CLI, "init", "--data", dataDir, "--workspace", "acme", "--owner", "Olive", "--json"],
    {
      cwd: ROOT,
      env: relayEnv,
      encoding: "utf8",
      timeout: 20_000,
    },
  );
  assert.equal(result.status, 0, result.stderr);
  return { dataDir, apiKey: (JSON.parse(result.stdout) as { api_key: string }).api_key };
}

/** `tab-relay serve` on port 0; resolves once it announces where it listens. */
function serve(dataDir: string): Promise<RelayProcess> {
  return spawnRelay({
    name: "relay",
    args: ["--import", "tsx", CLI, "serve", "--data", dataDir, "--port", "0", "--host", "127.0.0.1"],
    cwd: ROOT,
    env: relayEnv,
    tracked: children,
    startTimeoutMs: 15_000,
    outputChars: 8_000,
  });
}

async function kill(relay: RelayProcess): Promise<void> {
  relay.child.kill("SIGKILL");
  assert.equal(await relay.exited, "SIGKILL");
}

async function call<T>(relay: RelayProcess, key: string, path: string, method = "GET", json?: unknown): Promise<T> {
  const response = await fetch(`${relay.url}/api/v1${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(json === undefined ? {} : { "Content-Type": "application/json" }) },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { data: T }).data;
}

const deliveryLog = (relay: RelayProcess, key: string, agentId: string) =>
  call<Delivery[]>(relay, key, `/agents/${agentId}/deliveries?limit=100`);

/** An agent in a fresh channel, and MESSAGES people's messages mentioning it; returns the message ids. */
async function setUp(relay: RelayProcess, key: string, webhookUrl: string, concurrently: boolean) {
  const created = await call<{ agent: { id: string }; signing_secret: string }>(relay, key, "/agents", "POST", {
    name: "Crashbot",
    webhook_url: webhookUrl,
  });
  const channel = await call<{ id: string }>(relay, key, "/channels", "POST", { name: "durability" });
  await call(relay, key, `/channels/${channel.id}/members`, "POST", { agent_id: created.agent.id });
  const post = (n: number) =>
    call<{ id: string }>(relay, key, `/conversations/channel/${channel.id}/messages`, "POST", {
      text: `@Crashbot event ${n}`,
    });
  const messageIds: string[] = [];
  if (concurrently)
    messageIds.push(...(await Promise.all(Array.from({ length: MESSAGES }, (_, n) => post(n)))).map((m) => m.id));
  else for (let n = 0; n < MESSAGES; n++) messageIds.push((await post(n)).id);
  return { agentId: created.agent.id, secret: created.signing_secret, messageIds };
}

function webhookHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const value = headers[name];
    assert.equal(typeof value, "string", `header ${name} is missing`);
    out[name] = value as string;
  }
  return out;
}

/**
 * Every delivery ever received verifies with the official library, its body's id is its webhook-id, and each
 * message keeps one event id and one byte-identical body however often it is sent.
 */
function checkDeliveries(deliveries: readonly ReceivedDelivery[], secret: string): Map<string, string> {
  const verifier = new Webhook(secret);
  const eventOf = new Map<string, string>();
  const bodyOf = new Map<string, string>();
  for (const delivery of deliveries) {
    const headers = webhookHeaders(delivery.headers);
    assert.doesNotThrow(() => verifier.verify(delivery.body, headers), `signature of ${headers["webhook-id"]}`);
    const event = JSON.parse(delivery.body) as MessageCreatedEvent;
    assert.equal(event.type, "message.created");
    assert.equal(event.id, headers["webhook-id"]);
    const known = eventOf.get(event.message.id);
    if (known === undefined) {
      eventOf.set(event.message.id, event.id);
      bodyOf.set(event.id, delivery.body);
    } else {
      assert.equal(event.id, known, `message ${event.message.id} arrived under two event ids`);
      assert.equal(delivery.body, bodyOf.get(event.id), `event ${event.id} changed its body between attempts`);
    }
  }
  return eventOf;
}

/** Answers 204 and remembers which deliveries it acknowledged. */
function acknowledging(acked: ReceivedDelivery[]) {
  return (delivery: ReceivedDelivery, res: ServerResponse) => {
    acked.push(delivery);
    res.writeHead(204).end();
  };
}

/** After the restart: the log holds exactly the events of the messages posted, and every one of them is acknowledged. */
async function expectAllDelivered(
  relay: RelayProcess,
  key: string,
  setup: Awaited<ReturnType<typeof setUp>>,
  receiver: WebhookReceiver,
  acked: ReceivedDelivery[],
) {
  const logged = await deliveryLog(relay, key, setup.agentId);
  assert.equal(logged.length, MESSAGES, "one event per mention message, none lost and none added");
  assert.ok(logged.every((d) => d.event_type === "message.created"));
  const eventIds = new Set(logged.map((d) => d.id));
  assert.equal(eventIds.size, MESSAGES);

  await until("every event to be acknowledged by the receiver", 10_000, () => {
    const seen = new Set(acked.map((d) => d.headers["webhook-id"]));
    return [...eventIds].every((id) => seen.has(id)) || undefined;
  });
  const eventOf = checkDeliveries(receiver.deliveries, setup.secret);
  assert.deepEqual(
    [...eventOf.keys()].sort(),
    [...setup.messageIds].sort(),
    "the events are those of the messages posted",
  );
  assert.deepEqual([...eventOf.values()].sort(), [...eventIds].sort(), "the ids sent are the ids in the log");

  // The relay records an attempt after the answer, so the log catches up a moment after the receiver.
  return until("the log to show every event delivered", 5_000, async () => {
    const now = await deliveryLog(relay, key, setup.agentId);
    return now.every((d) => d.status === "delivered") ? now : undefined;
  });
}

describe("webhook deliveries survive SIGKILL", () => {
  after(async () => {
    for (const child of children) child.kill("SIGKILL");
    await Promise.all(receivers.map((receiver) => receiver.close()));
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  });

  test("events that failed, were in flight or never tried when the relay was killed all arrive after restart, with the same ids", async () => {
    // The first attempts fail with 500 and are rescheduled; the ones after that hang, so the kill finds some in flight.
    const FAILED_FIRST = 10;
    const held: ServerResponse[] = [];
    let answered = 0;
    const receiver = await startWebhookReceiver((_delivery, res) => {
      if (answered++ < FAILED_FIRST) res.writeHead(500).end("not yet");
      else held.push(res);
    });
    receivers.push(receiver);
    const { dataDir, apiKey } = initDataDir();
    const first = await serve(dataDir);
    const setup = await setUp(first, apiKey, receiver.url, false);

    await receiver.waitFor(FAILED_FIRST + 1, 10_000);
    const before = await until("a failed attempt in the log", 5_000, async () => {
      const log = await deliveryLog(first, apiKey, setup.agentId);
      return log.some((d) => d.attempts.some((a) => a.outcome === "failed" && a.status_code === 500)) ? log : undefined;
    });
    assert.equal(before.length, MESSAGES);
    assert.ok(
      before.every((d) => !finished(d.status)),
      "nothing is finished before the kill",
    );
    assert.ok(held.length > 0, "some attempts are in flight at the kill");
    assert.ok(
      before.some((d) => d.attempts.length === 0),
      "some events have no recorded attempt at the kill",
    );
    const idsBefore = checkDeliveries(receiver.deliveries, setup.secret);

    await kill(first);
    const acked: ReceivedDelivery[] = [];
    receiver.answer(acknowledging(acked));
    const second = await serve(dataDir);
    const final = await expectAllDelivered(second, apiKey, setup, receiver, acked);

    const idsAfter = checkDeliveries(receiver.deliveries, setup.secret);
    for (const [messageId, eventId] of idsBefore)
      assert.equal(idsAfter.get(messageId), eventId, `event of ${messageId} kept its id across the crash`);
    const retried = final.filter((d) => d.attempts.some((a) => a.status_code === 500));
    assert.ok(
      retried.length > 0 && retried.every((d) => d.attempts.at(-1)?.outcome === "success"),
      "events that failed before the kill were retried after it",
    );
    await kill(second);
  });

  test("a kill right after the posts, before any attempt finished, loses no event", async () => {
    // Every request hangs until the kill, so no attempt can be recorded before it.
    const receiver = await startWebhookReceiver(() => undefined);
    receivers.push(receiver);
    const { dataDir, apiKey } = initDataDir();
    const first = await serve(dataDir);
    const setup = await setUp(first, apiKey, receiver.url, true);
    await kill(first);

    const acked: ReceivedDelivery[] = [];
    receiver.answer(acknowledging(acked));
    const second = await serve(dataDir);
    const final = await expectAllDelivered(second, apiKey, setup, receiver, acked);
    for (const delivery of final) {
      assert.deepEqual(
        delivery.attempts.map((a) => [a.attempt, a.outcome]),
        [[1, "success"]],
        `${delivery.id} was first tried after the restart`,
      );
    }
    await kill(second);
  });
});
