import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { type MessageCreatedEvent, type PingEvent, WebhookVerificationError, verifyWebhook } from "@tab-relay/shared";
import type { Delivery, DeliveryAttempt } from "@tab-relay/shared/api";
import { Webhook, WebhookVerificationError as OfficialVerificationError } from "standardwebhooks";
import { errorOf, startTestRelay, type TestRelay } from "../support/relayHarness";
import {
  type Answer,
  type ReceivedDelivery,
  type WebhookReceiver,
  answerWith,
  startWebhookReceiver,
} from "../support/webhookReceiver";
import { addMember, agentRequest, createAgent, createChannel, createDm, postMessage } from "../support/workspace";

/** A delivery is finished once it is neither waiting (pending) nor under way (sending). */
const finished = (status: string) => status !== "pending" && status !== "sending";

/** The compressed schedule: one try plus three retries about 100, 200 and 300 ms apart (±20% jitter). */
const RELAY_ENV = {
  TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
  TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: "100,200,300",
  // A describe block posts more than the default 60 writes a minute allow.
  TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000,agent_reads=100000,agent_posts=100000",
};
/** How long "nothing else arrives" is watched for, once a later delivery proved the pipeline is moving. */
const QUIET_MS = 300;
/** Longer than the last retry delay with its jitter (300 ms + 20%), for "no more attempts come". */
const AFTER_LAST_RETRY_MS = 400;
/** How late past its next_attempt_at a retry may start: the worker's own latency, not a schedule step. */
// Generous for a loaded CI machine (the browser tests run beside these); a lost timer is 30 s late.
const RETRY_LATENESS_MS = 1000;

const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface Connected {
  id: string;
  name: string;
  token: string;
  secret: string;
  receiver: WebhookReceiver;
}

/** Relay plus everything a describe block starts, torn down together. */
class Fixture {
  relay!: TestRelay;
  private readonly receivers: WebhookReceiver[] = [];
  private readonly hung: ServerResponse[] = [];

  constructor(private readonly env: Record<string, string> = {}) {}

  async start(): Promise<void> {
    this.relay = await startTestRelay({ env: { ...RELAY_ENV, ...this.env } });
  }

  async close(): Promise<void> {
    await this.relay.close();
    for (const res of this.hung) res.destroy();
    await Promise.all(this.receivers.map((receiver) => receiver.close()));
  }

  /** An answer that never responds, as a stuck agent would; the sockets are destroyed on teardown. */
  readonly hang: Answer = (_delivery, res) => {
    this.hung.push(res);
  };

  get hungCount(): number {
    return this.hung.length;
  }

  async receiver(answer?: Answer): Promise<WebhookReceiver> {
    const receiver = await startWebhookReceiver(answer);
    this.receivers.push(receiver);
    return receiver;
  }

  /** Connects an agent whose webhook URL is a fresh receiver. */
  async agent(name: string, answer?: Answer): Promise<Connected> {
    const receiver = await this.receiver(answer);
    const created = await createAgent(this.relay, { name, webhook_url: receiver.url });
    return { id: created.agent.id, name, token: created.token, secret: created.signing_secret, receiver };
  }

  /** Connects an agent (as `agent` does) and makes it a member of `channel`. */
  async agentIn(channel: { id: string }, name: string, answer?: Answer): Promise<Connected> {
    const agent = await this.agent(name, answer);
    await addMember(this.relay, channel.id, { agent_id: agent.id });
    return agent;
  }

  async deliveries(agentId: string): Promise<Delivery[]> {
    const response = await this.relay.request(`/api/v1/agents/${agentId}/deliveries?limit=100`);
    assert.equal(response.status, 200, await response.clone().text());
    return ((await response.json()) as { data: Delivery[] }).data;
  }

  /**
   * The agent's delivery log entry for `eventId` once `done` holds: the log is written after the answer, so it is read
   * again each time the relay records an attempt.
   */
  async delivery(
    agentId: string,
    eventId: string,
    done: (log: Delivery) => boolean,
    timeoutMs = 3000,
  ): Promise<Delivery> {
    let last: Delivery | undefined;
    const probe = async () => {
      last = (await this.deliveries(agentId)).find((entry) => entry.id === eventId);
      return last && done(last) ? last : undefined;
    };
    return this.relay
      .whenHeard(probe, `delivery ${eventId} to settle`, timeoutMs)
      .catch(() => assert.fail(`delivery ${eventId} did not settle: ${JSON.stringify(last)}`));
  }
}

function plainHeaders(delivery: ReceivedDelivery): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(delivery.headers)) if (typeof value === "string") headers[name] = value;
  return headers;
}

/**
 * Checks a delivery with both the official Standard Webhooks library and our own verifier, and that `webhook-id`
 * is the event id; returns the payload.
 */
async function verified<T = MessageCreatedEvent>(delivery: ReceivedDelivery, secret: string): Promise<T> {
  const official = new Webhook(secret).verify(delivery.body, plainHeaders(delivery));
  const ours = await verifyWebhook(secret, delivery.headers, delivery.body);
  assert.deepEqual(ours, official);
  const payload = JSON.parse(delivery.body) as T & { id: string };
  assert.deepEqual(official, payload);
  assert.equal(delivery.headers["webhook-id"], payload.id, "webhook-id is the event id");
  assert.equal(delivery.headers["content-type"], "application/json");
  return payload;
}

