import assert from "node:assert/strict";
import type { IncomingHttpHeaders, Server } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { AgentApiError, createWebhookReceiver, replyTo } from "./agent";
import type { MessageCreatedEvent, PingEvent } from "./events";
import { WEBHOOK_HEADERS } from "./events";
import { WebhookVerificationError, newSigningSecret, signWebhook } from "./signing";

const NOW_MS = 1_750_000_000_000;
const NOW_S = NOW_MS / 1000;

function messageEvent(overrides: { replyUrl?: string; threadId?: string | null } = {}): MessageCreatedEvent {
  return {
    id: "evt_1",
    type: "message.created",
    created_at: "2025-06-15T15:06:40.000Z",
    workspace: { slug: "acme", name: "Acme" },
    agent: { id: "agt_1", name: "Echo" },
    conversation: { type: "channel", id: "ch_1", name: "#general" },
    message: {
      id: "msg_1",
      text: "@Echo hello",
      thread_id: null,
      author: { id: "usr_1", name: "Ada" },
      mentioned: true,
      direct: false,
      url: "http://relay.test/w/acme/c/ch_1#msg_1",
    },
    reply: {
      url: overrides.replyUrl ?? "http://relay.test/api/v1/agent-api/conversations/channel/ch_1/messages",
      thread_id: overrides.threadId === undefined ? "msg_1" : overrides.threadId,
    },
  };
}

const PING: PingEvent = {
  id: "evt_ping",
  type: "ping",
  created_at: "2025-06-15T15:06:40.000Z",
  workspace: { slug: "acme", name: "Acme" },
  agent: { id: "agt_1", name: "Echo" },
};

async function delivery(
  secret: string,
  webhookId: string,
  body: string,
  timestamp: number = NOW_S,
): Promise<Record<string, string>> {
  return {
    [WEBHOOK_HEADERS.id]: webhookId,
    [WEBHOOK_HEADERS.timestamp]: String(timestamp),
    [WEBHOOK_HEADERS.signature]: await signWebhook(secret, webhookId, timestamp, body),
  };
}

