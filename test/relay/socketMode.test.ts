import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { rmSync } from "node:fs";
import { type IncomingMessage, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { MessageCreatedEvent, PingEvent } from "@tab-relay/shared";
import { FakeClock } from "@tab-relay/shared/testing";
import { Webhook } from "standardwebhooks";
import { WebSocket, WebSocketServer } from "ws";
import { startEchoSocketAgent } from "../../examples/echo-agent/socket";
import { createAgentSockets } from "../../relay/src/live/agentSockets";
import { silentLogger } from "../../relay/src/logger";
import { initWorkspace } from "../../relay/src/workspace/init";
import { startTestRelay, type TestRelay } from "../support/relayHarness";
import { type WebhookReceiver, startWebhookReceiver } from "../support/webhookReceiver";
import { agentRequest, createAgent, createChannel, postMessage } from "../support/workspace";

const RELAY_ENV = {
  TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
  TAB_RELAY_SOCKET_ACK_TIMEOUT_MS: "300",
  TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: "200,200,200,200",
  TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000",
};
/** A schedule so long that anything arriving within a test came because the agent connected, not from a retry. */
const LONG_SCHEDULE_ENV = { ...RELAY_ENV, TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: "60000" };
/** Far less than the 60 s retry; generous for a loaded machine. */
const AT_ONCE_MS = 3000;

interface Envelope {
  type: "event";
  envelope_id: string;
  headers: Record<string, string>;
  body: string;
}

interface Attempt {
  attempt: number;
  trigger: string;
  url: string;
  outcome: "success" | "failed";
  status_code: number | null;
  error: string | null;
}

interface DeliveryLog {
  id: string;
  event_type: string;
  status: string;
  attempts: Attempt[];
}

/** An agent's end of a Socket Mode connection, recording every frame the relay sends. */
class AgentSocket {
  readonly envelopes: Envelope[] = [];
  readonly frames: Record<string, unknown>[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as Record<string, unknown>;
      this.frames.push(frame);
      if (frame.type === "event") this.envelopes.push(frame as unknown as Envelope);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => ws.on("close", (code, reason) => resolve({ code, reason: String(reason) })));
  }

  /** Resolves once `count` envelopes have arrived on this connection. */
  async envelopesFor(count: number, timeoutMs = AT_ONCE_MS): Promise<Envelope[]> {
    const deadline = performance.now() + timeoutMs;
    while (this.envelopes.length < count) {
      const left = deadline - performance.now();
      if (left <= 0)
        throw new Error(`expected ${count} envelopes within ${timeoutMs} ms, got ${this.envelopes.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.envelopes.slice(0, count);
  }

  ack(envelopeId: string): void {
    this.ws.send(JSON.stringify({ type: "ack", envelope_id: envelopeId }));
  }
}

const open: WebSocket[] = [];

function socketUrl(relay: TestRelay, path = "/api/v1/agent-api/socket"): string {
  return relay.url.replace(/^http/, "ws") + path;
}

/** Opens a Socket Mode connection with `token` and resolves on the relay's hello. */
async function connect(
  relay: TestRelay,
  token: string,
): Promise<{ socket: AgentSocket; hello: Record<string, unknown> }> {
  const ws = new WebSocket(socketUrl(relay), { headers: { authorization: `Bearer ${token}` } });
  open.push(ws);
  const socket = new AgentSocket(ws);
  const [data] = (await once(ws, "message")) as [Buffer];
  return { socket, hello: JSON.parse(String(data)) as Record<string, unknown> };
}

/** The HTTP answer to an upgrade the relay refuses; fails if the upgrade is accepted instead. */
async function refusedUpgrade(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; error: { code: string; message: string }; headers: IncomingMessage["headers"] }> {
  const ws = new WebSocket(url, { headers });
  ws.on("error", () => undefined);
  return new Promise((resolve, reject) => {
    ws.on("open", () => {
      ws.terminate();
      reject(new Error(`the upgrade to ${url} was accepted`));
    });
    ws.on("unexpected-response", (_req, res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        ws.terminate();
        const { error } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          error: { code: string; message: string };
        };
        resolve({ status: res.statusCode ?? 0, error, headers: res.headers });
      });
    });
  });
}

/** Resolves once `condition()` holds, checked now and whenever `source` emits "change"; fails after `timeoutMs`. */
async function until(
  source: EventEmitter,
  condition: () => boolean,
  what: string,
  timeoutMs = AT_ONCE_MS,
): Promise<void> {
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    while (!condition()) await once(source, "change", { signal: deadline });
  } catch (error) {
    throw deadline.aborted ? new Error(`timed out waiting for ${what}`) : error;
  }
}

async function deliveries(relay: TestRelay, agentId: string, key?: string): Promise<DeliveryLog[]> {
  const response = await relay.request(`/api/v1/agents/${agentId}/deliveries`, key === undefined ? {} : { key });
  assert.equal(response.status, 200);
  return ((await response.json()) as { data: DeliveryLog[] }).data;
}

/** Waits until the delivery of `eventId` has the status (asked again whenever the relay records an attempt). */
function deliveryWith(relay: TestRelay, agentId: string, eventId: string, status: string): Promise<DeliveryLog> {
  return relay.whenHeard(
    async () => (await deliveries(relay, agentId)).find((d) => d.id === eventId && d.status === status),
    `${eventId} to be ${status}`,
    AT_ONCE_MS,
  );
}

async function connection(relay: TestRelay, agentId: string): Promise<{ webhook_url: string | null; socket: string }> {
  const response = await relay.request(`/api/v1/agents/${agentId}`);
  return ((await response.json()) as { data: { connection: { webhook_url: string | null; socket: string } } }).data
    .connection;
}

function verified<T>(secret: string, envelope: Envelope): T {
  return new Webhook(secret).verify(envelope.body, envelope.headers) as T;
}

/** The shape of a JSON value: its keys, recursively, with leaves reduced to their type. */
function shape(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value === null ? "null" : typeof value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, shape(inner)]));
}

after(() => {
  for (const ws of open) ws.terminate();
});

describe("Socket Mode", () => {
  let relay: TestRelay;
  const receivers: WebhookReceiver[] = [];

  before(async () => {
    relay = await startTestRelay({ env: RELAY_ENV });
  });
  after(async () => {
    for (const ws of open) ws.terminate();
    await relay.close();
    await Promise.all(receivers.map((receiver) => receiver.close()));
  });

  test("delivers a mention as an envelope that verifies like a webhook and carries the webhook's payload", async () => {
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    const hook = await createAgent(relay, { name: "Hook", webhook_url: receiver.url });
    const sock = await createAgent(relay, { name: "Sock" });
    const { socket, hello } = await connect(relay, sock.token);
    assert.deepEqual(hello, { type: "hello", agent_id: sock.agent.id, ack_timeout_ms: 300 });
    assert.deepEqual(await connection(relay, sock.agent.id), { webhook_url: null, socket: "connected" });

    const channel = await createChannel(relay, "socket-delivery");
    const posted = await postMessage(relay, channel, "@Hook @Sock hello both");
    const [envelope] = (await socket.envelopesFor(1)) as [Envelope];
    const [webhook] = await receiver.waitFor(1);

    assert.deepEqual(Object.keys(envelope).sort(), ["body", "envelope_id", "headers", "type"]);
    assert.deepEqual(Object.keys(envelope.headers).sort(), ["webhook-id", "webhook-signature", "webhook-timestamp"]);
    assert.equal(envelope.headers["webhook-id"], envelope.envelope_id);
    assert.ok(Math.abs(Number(envelope.headers["webhook-timestamp"]) - Date.now() / 1000) < 10);
    const event = verified<MessageCreatedEvent>(sock.signing_secret, envelope);
    assert.deepEqual(event, JSON.parse(envelope.body));
    assert.equal(event.id, envelope.envelope_id);
    assert.equal(event.type, "message.created");
    assert.deepEqual(event.agent, { id: sock.agent.id, name: "Sock" });
    assert.equal(event.message.id, posted.id);
    assert.equal(event.message.mentioned, true);

    // The webhook agent got the same message as a POST: same shape and, but for its own id and agent, the same payload.
    const hooked = new Webhook(hook.signing_secret).verify(
      webhook?.body ?? "",
      webhook?.headers as Record<string, string>,
    ) as MessageCreatedEvent;
    assert.equal(webhook?.headers["webhook-id"], hooked.id);
    assert.deepEqual(shape(event), shape(hooked));
    assert.deepEqual({ ...event, id: "", agent: null }, { ...hooked, id: "", agent: null });

    const before = await deliveries(relay, sock.agent.id);
    assert.equal(before[0]?.id, envelope.envelope_id);
    assert.notEqual(before[0]?.status, "delivered");
    socket.ack(envelope.envelope_id);
    const delivered = await deliveryWith(relay, sock.agent.id, envelope.envelope_id, "delivered");
    assert.equal(delivered.event_type, "message.created");
    assert.equal(delivered.attempts.length, 1);
    assert.deepEqual(
      {
        url: delivered.attempts[0]?.url,
        outcome: delivered.attempts[0]?.outcome,
        trigger: delivered.attempts[0]?.trigger,
      },
      { url: "socket", outcome: "success", trigger: "scheduled" },
    );
    assert.equal(socket.envelopes.length, 1);
  });

  test("redelivers an unacknowledged envelope with the same id on the same connection after the ack timeout and a retry", async () => {
    const agent = await createAgent(relay, { name: "Forgetful" });
    const { socket } = await connect(relay, agent.token);
    const channel = await createChannel(relay, "socket-redelivery");
    await postMessage(relay, channel, "@Forgetful are you there?");
    const [first] = (await socket.envelopesFor(1)) as [Envelope];
    const firstAt = performance.now();
    const [, second] = (await socket.envelopesFor(2, 3000)) as [Envelope, Envelope];
    const gap = performance.now() - firstAt;
    // 300 ms without an ack, then the first retry 200 ms ± 20% later.
    assert.ok(gap >= 300 + 160 - 20, `the redelivery came ${Math.round(gap)} ms after the first envelope`);
    assert.equal(second.envelope_id, first.envelope_id);
    assert.equal(second.headers["webhook-id"], first.envelope_id);
    assert.equal(second.body, first.body);
    verified(agent.signing_secret, second);

    socket.ack(second.envelope_id);
    const delivered = await deliveryWith(relay, agent.agent.id, first.envelope_id, "delivered");
    assert.deepEqual(
      delivered.attempts.map((a) => [a.attempt, a.url, a.outcome]),
      [
        [1, "socket", "failed"],
        [2, "socket", "success"],
      ],
    );
    assert.match(delivered.attempts[0]?.error ?? "", /acknowledg/);
  });

  test("a connected socket wins over the agent's webhook URL, which takes over once the socket is gone", async () => {
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    const agent = await createAgent(relay, { name: "Both", webhook_url: receiver.url });
    const { socket } = await connect(relay, agent.token);
    assert.deepEqual(await connection(relay, agent.agent.id), { webhook_url: receiver.url, socket: "connected" });
    const channel = await createChannel(relay, "socket-wins");
    await postMessage(relay, channel, "@Both first");
    const [envelope] = (await socket.envelopesFor(1)) as [Envelope];
    socket.ack(envelope.envelope_id);
    const delivered = await deliveryWith(relay, agent.agent.id, envelope.envelope_id, "delivered");
    assert.equal(delivered.attempts[0]?.url, "socket");
    assert.equal(receiver.deliveries.length, 0);

    socket.ws.close();
    await socket.closed;
    await relay.whenHeard(
      async () => ((await connection(relay, agent.agent.id)).socket === "disconnected" ? true : undefined),
      "the socket to be gone",
      AT_ONCE_MS,
    );
    const second = await postMessage(relay, channel, "@Both second");
    const [webhook] = await receiver.waitFor(1);
    assert.equal((JSON.parse(webhook?.body ?? "{}") as MessageCreatedEvent).message.id, second.id);
  });

  test("sends a test event over the socket of an agent without a webhook URL while it is connected", async () => {
    const agent = await createAgent(relay, { name: "Pinged" });
    const refused = await relay.request(`/api/v1/agents/${agent.agent.id}/test-event`, { method: "POST" });
    assert.equal(refused.status, 400);

    const { socket } = await connect(relay, agent.token);
    const accepted = await relay.request(`/api/v1/agents/${agent.agent.id}/test-event`, { method: "POST" });
    assert.equal(accepted.status, 202);
    const [envelope] = (await socket.envelopesFor(1)) as [Envelope];
    const ping = verified<PingEvent>(agent.signing_secret, envelope);
    assert.equal(ping.type, "ping");
    assert.equal(ping.agent.id, agent.agent.id);
    socket.ack(envelope.envelope_id);
    const delivered = await deliveryWith(relay, agent.agent.id, envelope.envelope_id, "delivered");
    assert.deepEqual(
      delivered.attempts.map((a) => [a.trigger, a.url, a.outcome]),
      [["test", "socket", "success"]],
    );
  });

  test("pausing closes the socket with 4003 at once and refuses reconnects with 403 AGENT_PAUSED until resumed", async () => {
    const agent = await createAgent(relay, { name: "Pausable" });
    const { socket } = await connect(relay, agent.token);
    const pausedAt = performance.now();
    assert.equal((await relay.request(`/api/v1/agents/${agent.agent.id}/pause`, { method: "POST" })).status, 200);
    assert.deepEqual(await socket.closed, { code: 4003, reason: "agent paused" });
    assert.ok(performance.now() - pausedAt < 1000);
    const refused = await refusedUpgrade(socketUrl(relay), { authorization: `Bearer ${agent.token}` });
    assert.deepEqual([refused.status, refused.error.code], [403, "AGENT_PAUSED"]);

    assert.equal((await relay.request(`/api/v1/agents/${agent.agent.id}/resume`, { method: "POST" })).status, 200);
    const { hello } = await connect(relay, agent.token);
    assert.equal(hello.agent_id, agent.agent.id);
  });

  test("a new token closes the socket with 4001; the old token is refused with 401 INVALID_TOKEN, the new one connects", async () => {
    const agent = await createAgent(relay, { name: "Rotated" });
    const { socket } = await connect(relay, agent.token);
    const response = await relay.request(`/api/v1/agents/${agent.agent.id}/token`, { method: "POST" });
    assert.equal(response.status, 200);
    const { token } = ((await response.json()) as { data: { token: string } }).data;
    assert.deepEqual(await socket.closed, { code: 4001, reason: "token replaced" });
    const refused = await refusedUpgrade(socketUrl(relay), { authorization: `Bearer ${agent.token}` });
    assert.deepEqual([refused.status, refused.error.code], [401, "INVALID_TOKEN"]);
    const { hello } = await connect(relay, token);
    assert.equal(hello.agent_id, agent.agent.id);
  });

  test("removing the agent closes the socket with 4004 and its token is refused afterwards", async () => {
    const agent = await createAgent(relay, { name: "Removed" });
    const { socket } = await connect(relay, agent.token);
    assert.equal((await relay.request(`/api/v1/agents/${agent.agent.id}`, { method: "DELETE" })).status, 200);
    assert.deepEqual(await socket.closed, { code: 4004, reason: "agent removed" });
    const refused = await refusedUpgrade(socketUrl(relay), { authorization: `Bearer ${agent.token}` });
    assert.deepEqual([refused.status, refused.error.code], [401, "INVALID_TOKEN"]);
  });

  test("refuses a missing, malformed or unknown token and an API key in place of an agent token", async () => {
    for (const headers of [
      {},
      { authorization: "Bearer" },
      { authorization: "Basic abc" },
      { authorization: "Bearer svc_agent_unknown" },
      { authorization: `Bearer ${relay.apiKey}` },
    ]) {
      const refused = await refusedUpgrade(socketUrl(relay), headers);
      assert.deepEqual([refused.status, refused.error.code], [401, "INVALID_TOKEN"], JSON.stringify(headers));
    }
  });

  test("an agent of another workspace never receives this workspace's events, even under the same name", async () => {
    const other = await initWorkspace(
      relay.relay.store,
      { now: () => Date.now() },
      { slug: "beta", ownerName: "Bea Owner" },
    );
    const theirs = await createAgent(relay, { name: "Twin" }, other.apiKey);
    const ours = await createAgent(relay, { name: "Twin" });
    const theirSocket = await connect(relay, theirs.token);
    assert.equal(theirSocket.hello.agent_id, theirs.agent.id);
    const ourSocket = await connect(relay, ours.token);
    const channel = await createChannel(relay, "socket-workspaces");
    await postMessage(relay, channel, "@Twin only for acme");
    const [envelope] = (await ourSocket.socket.envelopesFor(1)) as [Envelope];
    assert.equal(verified<MessageCreatedEvent>(ours.signing_secret, envelope).workspace.slug, "acme");
    // Envelopes come only from the outbox: no event for their agent means none can ever reach their socket.
    assert.deepEqual(await deliveries(relay, theirs.agent.id, other.apiKey), []);
    assert.deepEqual(theirSocket.socket.envelopes, []);
    // Nor does their secret verify our envelope, so even a leaked frame would be rejected.
    assert.throws(() => verified(theirs.signing_secret, envelope));
  });

  test("an ack counts only on the socket its envelope went out on: another agent acknowledging it changes nothing", async () => {
    const mine = await createAgent(relay, { name: "AckOwner" });
    const theirs = await createAgent(relay, { name: "AckThief" });
    const { socket: a } = await connect(relay, mine.token);
    const { socket: b } = await connect(relay, theirs.token);
    const channel = await createChannel(relay, "socket-ack-owner");
    await postMessage(relay, channel, "@AckOwner only you may acknowledge this");
    const [envelope] = (await a.envelopesFor(1)) as [Envelope];
    // The envelope id is the event id, which the other agent may learn (a shared channel, a leak); its ack is ignored.
    b.ack(envelope.envelope_id);
    const [, again] = (await a.envelopesFor(2)) as [Envelope, Envelope];
    assert.equal(again.envelope_id, envelope.envelope_id, "not acknowledged, so it came again");
    a.ack(again.envelope_id);
    const delivered = await deliveryWith(relay, mine.agent.id, envelope.envelope_id, "delivered");
    assert.deepEqual(
      delivered.attempts.map((attempt) => [attempt.attempt, attempt.outcome]),
      [
        [1, "failed"],
        [2, "success"],
      ],
    );
    assert.match(delivered.attempts[0]?.error ?? "", /acknowledg/);
    assert.deepEqual(b.envelopes, []);
  });

  test("an agent holds at most 10 sockets on a relay: the 11th upgrade is refused with 429 until one closes", async () => {
    const agent = await createAgent(relay, { name: "ManySockets" });
    const held: AgentSocket[] = [];
    for (let i = 0; i < 10; i++) held.push((await connect(relay, agent.token)).socket);
    const refused = await refusedUpgrade(socketUrl(relay), { authorization: `Bearer ${agent.token}` });
    assert.deepEqual([refused.status, refused.error.code], [429, "RATE_LIMIT_EXCEEDED"]);
    assert.match(refused.error.message, /10 Socket Mode connections/);
    const other = await createAgent(relay, { name: "NotCapped" });
    assert.equal((await connect(relay, other.token)).hello.agent_id, other.agent.id);
    const first = held[0] as AgentSocket;
    first.ws.close();
    await first.closed;
    await sleep(50);
    assert.equal((await connect(relay, agent.token)).hello.agent_id, agent.agent.id);
  });

  test("live updates need a session cookie and a page of the relay's own origin", async () => {
    const live = socketUrl(relay, "/api/v1/live");
    const anonymous = await refusedUpgrade(live, {});
    assert.deepEqual([anonymous.status, anonymous.error.code], [401, "UNAUTHORIZED"]);

    const signIn = await relay.request("/api/v1/sessions", {
      method: "POST",
      key: null,
      json: { api_key: relay.apiKey },
    });
    assert.equal(signIn.status, 201);
    const cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0] as string;
    assert.match(cookie, /^tab_session=./);
    const crossSite = await refusedUpgrade(live, { cookie, origin: "https://evil.example" });
    assert.deepEqual([crossSite.status, crossSite.error.code], [403, "FORBIDDEN"]);
    const forged = await refusedUpgrade(live, { cookie: "tab_session=forged", origin: relay.url });
    assert.equal(forged.status, 401);
    // An agent token is no session either.
    const agent = await createAgent(relay, { name: "NotASession" });
    assert.equal((await refusedUpgrade(live, { authorization: `Bearer ${agent.token}` })).status, 401);

    const ws = new WebSocket(live, { headers: { cookie, origin: relay.url } });
    open.push(ws);
    const [data] = (await once(ws, "message")) as [Buffer];
    assert.equal((JSON.parse(String(data)) as { type: string; user: { id: string } }).user.id, relay.user.id);
  });
});

describe("Socket Mode upgrades and the rate limits", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({
      env: { ...RELAY_ENV, TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000,agent_reads=3" },
    });
  });
  after(async () => {
    for (const ws of open) ws.terminate();
    await relay.close();
  });

  test("an upgrade is a read of the agent's Agent API counters: past them it is refused with 429, Retry-After and X-RateLimit-* headers", async () => {
    const agent = await createAgent(relay, { name: "Counted" });
    assert.equal((await agentRequest(relay, agent.token, "/me")).status, 200);
    for (let i = 0; i < 2; i++) {
      const { socket } = await connect(relay, agent.token);
      socket.ws.close();
      await socket.closed;
    }
    const refused = await refusedUpgrade(socketUrl(relay), { authorization: `Bearer ${agent.token}` });
    assert.deepEqual([refused.status, refused.error.code], [429, "RATE_LIMIT_EXCEEDED"]);
    assert.ok(Number(refused.headers["retry-after"]) >= 1);
    assert.equal(refused.headers["x-ratelimit-limit"], "3");
    assert.equal(refused.headers["x-ratelimit-remaining"], "0");
    assert.equal(
      (await agentRequest(relay, agent.token, "/me")).status,
      429,
      "the same counter as the Agent API's reads",
    );
    // Another agent's counters are its own.
    const other = await createAgent(relay, { name: "Uncounted" });
    assert.equal((await connect(relay, other.token)).hello.agent_id, other.agent.id);
  });

  test("an upgrade with an unknown token counts against the client's address", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push((await refusedUpgrade(socketUrl(relay), { authorization: "Bearer svc_agent_unknown" })).status);
    assert.deepEqual(statuses, [401, 401, 401, 429]);
    assert.equal((await agentRequest(relay, null, "/me")).status, 429, "as the Agent API counts unknown tokens");
  });
});

describe("Socket Mode across dropped connections and restarts", () => {
  const relays: TestRelay[] = [];
  after(async () => {
    for (const ws of open) ws.terminate();
    await Promise.all(relays.map((relay) => relay.close()));
  });

  test("an envelope left unacknowledged by a dropped connection comes again at once on the next connection", async () => {
    const relay = await startTestRelay({ env: LONG_SCHEDULE_ENV });
    relays.push(relay);
    const agent = await createAgent(relay, { name: "Dropper" });
    const first = await connect(relay, agent.token);
    const channel = await createChannel(relay, "socket-drop");
    await postMessage(relay, channel, "@Dropper catch this");
    const [envelope] = (await first.socket.envelopesFor(1)) as [Envelope];
    first.socket.ws.terminate();
    await first.socket.closed;

    const reconnectedAt = performance.now();
    const second = await connect(relay, agent.token);
    const [again] = (await second.socket.envelopesFor(1, AT_ONCE_MS)) as [Envelope];
    assert.ok(performance.now() - reconnectedAt < AT_ONCE_MS);
    assert.equal(again.envelope_id, envelope.envelope_id);
    assert.equal(again.body, envelope.body);
    verified(agent.signing_secret, again);
    second.socket.ack(again.envelope_id);
    const delivered = await deliveryWith(relay, agent.agent.id, envelope.envelope_id, "delivered");
    assert.deepEqual(
      delivered.attempts.map((a) => [a.url, a.outcome]),
      [
        ["socket", "failed"],
        ["socket", "success"],
      ],
    );
  });

  test("no event is lost across a relay restart: every unacknowledged one arrives again with the same id", async () => {
    const firstRelay = await startTestRelay({ env: LONG_SCHEDULE_ENV });
    const agent = await createAgent(firstRelay, { name: "Survivor" });
    const channel = await createChannel(firstRelay, "socket-restart");

    // Two envelopes left unacknowledged by a dropped connection (waiting for a retry a minute away)...
    const first = await connect(firstRelay, agent.token);
    await postMessage(firstRelay, channel, "@Survivor one");
    await postMessage(firstRelay, channel, "@Survivor two");
    await first.socket.envelopesFor(2);
    first.socket.ws.terminate();
    await first.socket.closed;
    // ...one posted while the agent was away...
    await postMessage(firstRelay, channel, "@Survivor three");
    // ...and all three in flight, unacknowledged, on a new connection when the relay stops.
    const second = await connect(firstRelay, agent.token);
    const inFlight = await second.socket.envelopesFor(3);
    const ids = (await deliveries(firstRelay, agent.agent.id)).map((d) => d.id).sort();
    assert.equal(ids.length, 3);
    assert.deepEqual(inFlight.map((e) => e.envelope_id).sort(), ids);
    await firstRelay.relay.close(0);
    assert.equal((await second.socket.closed).code, 1001);

    const relay = await startTestRelay({ env: LONG_SCHEDULE_ENV, reuse: firstRelay });
    relays.push(relay);
    const third = await connect(relay, agent.token);
    const resent = await third.socket.envelopesFor(3);
    assert.deepEqual(resent.map((e) => e.envelope_id).sort(), ids);
    const texts = resent.map((e) => verified<MessageCreatedEvent>(agent.signing_secret, e).message.text).sort();
    assert.deepEqual(texts, ["@Survivor one", "@Survivor three", "@Survivor two"]);
    for (const envelope of resent) third.socket.ack(envelope.envelope_id);
    const delivered = [];
    for (const id of ids) delivered.push(await deliveryWith(relay, agent.agent.id, id, "delivered"));
    // Each event was attempted once on this relay (after one unacknowledged attempt before the restart, or none for
    // the one posted while the agent was away), and is finished: nothing is left to send it again.
    assert.deepEqual(
      delivered.map((d) => d.attempts.filter((a) => a.outcome === "success").length),
      [1, 1, 1],
    );
    assert.equal(third.socket.envelopes.length, 3);
  });
});

describe("Socket Mode heartbeats", () => {
  test("a connection that stops answering pings is dropped, one that answers stays", async () => {
    const changes: boolean[] = [];
    const changed = new EventEmitter();
    const clock = new FakeClock();
    const sockets = createAgentSockets({
      logger: silentLogger,
      clock,
      heartbeatMs: 100,
      onChange: (_agent, connected) => {
        changes.push(connected);
        changed.emit("change");
      },
    });
    const server = createServer();
    const wss = new WebSocketServer({ server });
    let next = 0;
    /** Pongs the relay's end has received, by agent. */
    const pongs = new EventEmitter();
    wss.on("connection", (ws) => {
      const id = `agt_${next++}`;
      ws.on("pong", () => pongs.emit(id));
      sockets.add({ id, workspace_id: "wks_1" }, ws);
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    /** One heartbeat on the relay's clock, answered (real I/O) by the answering socket before the next. */
    const tick = async () => {
      const pong = once(pongs, "agt_1");
      await clock.advance(100);
      await pong;
    };
    try {
      const silent = new WebSocket(url, { autoPong: false });
      await once(silent, "message");
      const answering = new WebSocket(url);
      await once(answering, "message");
      const closed = once(silent, "close");
      await tick();
      assert.equal(silent.readyState, WebSocket.OPEN, "one missed ping is not yet a dead socket");
      // Missed pings are noticed at the second tick after the last answered one.
      await tick();
      const [code] = (await closed) as [number];
      assert.equal(code, 1006);
      if (sockets.connected("agt_0")) await once(changed, "change");
      assert.equal(sockets.connected("agt_0"), false, "the relay let the silent socket go");
      for (let i = 0; i < 3; i++) await tick();
      assert.equal(answering.readyState, WebSocket.OPEN);
      assert.equal(sockets.connected("agt_1"), true);
      assert.deepEqual(changes, [true, true, false]);
      answering.close();
    } finally {
      sockets.close();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

/** The agent's reply in the thread of `rootId`, once it is there (asked again whenever a message is posted). */
function replyIn(
  relay: TestRelay,
  channelId: string,
  rootId: string,
  agentId: string,
): Promise<{ text: string; author: { id: string } }> {
  return relay.whenHeard(
    async () => {
      const response = await relay.request(`/api/v1/conversations/channel/${channelId}/messages?thread_id=${rootId}`);
      const messages = ((await response.json()) as { data: { text: string; author: { id: string } }[] }).data;
      return messages.find((message) => message.author.id === agentId);
    },
    "the agent's reply",
    AT_ONCE_MS,
  );
}

describe("the echo agent in Socket Mode", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ env: RELAY_ENV });
  });
  after(() => relay.close());

  test("answers a mention over the socket and stops for good when the agent is paused", async () => {
    const agent = await createAgent(relay, { name: "Echo" });
    const logs: Record<string, unknown>[] = [];
    const closed: [number, string][] = [];
    const changed = new EventEmitter();
    const echo = await startEchoSocketAgent({
      relay: relay.url,
      signingSecret: agent.signing_secret,
      token: agent.token,
      log: (entry) => logs.push(entry),
      onClosed: (code, reason) => {
        closed.push([code, reason]);
        changed.emit("change");
      },
      reconnect: { minMs: 20, maxMs: 100 },
    });
    try {
      assert.equal(echo.connected, true);
      const channel = await createChannel(relay, "echo-socket");
      const posted = await postMessage(relay, channel, "@Echo hello over the socket");
      const reply = await replyIn(relay, channel.id, posted.id, agent.agent.id);
      assert.equal(reply.text, "Echo: hello over the socket");
      const [delivery] = await deliveries(relay, agent.agent.id);
      assert.deepEqual([delivery?.status, delivery?.attempts[0]?.url], ["delivered", "socket"]);
      assert.ok(logs.some((entry) => entry.kind === "replied"));

      await relay.request(`/api/v1/agents/${agent.agent.id}/pause`, { method: "POST" });
      await until(changed, () => closed.length > 0, "onClosed");
      assert.deepEqual(closed, [[4003, "agent paused"]]);
      assert.equal(echo.connected, false);
    } finally {
      await echo.close();
    }
  });

  test("the CLI with --socket creates an agent without a webhook URL, connects it and answers", async (t) => {
    const credentials = join(tmpdir(), `echo-agent-socket-${process.pid}.json`);
    t.after(() => rmSync(credentials, { force: true }));
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "examples/echo-agent/agent.ts", "--socket", "--relay", relay.url, "--name", "CliEcho"],
      {
        cwd: new URL("../..", import.meta.url),
        // The agent saves its new token and secret; not in the repository's .tab-relay/.
        env: { PATH: process.env.PATH ?? "", TAB_RELAY_API_KEY: relay.apiKey, ECHO_AGENT_CREDENTIALS: credentials },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const lines: Record<string, unknown>[] = [];
    const printed = new EventEmitter();
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    let buffered = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const complete = buffered.split("\n");
      buffered = complete.pop() ?? "";
      for (const line of complete) if (line.trim() !== "") lines.push(JSON.parse(line) as Record<string, unknown>);
      printed.emit("change");
    });
    const exited = once(child, "exit");
    try {
      await until(printed, () => lines.some((line) => line.kind === "connected"), "the CLI to connect", 15_000).catch(
        (error: unknown) => {
          throw new Error(`${String(error)} (stderr: ${stderr})`);
        },
      );
      const created = lines.find((line) => line.kind === "created");
      assert.equal(typeof created?.agent, "string");
      assert.equal(created?.socket, true);
      const agentId = created?.agent as string;
      assert.deepEqual(await connection(relay, agentId), { webhook_url: null, socket: "connected" });

      const channel = await createChannel(relay, "echo-cli-socket");
      const posted = await postMessage(relay, channel, "@CliEcho ping from the test");
      const reply = await replyIn(relay, channel.id, posted.id, agentId);
      assert.equal(reply.text, "Echo: ping from the test");
      for (const line of lines) assert.doesNotMatch(JSON.stringify(line), /svc_agent_|whsec_/);
    } finally {
      child.kill("SIGTERM");
    }
    const [code] = (await exited) as [number | null];
    assert.equal(code, 0, stderr);
  });
});