/** Both verifiers refuse the delivery under `secret`. */
async function refusedWith(delivery: ReceivedDelivery, secret: string): Promise<void> {
  assert.throws(() => new Webhook(secret).verify(delivery.body, plainHeaders(delivery)), OfficialVerificationError);
  await assert.rejects(verifyWebhook(secret, delivery.headers, delivery.body), (error: unknown) => {
    assert.ok(error instanceof WebhookVerificationError);
    assert.equal(error.reason, "no_matching_signature");
    return true;
  });
}

/** Waits for exactly `count` deliveries, then watches a little longer to see that no other arrives. */
async function exactly(receiver: WebhookReceiver, count: number, quietMs = QUIET_MS): Promise<ReceivedDelivery[]> {
  await receiver.waitFor(count, 3000);
  await sleep(quietMs);
  assert.equal(
    receiver.deliveries.length,
    count,
    `expected exactly ${count} deliveries, got ${receiver.deliveries.length}`,
  );
  return receiver.deliveries.slice();
}

const messageIdOf = (delivery: ReceivedDelivery) => (JSON.parse(delivery.body) as MessageCreatedEvent).message.id;

/** The tree of keys of a JSON value, leaves replaced by "leaf", so two payloads compare by shape only. */
function shape(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "leaf";
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, child]) => [key, shape(child)]),
  );
}

/** The message.created payload of docs/api.md#webhook-events, as a shape. */
const MESSAGE_CREATED_SHAPE = shape({
  id: 1,
  type: 1,
  created_at: 1,
  workspace: { slug: 1, name: 1 },
  agent: { id: 1, name: 1 },
  conversation: { type: 1, id: 1, name: 1 },
  message: { id: 1, text: 1, thread_id: 1, author: { id: 1, name: 1 }, mentioned: 1, direct: 1, url: 1 },
  reply: { url: 1, thread_id: 1 },
});
const PING_SHAPE = shape({ id: 1, type: 1, created_at: 1, workspace: { slug: 1, name: 1 }, agent: { id: 1, name: 1 } });

async function agentConversationIds(relay: TestRelay, token: string): Promise<string[]> {
  const response = await agentRequest(relay, token, "/conversations");
  assert.equal(response.status, 200);
  return ((await response.json()) as { data: { id: string }[] }).data.map((c) => c.id);
}