describe("createWebhookReceiver", () => {
  const secret = newSigningSecret();

  test("returns the verified event and marks a retry with the same webhook-id as a duplicate", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS });
    const body = JSON.stringify(messageEvent());
    const first = await receiver.receive(await delivery(secret, "msg_a", body), body);
    assert.equal(first.duplicate, false);
    assert.equal(first.webhookId, "msg_a");
    assert.deepEqual(first.event, messageEvent());
    // A retry is re-signed with a fresh attempt timestamp but keeps the webhook-id.
    const retry = await receiver.receive(await delivery(secret, "msg_a", body, NOW_S - 60), body);
    assert.equal(retry.duplicate, true);
    const other = await receiver.receive(await delivery(secret, "msg_b", body), body);
    assert.equal(other.duplicate, false);
  });

  test("rejects a tampered body and does not remember its webhook-id", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS });
    const body = JSON.stringify(PING);
    const headers = await delivery(secret, "msg_t", body);
    const tampered = body.replace("Acme", "Evil");
    await assert.rejects(
      receiver.receive(headers, tampered),
      (error: unknown) => error instanceof WebhookVerificationError && error.reason === "no_matching_signature",
    );
    const genuine = await receiver.receive(headers, body);
    assert.equal(genuine.duplicate, false, "a forged request must not suppress the real delivery");
    assert.deepEqual(genuine.event, PING);
  });

  test("rejects a delivery signed with another secret", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS });
    const body = JSON.stringify(PING);
    await assert.rejects(
      receiver.receive(await delivery(newSigningSecret(), "msg_x", body), body),
      WebhookVerificationError,
    );
  });

  test("checks timestamps against the injected clock and tolerance", async () => {
    const body = JSON.stringify(PING);
    const headers = await delivery(secret, "msg_clock", body);
    const late = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS + 301_000 });
    await assert.rejects(
      late.receive(headers, body),
      (error: unknown) => error instanceof WebhookVerificationError && error.reason === "timestamp_too_old",
    );
    const lenient = createWebhookReceiver({
      signingSecret: secret,
      now: () => NOW_MS + 301_000,
      toleranceSeconds: 600,
    });
    assert.equal((await lenient.receive(headers, body)).duplicate, false);
  });

  test("forgets the least recently seen webhook-id beyond rememberIds", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS, rememberIds: 2 });
    const body = JSON.stringify(PING);
    const receive = async (id: string) => (await receiver.receive(await delivery(secret, id, body), body)).duplicate;
    assert.equal(await receive("a"), false);
    assert.equal(await receive("b"), false);
    assert.equal(await receive("a"), true, "seeing a again makes b the oldest");
    assert.equal(await receive("c"), false);
    assert.equal(await receive("a"), true);
    assert.equal(await receive("b"), false, "b was evicted");
  });

  test("forget lets a retry through again", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS });
    const body = JSON.stringify(PING);
    const headers = await delivery(secret, "msg_f", body);
    await receiver.receive(headers, body);
    receiver.forget("msg_f");
    assert.equal((await receiver.receive(headers, body)).duplicate, false);
  });

  test("rememberIds 0 reports nothing as a duplicate", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS, rememberIds: 0 });
    const body = JSON.stringify(PING);
    const headers = await delivery(secret, "msg_z", body);
    assert.equal((await receiver.receive(headers, body)).duplicate, false);
    assert.equal((await receiver.receive(headers, body)).duplicate, false);
  });

  test("refuses an unusable secret or rememberIds at creation", () => {
    assert.throws(
      () => createWebhookReceiver({ signingSecret: "whsec_short" }),
      (error: unknown) => error instanceof WebhookVerificationError && error.reason === "invalid_secret",
    );
    assert.throws(() => createWebhookReceiver({ signingSecret: secret, rememberIds: -1 }), RangeError);
  });

  test("uses the system clock when none is injected", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret });
    const body = JSON.stringify(PING);
    const fresh = await delivery(secret, "msg_now", body, Math.floor(Date.now() / 1000));
    assert.equal((await receiver.receive(fresh, body)).duplicate, false);
    const stale = await delivery(secret, "msg_old", body, NOW_S - 86_400);
    await assert.rejects(receiver.receive(stale, body), WebhookVerificationError);
  });
});

interface Captured {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingHttpHeaders;
  body: string;
}