describe("message.created: what sends an event", () => {
  const f = new Fixture();
  let general: { id: string; type: "channel" };
  let scout: Connected;
  before(async () => {
    await f.start();
    general = await createChannel(f.relay, "general");
    scout = await f.agentIn(general, "Scout");
  });
  after(() => f.close());

  test("a person mentioning the agent in a channel it is in sends one event about that message", async () => {
    const message = await postMessage(f.relay, general, "@Scout can you look at the build?");
    const [delivery] = await scout.receiver.waitFor(1);
    const event = await verified(delivery as ReceivedDelivery, scout.secret);
    assert.equal(event.type, "message.created");
    assert.deepEqual(event.agent, { id: scout.id, name: "Scout" });
    assert.deepEqual(event.conversation, { type: "channel", id: general.id, name: "#general" });
    assert.equal(event.message.id, message.id);
    assert.equal(event.message.text, "@Scout can you look at the build?");
    assert.equal(event.message.thread_id, null);
    assert.deepEqual(event.message.author, { id: f.relay.user.id, name: "Olive Owner" });
    assert.equal(event.message.mentioned, true);
    assert.equal(event.message.direct, false);
    assert.equal(event.reply.thread_id, message.id, "the reply starts a thread under the person's message");
  });

  test("a mention in a public channel the agent is not in sends the event and makes it a member", async () => {
    const random = await createChannel(f.relay, "random");
    assert.ok(!(await agentConversationIds(f.relay, scout.token)).includes(random.id));
    const before = scout.receiver.deliveries.length;
    const message = await postMessage(f.relay, random, "hey @scout, welcome");
    const delivery = (await scout.receiver.waitFor(before + 1))[before] as ReceivedDelivery;
    const event = await verified(delivery, scout.secret);
    assert.deepEqual(event.conversation, { type: "channel", id: random.id, name: "#random" });
    assert.equal(event.message.id, message.id);
    assert.equal(event.message.mentioned, true);
    assert.ok((await agentConversationIds(f.relay, scout.token)).includes(random.id), "the agent joined #random");
  });

  test("every message in a DM with the agent is an event, direct, with no reply thread", async () => {
    const dm = await createDm(f.relay, [scout.id]);
    const before = scout.receiver.deliveries.length;
    const plain = await postMessage(f.relay, dm, "hello there");
    const mentioning = await postMessage(f.relay, dm, "@Scout and again");
    const deliveries = (await scout.receiver.waitFor(before + 2)).slice(before);
    const events = await Promise.all(deliveries.map((d) => verified(d, scout.secret)));
    const byMessage = new Map(events.map((e) => [e.message.id, e]));
    const first = byMessage.get(plain.id);
    const second = byMessage.get(mentioning.id);
    assert.ok(first && second, "one event per message");
    for (const event of [first, second]) {
      assert.deepEqual(event.conversation, { type: "dm", id: dm.id, name: "Olive Owner" });
      assert.equal(event.message.direct, true);
      assert.equal(event.message.thread_id, null);
      assert.equal(event.reply.thread_id, null);
      assert.match(event.reply.url, new RegExp(`/api/v1/agent-api/conversations/dm/${dm.id}/messages$`));
    }
    assert.equal(first.message.mentioned, false, "not mentioned unless the text mentions it");
    assert.equal(second.message.mentioned, true);
  });

  test("a person's reply in a thread where the agent posted is an event even without a mention", async () => {
    const before = scout.receiver.deliveries.length;
    const root = await postMessage(f.relay, general, "@Scout please triage the flaky test");
    const first = await verified((await scout.receiver.waitFor(before + 1))[before] as ReceivedDelivery, scout.secret);
    assert.equal(first.message.id, root.id);

    const answer = await fetch(first.reply.url, {
      method: "POST",
      headers: { Authorization: `Bearer ${scout.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ text: "On it.", thread_id: first.reply.thread_id }),
    });
    assert.equal(answer.status, 201, await answer.clone().text());
    assert.equal(((await answer.json()) as { data: { thread_id: string } }).data.thread_id, root.id);

    const reply = await postMessage(f.relay, general, "thanks, the log is attached", { thread_id: root.id });
    const [, delivery] = (await scout.receiver.waitFor(before + 2)).slice(before);
    const event = await verified(delivery as ReceivedDelivery, scout.secret);
    assert.equal(event.message.id, reply.id, "the agent's own post sent nothing");
    assert.equal(event.message.thread_id, root.id);
    assert.equal(event.message.mentioned, false);
    assert.equal(event.reply.thread_id, root.id);

    const both = await postMessage(f.relay, general, "@Scout also this", { thread_id: root.id });
    const last = (await scout.receiver.waitFor(before + 3))[before + 2] as ReceivedDelivery;
    const single = await verified(last, scout.secret);
    assert.equal(single.message.id, both.id, "a mention inside the thread is still one event");
    assert.equal(single.message.mentioned, true);
  });

  test("the <@agent_id> form is a mention", async () => {
    const before = scout.receiver.deliveries.length;
    const message = await postMessage(f.relay, general, `ping <@${scout.id}> when free`);
    const event = await verified((await scout.receiver.waitFor(before + 1))[before] as ReceivedDelivery, scout.secret);
    assert.equal(event.message.id, message.id);
    assert.equal(event.message.mentioned, true);
  });

  test("each of those messages sent exactly one event, each with its own id", async () => {
    const count = scout.receiver.deliveries.length;
    const deliveries = await exactly(scout.receiver, count);
    assert.equal(count, 8);
    assert.equal(new Set(deliveries.map(messageIdOf)).size, count, "one event per message");
    assert.equal(new Set(deliveries.map((d) => d.headers["webhook-id"])).size, count, "one event id per event");
  });
});

describe("message.created: what sends nothing", () => {
  const f = new Fixture();
  let general: { id: string; type: "channel" };
  let quiet: Connected;
  let control = 0;
  before(async () => {
    await f.start();
    general = await createChannel(f.relay, "general");
    quiet = await f.agentIn(general, "Quiet");
    // The pipeline is live before any "nothing arrives" is believed.
    await postMessage(f.relay, general, "@Quiet warm-up");
    await exactly(quiet.receiver, 1);
  });
  after(() => f.close());

  /** Posts a mention that must arrive, and checks it is the only delivery since `before`. */
  async function onlyControlArrives(before: number): Promise<void> {
    const message = await postMessage(f.relay, general, `@Quiet control ${++control}`);
    const deliveries = (await exactly(quiet.receiver, before + 1)).slice(before);
    assert.deepEqual(deliveries.map(messageIdOf), [message.id]);
  }

  test("another agent mentioning it sends nothing", async () => {
    const other = await f.agentIn(general, "Otherbot");
    const before = quiet.receiver.deliveries.length;
    for (const text of ["@Quiet hello from a bot", `<@${quiet.id}> and by id`]) {
      const response = await agentRequest(f.relay, other.token, `/conversations/channel/${general.id}/messages`, {
        method: "POST",
        json: { text },
      });
      assert.equal(response.status, 201);
    }
    await onlyControlArrives(before);
  });

  test("a person's /aside mentioning it sends nothing", async () => {
    const before = quiet.receiver.deliveries.length;
    await postMessage(f.relay, general, "/aside @Quiet keep this between us");
    await onlyControlArrives(before);
  });

  test("a channel message without a mention sends nothing, nor does @ followed by a longer word", async () => {
    const before = quiet.receiver.deliveries.length;
    await postMessage(f.relay, general, "Quiet is a good name for a bot");
    await postMessage(f.relay, general, "@Quietly moving on, mail ops@Quiet");
    await onlyControlArrives(before);
  });

  test("a mention in a private channel it is not in sends nothing and does not add it", async () => {
    const secret = await createChannel(f.relay, "secret-plans", "private");
    const before = quiet.receiver.deliveries.length;
    await postMessage(f.relay, secret, "@Quiet you should not see this");
    await onlyControlArrives(before);
    assert.ok(!(await agentConversationIds(f.relay, quiet.token)).includes(secret.id));
  });

  test("messages while it is paused are never delivered, not even after it resumes", async () => {
    const dm = await createDm(f.relay, [quiet.id]);
    const logged = (await f.deliveries(quiet.id)).length;
    const before = quiet.receiver.deliveries.length;
    assert.equal((await f.relay.request(`/api/v1/agents/${quiet.id}/pause`, { method: "POST" })).status, 200);
    await postMessage(f.relay, general, "@Quiet while you were paused");
    await postMessage(f.relay, dm, "a DM while you were paused");
    assert.equal((await f.relay.request(`/api/v1/agents/${quiet.id}/resume`, { method: "POST" })).status, 200);
    // Anything held back during the pause would go out now, before or beside the control.
    await onlyControlArrives(before);
    assert.equal((await f.deliveries(quiet.id)).length, logged + 1, "only the control was ever queued");
  });

  test("a removed agent gets nothing, while an agent mentioned alongside it does", async () => {
    const gone = await f.agentIn(general, "Gone");
    await postMessage(f.relay, general, "@Gone are you alive?");
    await gone.receiver.waitFor(1);
    const removed = await f.relay.request(`/api/v1/agents/${gone.id}`, { method: "DELETE" });
    assert.equal(removed.status, 200);

    const before = quiet.receiver.deliveries.length;
    const message = await postMessage(f.relay, general, `@Gone <@${gone.id}> and @Quiet`);
    assert.deepEqual((await exactly(quiet.receiver, before + 1)).slice(before).map(messageIdOf), [message.id]);
    assert.equal(gone.receiver.deliveries.length, 1);
  });
});

describe("message.created: payload and signatures", () => {
  const f = new Fixture();
  let general: { id: string; type: "channel" };
  let shaper: Connected;
  before(async () => {
    await f.start();
    general = await createChannel(f.relay, "general");
    shaper = await f.agentIn(general, "Shaper");
  });
  after(() => f.close());

  test("the payload has exactly the documented fields, with absolute links", async () => {
    const startedAt = Date.now();
    const message = await postMessage(f.relay, general, "@Shaper what does this look like?");
    const [delivery] = await exactly(shaper.receiver, 1);
    const event = await verified(delivery as ReceivedDelivery, shaper.secret);
    assert.deepEqual(shape(event), MESSAGE_CREATED_SHAPE);
    assert.match(event.id, /^evt_\S+$/);
    assert.equal(event.type, "message.created");
    assert.match(event.created_at, ISO_MS_UTC);
    assert.ok(Math.abs(Date.parse(event.created_at) - startedAt) < 5000);
    assert.deepEqual(event.workspace, { slug: "acme", name: f.relay.workspace.name });
    assert.deepEqual(event.agent, { id: shaper.id, name: "Shaper" });
    assert.deepEqual(event.conversation, { type: "channel", id: general.id, name: "#general" });
    assert.deepEqual(event.message, {
      id: message.id,
      text: "@Shaper what does this look like?",
      thread_id: null,
      author: { id: f.relay.user.id, name: "Olive Owner" },
      mentioned: true,
      direct: false,
      url: `${f.relay.url}/conversations/channel/${general.id}/messages/${message.id}`,
    });
    assert.deepEqual(event.reply, {
      url: `${f.relay.url}/api/v1/agent-api/conversations/channel/${general.id}/messages`,
      thread_id: message.id,
    });
  });

  test("POSTing to reply.url with the agent token and reply.thread_id answers in the thread", async () => {
    const before = shaper.receiver.deliveries.length;
    const message = await postMessage(f.relay, general, "@Shaper reply to me");
    const event = await verified(
      (await shaper.receiver.waitFor(before + 1))[before] as ReceivedDelivery,
      shaper.secret,
    );
    assert.equal(new URL(event.reply.url).protocol, "http:", "reply.url is absolute");
    const posted = await fetch(event.reply.url, {
      method: "POST",
      headers: { Authorization: `Bearer ${shaper.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ text: "Here is my answer", thread_id: event.reply.thread_id }),
    });
    assert.equal(posted.status, 201);
    const thread = await f.relay.request(
      `/api/v1/conversations/channel/${general.id}/messages?thread_id=${message.id}`,
    );
    const messages = ((await thread.json()) as { data: { text: string; author: { id: string; type: string } }[] }).data;
    assert.ok(
      messages.some((m) => m.text === "Here is my answer" && m.author.id === shaper.id && m.author.type === "agent"),
    );
  });

  test("each delivery is signed so both verifiers accept it, and a changed byte is refused", async () => {
    const before = shaper.receiver.deliveries.length;
    await postMessage(f.relay, general, '@Shaper sign this: é ✓ "quotes"');
    const delivery = (await shaper.receiver.waitFor(before + 1))[before] as ReceivedDelivery;
    const event = await verified(delivery, shaper.secret);
    assert.equal(delivery.headers["webhook-id"], event.id);
    assert.match(String(delivery.headers["webhook-timestamp"]), /^\d+$/);
    assert.ok(Math.abs(Number(delivery.headers["webhook-timestamp"]) - Date.now() / 1000) < 10);
    assert.match(String(delivery.headers["webhook-signature"]), /^v1,[A-Za-z0-9+/]+=*$/);
    const tampered = { ...delivery, body: delivery.body.replace("sign this", "sign that") };
    assert.notEqual(tampered.body, delivery.body);
    await refusedWith(tampered, shaper.secret);
  });

  test("after rotating the signing secret, deliveries verify with the new secret only", async () => {
    const response = await f.relay.request(`/api/v1/agents/${shaper.id}/signing-secret`, { method: "POST" });
    assert.equal(response.status, 200);
    const rotated = ((await response.json()) as { data: { signing_secret: string } }).data.signing_secret;
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, shaper.secret);
    const before = shaper.receiver.deliveries.length;
    await postMessage(f.relay, general, "@Shaper after rotation");
    const delivery = (await shaper.receiver.waitFor(before + 1))[before] as ReceivedDelivery;
    await verified(delivery, rotated);
    await refusedWith(delivery, shaper.secret);
    shaper.secret = rotated;
  });

  test("a retry after a rotation is signed with the new secret", async () => {
    let release: (() => void) | undefined;
    const flaky = await f.agentIn(general, "Flaky", (_d, res, index) => {
      // The first answer (a failure) is held until the secret has been rotated, so the retry is signed after it.
      if (index === 0) release = () => res.writeHead(500).end();
      else res.writeHead(204).end();
    });
    await postMessage(f.relay, general, "@Flaky retry me");
    const [first] = await flaky.receiver.waitFor(1);
    await verified(first as ReceivedDelivery, flaky.secret);
    const response = await f.relay.request(`/api/v1/agents/${flaky.id}/signing-secret`, { method: "POST" });
    const rotated = ((await response.json()) as { data: { signing_secret: string } }).data.signing_secret;
    release?.();
    const [, second] = await flaky.receiver.waitFor(2);
    assert.equal(second?.headers["webhook-id"], first?.headers["webhook-id"]);
    await verified(second as ReceivedDelivery, rotated);
    await refusedWith(second as ReceivedDelivery, flaky.secret);
  });
});

describe("message.created: links under TAB_RELAY_PUBLIC_URL", () => {
  const f = new Fixture({ TAB_RELAY_PUBLIC_URL: "https://relay.example.com" });
  before(() => f.start());
  after(() => f.close());

  test("message.url and reply.url use the public URL, not the listening address", async () => {
    const general = await createChannel(f.relay, "general");
    const linked = await f.agentIn(general, "Linked");
    const message = await postMessage(f.relay, general, "@Linked where am I?");
    const event = await verified((await linked.receiver.waitFor(1))[0] as ReceivedDelivery, linked.secret);
    assert.equal(
      event.message.url,
      `https://relay.example.com/conversations/channel/${general.id}/messages/${message.id}`,
    );
    assert.equal(
      event.reply.url,
      `https://relay.example.com/api/v1/agent-api/conversations/channel/${general.id}/messages`,
    );
  });
});

describe("test events, redelivery and agents without a webhook URL", () => {
  const f = new Fixture();
  let general: { id: string; type: "channel" };
  before(async () => {
    await f.start();
    general = await createChannel(f.relay, "general");
  });
  after(() => f.close());

  async function sendTestEvent(agentId: string): Promise<Response> {
    return f.relay.request(`/api/v1/agents/${agentId}/test-event`, { method: "POST" });
  }

  test("a test event delivers a signed ping with exactly id, type, created_at, workspace and agent", async () => {
    const pinged = await f.agent("Pinged");
    const response = await sendTestEvent(pinged.id);
    assert.equal(response.status, 202);
    const queued = ((await response.json()) as { data: Delivery }).data;
    assert.equal(queued.event_type, "ping");
    assert.match(queued.id, /^evt_/);
    const [delivery] = await exactly(pinged.receiver, 1);
    const ping = await verified<PingEvent>(delivery as ReceivedDelivery, pinged.secret);
    assert.deepEqual(shape(ping), PING_SHAPE);
    assert.equal(ping.id, queued.id);
    assert.equal(ping.type, "ping");
    assert.match(ping.created_at, ISO_MS_UTC);
    assert.deepEqual(ping.workspace, { slug: "acme", name: f.relay.workspace.name });
    assert.deepEqual(ping.agent, { id: pinged.id, name: "Pinged" });
    const log = await f.delivery(pinged.id, queued.id, (entry) => finished(entry.status));
    assert.equal(log.status, "delivered");
    assert.deepEqual(
      log.attempts.map((a) => [a.attempt, a.trigger, a.outcome, a.status_code]),
      [[1, "test", "success", 204]],
    );
  });

  test("a failing test event is tried once, with no retries", async () => {
    const broken = await f.agent("Broken", answerWith(500, {}, "boom"));
    const response = await sendTestEvent(broken.id);
    const queued = ((await response.json()) as { data: Delivery }).data;
    await exactly(broken.receiver, 1);
    const log = await f.delivery(broken.id, queued.id, (entry) => finished(entry.status));
    assert.equal(log.status, "failed");
    assert.equal(log.next_attempt_at, null);
    assert.deepEqual(
      log.attempts.map((a) => [a.attempt, a.trigger, a.status_code, a.response_excerpt, a.next_attempt_at]),
      [[1, "test", 500, "boom", null]],
    );
  });

  test("a test event is delivered while the agent is paused", async () => {
    const napping = await f.agent("Napping");
    assert.equal((await f.relay.request(`/api/v1/agents/${napping.id}/pause`, { method: "POST" })).status, 200);
    assert.equal((await sendTestEvent(napping.id)).status, 202);
    const [delivery] = await napping.receiver.waitFor(1);
    assert.equal((await verified<PingEvent>(delivery as ReceivedDelivery, napping.secret)).type, "ping");
  });

  test("a test event for an agent without a webhook URL is 400 naming webhook_url", async () => {
    const created = await createAgent(f.relay, { name: "Unwired" });
    const response = await sendTestEvent(created.agent.id);
    assert.equal(response.status, 400);
    const error = await errorOf(response);
    assert.equal(error.code, "VALIDATION_ERROR");
    assert.match(error.message, /webhook_url/);
  });

  test("redelivering a delivered event sends it again with the same webhook-id, logged as manual", async () => {
    const again = await f.agentIn(general, "Again");
    await postMessage(f.relay, general, "@Again once more");
    const [first] = await again.receiver.waitFor(1);
    const event = await verified(first as ReceivedDelivery, again.secret);
    await f.delivery(again.id, event.id, (entry) => entry.status === "delivered");

    const response = await f.relay.request(`/api/v1/agents/${again.id}/deliveries/${event.id}/redeliver`, {
      method: "POST",
    });
    assert.equal(response.status, 202);
    const [, second] = await exactly(again.receiver, 2);
    assert.equal(second?.headers["webhook-id"], event.id);
    assert.equal(second?.body, first?.body, "the same event, byte for byte");
    await verified(second as ReceivedDelivery, again.secret);
    const log = await f.delivery(again.id, event.id, (entry) => entry.attempts.length === 2 && finished(entry.status));
    assert.equal(log.status, "delivered");
    assert.deepEqual(
      log.attempts.map((a) => [a.attempt, a.trigger, a.outcome]),
      [
        [1, "scheduled", "success"],
        [2, "manual", "success"],
      ],
    );

    const unknown = await f.relay.request(`/api/v1/agents/${again.id}/deliveries/evt_nope/redeliver`, {
      method: "POST",
    });
    assert.equal(unknown.status, 404);
  });

  test("a redelivery asked for while the event's attempt is under way follows that attempt, never overlaps it", async () => {
    // The first attempt is held for a while, then fails; the redelivery is asked for meanwhile.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const overlap = await f.agentIn(general, "Overlap", (_delivery, res, index) => {
      if (index === 0) void held.then(() => res.writeHead(500).end("busy"));
      else res.writeHead(204).end();
    });
    await postMessage(f.relay, general, "@Overlap are you there?");
    const [first] = await overlap.receiver.waitFor(1);
    const event = await verified(first as ReceivedDelivery, overlap.secret);
    const response = await f.relay.request(`/api/v1/agents/${overlap.id}/deliveries/${event.id}/redeliver`, {
      method: "POST",
    });
    assert.equal(response.status, 202);
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.equal(overlap.receiver.deliveries.length, 1, "nothing more while the first attempt is under way");
    const answeredAt = performance.now();
    release();

    const [, second] = await exactly(overlap.receiver, 2);
    assert.ok((second?.at ?? 0) >= answeredAt, "the manual attempt starts after the first one ended");
    assert.equal(second?.headers["webhook-id"], event.id);
    const log = await f.delivery(
      overlap.id,
      event.id,
      (entry) => entry.attempts.length === 2 && finished(entry.status),
    );
    assert.equal(log.status, "delivered");
    assert.deepEqual(
      log.attempts.map((a) => [a.attempt, a.trigger, a.outcome, a.next_attempt_at]),
      [
        [1, "scheduled", "failed", null],
        [2, "manual", "success", null],
      ],
    );
  });

  test("events for an agent without a webhook URL wait, and go out once a URL is set", async () => {
    const created = await createAgent(f.relay, { name: "Later" });
    await addMember(f.relay, general.id, { agent_id: created.agent.id });
    const message = await postMessage(f.relay, general, "@Later read this when you can");
    await sleep(QUIET_MS);
    const [waiting] = await f.deliveries(created.agent.id);
    assert.equal(waiting?.status, "pending");
    assert.deepEqual(waiting?.attempts, []);

    const receiver = await f.receiver();
    const patched = await f.relay.request(`/api/v1/agents/${created.agent.id}`, {
      method: "PATCH",
      json: { webhook_url: receiver.url },
    });
    assert.equal(patched.status, 200);
    const [delivery] = await receiver.waitFor(1);
    const event = await verified(delivery as ReceivedDelivery, created.signing_secret);
    assert.equal(event.id, waiting?.id);
    assert.equal(event.message.id, message.id);
  });
});