describe("replyTo", () => {
  let server: Server;
  let base: string;
  const captured: Captured[] = [];
  let answer: { status: number; headers?: Record<string, string>; body: string } = { status: 200, body: "" };

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        captured.push({
          method: req.method,
          url: req.url,
          headers: req.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        });
        res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
        res.end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
  });

  test("posts the text into the event's thread with the agent token and returns data", async () => {
    captured.length = 0;
    answer = { status: 201, body: JSON.stringify({ data: { id: "msg_reply", text: "hi" } }) };
    const event = messageEvent({ replyUrl: `${base}/api/v1/agent-api/conversations/channel/ch_1/messages` });
    const data = await replyTo(event, "hi", { token: "svc_agent_token" });
    assert.deepEqual(data, { id: "msg_reply", text: "hi" });
    assert.equal(captured.length, 1);
    const request = captured[0] as Captured;
    assert.equal(request.method, "POST");
    assert.equal(request.url, "/api/v1/agent-api/conversations/channel/ch_1/messages");
    assert.equal(request.headers.authorization, "Bearer svc_agent_token");
    assert.match(request.headers["content-type"] ?? "", /^application\/json/);
    assert.deepEqual(JSON.parse(request.body), { text: "hi", thread_id: "msg_1" });
  });

  test("omits thread_id when the event's reply.thread_id is null (a DM)", async () => {
    captured.length = 0;
    answer = { status: 201, body: JSON.stringify({ data: { id: "msg_dm" } }) };
    const event = messageEvent({ replyUrl: `${base}/api/v1/agent-api/conversations/dm/dm_1/messages`, threadId: null });
    await replyTo(event, "in the DM", { token: "svc_agent_token" });
    const request = captured[0] as Captured;
    assert.deepEqual(JSON.parse(request.body), { text: "in the DM" });
    assert.equal(request.body.includes("thread_id"), false);
  });

  test("surfaces a 429 as AgentApiError with the code and Retry-After seconds", async () => {
    answer = {
      status: 429,
      headers: { "retry-after": "17" },
      body: JSON.stringify({ error: { code: "RATE_LIMIT_EXCEEDED", message: "Too many requests; wait a minute." } }),
    };
    const event = messageEvent({ replyUrl: `${base}/messages` });
    await assert.rejects(replyTo(event, "hi", { token: "svc_agent_token" }), (error: unknown) => {
      assert.ok(error instanceof AgentApiError);
      assert.equal(error.status, 429);
      assert.equal(error.code, "RATE_LIMIT_EXCEEDED");
      assert.equal(error.message, "Too many requests; wait a minute.");
      assert.equal(error.retryAfterSeconds, 17);
      return true;
    });
  });

  test("reads an HTTP-date Retry-After as seconds from now", async () => {
    answer = { status: 503, headers: { "retry-after": new Date(NOW_MS + 120_000).toUTCString() }, body: "" };
    await assert.rejects(
      replyTo(messageEvent({ replyUrl: `${base}/messages` }), "hi", { token: "t", now: () => NOW_MS }),
      (error: unknown) => {
        assert.ok(error instanceof AgentApiError);
        assert.equal(error.code, "SERVICE_UNAVAILABLE");
        assert.ok(
          error.retryAfterSeconds !== undefined && error.retryAfterSeconds >= 118 && error.retryAfterSeconds <= 120,
          String(error.retryAfterSeconds),
        );
        assert.equal(error.retryAfterSeconds, 120);
        return true;
      },
    );
  });

  test("rounds a Retry-After date up to whole seconds, so waiting that long is never too short", async () => {
    answer = { status: 503, headers: { "retry-after": new Date(NOW_MS + 120_000).toUTCString() }, body: "" };
    await assert.rejects(
      replyTo(messageEvent({ replyUrl: `${base}/messages` }), "hi", { token: "t", now: () => NOW_MS - 400 }),
      (error: unknown) => {
        assert.ok(error instanceof AgentApiError);
        assert.equal(error.retryAfterSeconds, 121);
        return true;
      },
    );
  });

  test("ignores a Retry-After that is neither delay-seconds nor an HTTP-date", async () => {
    answer = { status: 503, headers: { "retry-after": "1.5" }, body: "" };
    await assert.rejects(
      replyTo(messageEvent({ replyUrl: `${base}/messages` }), "hi", { token: "t", now: () => NOW_MS }),
      (error: unknown) => {
        assert.ok(error instanceof AgentApiError);
        assert.equal("retryAfterSeconds" in error, false);
        return true;
      },
    );
  });

  test("derives the code from the status when the error body is not an envelope, without retryAfterSeconds", async () => {
    answer = { status: 401, body: "not json" };
    await assert.rejects(
      replyTo(messageEvent({ replyUrl: `${base}/messages` }), "hi", { token: "t" }),
      (error: unknown) => {
        assert.ok(error instanceof AgentApiError);
        assert.equal(error.status, 401);
        assert.equal(error.code, "UNAUTHORIZED");
        assert.equal("retryAfterSeconds" in error, false);
        return true;
      },
    );
  });

  test("uses an injected fetch", async () => {
    const seen: string[] = [];
    const fakeFetch: typeof fetch = async (input) => {
      seen.push(input instanceof Request ? input.url : String(input));
      return new Response(JSON.stringify({ data: "ok" }), { status: 200 });
    };
    assert.equal(await replyTo(messageEvent(), "hi", { token: "t", fetch: fakeFetch }), "ok");
    assert.deepEqual(seen, [messageEvent().reply.url]);
  });
});