describe("delivery retries and failures", () => {
  const f = new Fixture();
  let general: { id: string; type: "channel" };
  before(async () => {
    await f.start();
    general = await createChannel(f.relay, "general");
  });
  after(() => f.close());

  /** Connects an agent answering with `answer`, mentions it once, and returns the agent and its event id. */
  async function mentioned(name: string, answer: Answer): Promise<{ agent: Connected; eventId: string }> {
    const agent = await f.agentIn(general, name, answer);
    await postMessage(f.relay, general, `@${name} hello`);
    const [first] = await agent.receiver.waitFor(1);
    return { agent, eventId: String(first?.headers["webhook-id"]) };
  }

  /** Each retry starts when the previous attempt said it would: not before, and not much after. */
  function assertOnSchedule(log: Delivery): void {
    for (let i = 1; i < log.attempts.length; i++) {
      const previous = log.attempts[i - 1] as DeliveryAttempt;
      const current = log.attempts[i] as DeliveryAttempt;
      assert.ok(previous.next_attempt_at !== null, `attempt ${previous.attempt} names no next attempt`);
      const late = Date.parse(current.at) - Date.parse(previous.next_attempt_at);
      assert.ok(
        late >= -5 && late <= RETRY_LATENESS_MS,
        `${log.id} attempt ${current.attempt} started ${late} ms after its next_attempt_at`,
      );
    }
  }

  const failedStatuses = (log: Delivery) => log.attempts.map((a) => [a.attempt, a.trigger, a.outcome, a.status_code]);

  test("two 500s then 204: three attempts of the same event, each freshly signed, on the schedule", async () => {
    const { agent, eventId } = await mentioned("Retrier", (_d, res, index) => {
      res.writeHead(index < 2 ? 500 : 204).end(index < 2 ? "try later" : "");
    });
    const deliveries = await exactly(agent.receiver, 3, AFTER_LAST_RETRY_MS);
    const timestamps: number[] = [];
    for (const delivery of deliveries) {
      assert.equal(delivery.headers["webhook-id"], eventId);
      await verified(delivery, agent.secret);
      timestamps.push(Number(delivery.headers["webhook-timestamp"]));
    }
    assert.deepEqual(
      timestamps,
      [...timestamps].sort((a, b) => a - b),
      "webhook-timestamp never goes back",
    );
    const [d1, d2, d3] = deliveries.map((d) => d.at) as [number, number, number];
    // 100 and 200 ms less 20% jitter, less a little for the receiver's clock sampling.
    assert.ok(d2 - d1 >= 75, `first retry after ${d2 - d1} ms`);
    assert.ok(d3 - d2 >= 155, `second retry after ${d3 - d2} ms`);

    const log = await f.delivery(agent.id, eventId, (entry) => finished(entry.status));
    assert.equal(log.status, "delivered");
    assert.equal(log.event_type, "message.created");
    assert.equal(log.next_attempt_at, null);
    assert.deepEqual(failedStatuses(log), [
      [1, "scheduled", "failed", 500],
      [2, "scheduled", "failed", 500],
      [3, "scheduled", "success", 204],
    ]);
    const [a1, a2, a3] = log.attempts as [DeliveryAttempt, DeliveryAttempt, DeliveryAttempt];
    assert.equal(a1.response_excerpt, "try later");
    assert.equal(a1.url, agent.receiver.url);
    for (const [attempt, min, max] of [
      [a1, 80, 120],
      [a2, 160, 240],
    ] as const) {
      assert.ok(attempt.next_attempt_at !== null, "a failed attempt says when the next one comes");
      const delay = Date.parse(attempt.next_attempt_at) - Date.parse(attempt.at);
      assert.ok(delay >= min && delay <= max + attempt.duration_ms + 50, `delay ${delay} ms outside ${min}..${max}`);
    }
    assert.equal(a3.next_attempt_at, null);
    assertOnSchedule(log);
  });

  test("always 500: one try and three retries, then failed and nothing more", async () => {
    const { agent, eventId } = await mentioned("Doomed", answerWith(500));
    const deliveries = await exactly(agent.receiver, 4, AFTER_LAST_RETRY_MS);
    assert.ok(deliveries.every((d) => d.headers["webhook-id"] === eventId));
    const log = await f.delivery(agent.id, eventId, (entry) => finished(entry.status));
    assert.equal(log.status, "failed");
    assert.equal(log.next_attempt_at, null);
    assert.deepEqual(
      log.attempts.map((a) => [a.attempt, a.status_code, a.next_attempt_at === null]),
      [
        [1, 500, false],
        [2, 500, false],
        [3, 500, false],
        [4, 500, true],
      ],
    );
    assertOnSchedule(log);
  });

  test("retries of several agents at once each keep their own schedule", async () => {
    const agents = await Promise.all(
      ["Crowd1", "Crowd2", "Crowd3", "Crowd4"].map((name) => f.agentIn(general, name, answerWith(500))),
    );
    await postMessage(f.relay, general, agents.map((agent) => `@${agent.name}`).join(" ") + " all together");
    // The whole schedule with the most jitter is 720 ms; a retry the worker lost sight of waits for its idle poll.
    await Promise.allSettled(agents.map((agent) => agent.receiver.waitFor(4, 8000)));
    for (const agent of agents) {
      const eventId = String(agent.receiver.deliveries[0]?.headers["webhook-id"]);
      const [log] = (await f.deliveries(agent.id)).filter((entry) => entry.id === eventId) as [Delivery];
      const last = log.attempts.at(-1) as DeliveryAttempt;
      if (last.next_attempt_at !== null) {
        assert.fail(
          `${agent.name}: attempt ${last.attempt + 1}, due at ${last.next_attempt_at}, had not started ${Date.now() - Date.parse(last.next_attempt_at)} ms later`,
        );
      }
      assert.equal(log.attempts.length, 4);
      assertOnSchedule(log);
    }
  });

  for (const status of [410, 413]) {
    test(`a ${status} answer ends the delivery after one attempt, failed`, async () => {
      const { agent, eventId } = await mentioned(`Final${status}`, answerWith(status));
      // A retry would come about 100 ms later.
      await exactly(agent.receiver, 1);
      const log = await f.delivery(agent.id, eventId, (entry) => finished(entry.status));
      assert.equal(log.status, "failed");
      assert.deepEqual(failedStatuses(log), [[1, "scheduled", "failed", status]]);
      assert.equal(log.attempts[0]?.next_attempt_at, null);
    });
  }

  test("a 302 redirect is not followed: the attempt fails and the retry goes to the webhook URL again", async () => {
    const receiver = await f.receiver();
    const elsewhere = `${new URL(receiver.url).origin}/elsewhere`;
    receiver.answer((delivery, res, index) => {
      if (delivery.path === "/webhook" && index === 0) res.writeHead(302, { Location: elsewhere }).end();
      else res.writeHead(204).end();
    });
    const created = await createAgent(f.relay, { name: "Redirector", webhook_url: receiver.url });
    await addMember(f.relay, general.id, { agent_id: created.agent.id });
    await postMessage(f.relay, general, "@Redirector go somewhere else");
    const deliveries = await exactly(receiver, 2);
    assert.deepEqual(
      deliveries.map((d) => d.path),
      ["/webhook", "/webhook"],
      "the Location was never requested",
    );
    const log = await f.delivery(created.agent.id, String(deliveries[0]?.headers["webhook-id"]), (entry) =>
      finished(entry.status),
    );
    assert.deepEqual(failedStatuses(log), [
      [1, "scheduled", "failed", 302],
      [2, "scheduled", "success", 204],
    ]);
  });

  test("Retry-After on a 503 holds the next attempt back beyond the schedule", async () => {
    const { agent, eventId } = await mentioned("Patient", (_d, res, index) => {
      if (index === 0) res.writeHead(503, { "Retry-After": "1" }).end();
      else res.writeHead(204).end();
    });
    const [first, second] = await agent.receiver.waitFor(2, 3000);
    const gap = (second as ReceivedDelivery).at - (first as ReceivedDelivery).at;
    assert.ok(gap >= 950, `the retry came after ${gap} ms, before Retry-After's 1 s`);
    const log = await f.delivery(agent.id, eventId, (entry) => finished(entry.status));
    assert.equal(log.status, "delivered");
    const [a1] = log.attempts as [DeliveryAttempt];
    assert.equal(a1.status_code, 503);
    assert.ok(Date.parse(a1.next_attempt_at ?? "") - Date.parse(a1.at) >= 1000);
  });

  test("a network error is recorded with its error text and no status code", async () => {
    const receiver = await f.receiver();
    await receiver.close();
    const created = await createAgent(f.relay, { name: "Offline", webhook_url: receiver.url });
    await addMember(f.relay, general.id, { agent_id: created.agent.id });
    await postMessage(f.relay, general, "@Offline anyone home?");
    const entry = await f.relay
      .whenHeard(
        async () => {
          const [first] = await f.deliveries(created.agent.id);
          return first?.attempts.length ? first : undefined;
        },
        "an attempt to be recorded",
        3000,
      )
      .catch(() => assert.fail("no attempt was recorded"));
    const [a1] = entry.attempts as [DeliveryAttempt];
    assert.equal(a1.outcome, "failed");
    assert.equal(a1.status_code, null);
    assert.match(a1.error ?? "", /ECONNREFUSED/);
    assert.ok(a1.next_attempt_at !== null, "a network error is retried");
  });
});

describe("delivery isolation between agents", () => {
  const f = new Fixture({ TAB_RELAY_WEBHOOK_TIMEOUT_MS: "2000" });
  let general: { id: string; type: "channel" };
  let stuck: Connected;
  let fast: Connected;
  before(async () => {
    await f.start();
    general = await createChannel(f.relay, "general");
    stuck = await f.agentIn(general, "Stuck", f.hang);
    fast = await f.agentIn(general, "Fast");
  });
  after(() => f.close());

  test("an agent that never answers does not delay another agent's deliveries", async () => {
    const started = performance.now();
    await postMessage(f.relay, general, "@Stuck @Fast both of you");
    const [both] = await fast.receiver.waitFor(1, 3000);
    // Well under the stuck agent's 2 s timeout, with room for a loaded machine.
    assert.ok(
      (both as ReceivedDelivery).at - started < 1000,
      `Fast waited ${(both as ReceivedDelivery).at - started} ms`,
    );
    await stuck.receiver.waitFor(1, 3000);

    for (let i = 0; i < 10; i++) await postMessage(f.relay, general, `@Stuck pile-up ${i}`);
    // Eight attempts at once per agent: the stuck agent holds eight hung sockets and the rest of its events wait.
    await stuck.receiver.waitFor(8, 3000);
    const log = await f.deliveries(stuck.id);
    assert.equal(log.filter((entry) => entry.status === "sending").length, 8);
    assert.equal(log.filter((entry) => entry.status === "pending").length, 3);

    for (let i = 0; i < 3; i++) {
      const sent = performance.now();
      const message = await postMessage(f.relay, general, `@Fast still there? ${i}`);
      const delivery = (await fast.receiver.waitFor(2 + i, 3000))[1 + i] as ReceivedDelivery;
      assert.equal(messageIdOf(delivery), message.id);
      assert.ok(delivery.at - sent < 1000, `Fast waited ${delivery.at - sent} ms behind the stuck agent`);
    }
    assert.equal(stuck.receiver.deliveries.length, 8, "no more than eight attempts in flight to one agent");
    assert.ok(f.hungCount >= 8);
  });

  test("an attempt that gets no answer times out and is recorded as such", async () => {
    const logs = await f.deliveries(stuck.id);
    const first = logs.at(-1) as Delivery;
    const log = await f.delivery(stuck.id, first.id, (entry) => entry.attempts.length > 0, 4000);
    const [a1] = log.attempts as [DeliveryAttempt];
    assert.equal(a1.status_code, null);
    assert.match(a1.error ?? "", /timed out after 2000 ms/);
    assert.ok(a1.duration_ms >= 1900);
  });
});
