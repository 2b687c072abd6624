import assert from "node:assert/strict";
import type { IncomingHttpHeaders, Server } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, test } from "node:test";
import { randomBytes } from "node:crypto";
import { type MessageCreatedEvent, type PingEvent, signWebhook } from "@tab-relay/agent";
import type { EchoAgent } from "./server";
import { echoText, openEchoAgent, startEchoAgent } from "./server";

/** A signing secret as the relay makes them: `whsec_` and the base64 of 32 random bytes. */
const newSigningSecret = () => `whsec_${randomBytes(32).toString("base64")}`;
const SECRET = newSigningSecret();
const TOKEN = "svc_agent_exampletoken0000000000000000000";

interface ApiRequest {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingHttpHeaders;
  body: string;
}

function messageEvent(
  replyUrl: string,
  text = "@Echo hello   there",
  threadId: string | null = "msg_1",
): MessageCreatedEvent {
  return {
    id: "evt_1",
    type: "message.created",
    created_at: "2025-06-15T15:06:40.000Z",
    workspace: { slug: "acme", name: "Acme" },
    agent: { id: "agt_1", name: "Echo" },
    conversation: { type: "channel", id: "ch_1", name: "#general" },
    message: {
      id: "msg_1",
      text,
      thread_id: null,
      author: { id: "usr_1", name: "Ada" },
      mentioned: true,
      direct: false,
      url: "http://relay.test/m/msg_1",
    },
    reply: { url: replyUrl, thread_id: threadId },
  };
}

const PING: PingEvent = {
  id: "evt_ping",
  type: "ping",
  created_at: "2025-06-15T15:06:40.000Z",
  workspace: { slug: "acme", name: "Acme" },
  agent: { id: "agt_1", name: "Echo" },
};

async function deliver(
  agentUrl: string,
  webhookId: string,
  body: string,
  options: { secret?: string; sentBody?: string; signal?: AbortSignal } = {},
): Promise<Response> {
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = await signWebhook(options.secret ?? SECRET, webhookId, timestamp, body);
  return fetch(`${agentUrl}/webhook`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": webhookId,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signature,
    },
    body: options.sentBody ?? body,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
}

describe("echo agent", () => {
  let api: Server;
  let apiUrl: string;
  let agent: EchoAgent;
  const requests: ApiRequest[] = [];
  const logs: Array<Record<string, unknown>> = [];
  let apiAnswer: { status: number; headers?: Record<string, string>; body: string } = { status: 201, body: "" };
  let holdApi: Promise<void> = Promise.resolve();

  before(async () => {
    api = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        requests.push({
          method: req.method,
          url: req.url,
          headers: req.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        });
        void holdApi.then(() => {
          res.writeHead(apiAnswer.status, { "content-type": "application/json", ...apiAnswer.headers });
          res.end(apiAnswer.body);
        });
      });
    });
    await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
    apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}/api/v1/agent-api/conversations/channel/ch_1/messages`;
    agent = await startEchoAgent({ signingSecret: SECRET, token: TOKEN, port: 0, log: (entry) => logs.push(entry) });
  });

  after(async () => {
    await agent.close();
    await new Promise<void>((resolve) => api.close(() => resolve()));
  });

  beforeEach(() => {
    requests.length = 0;
    apiAnswer = { status: 201, body: JSON.stringify({ data: { id: "msg_reply" } }) };
    holdApi = Promise.resolve();
  });

  test("acknowledges a message with 204 and replies with the echoed text in the event's thread", async () => {
    const body = JSON.stringify(messageEvent(apiUrl));
    const response = await deliver(agent.url, "wh_reply", body);
    assert.equal(response.status, 204);
    await agent.idle();
    assert.equal(requests.length, 1);
    const request = requests[0] as ApiRequest;
    assert.equal(request.method, "POST");
    assert.equal(request.url, "/api/v1/agent-api/conversations/channel/ch_1/messages");
    assert.equal(request.headers.authorization, `Bearer ${TOKEN}`);
    assert.deepEqual(JSON.parse(request.body), { text: "Echo: hello there", thread_id: "msg_1" });
    assert.deepEqual(agent.events.at(-1), JSON.parse(body));
    assert.ok(
      logs.some(
        (entry) =>
          entry.kind === "replied" && entry.webhook_id === "wh_reply" && entry.reply_message_id === "msg_reply",
      ),
    );
  });

  test("answers before the reply has finished", async () => {
    let release = () => {};
    holdApi = new Promise<void>((resolve) => (release = resolve));
    try {
      const response = await deliver(agent.url, "wh_slow", JSON.stringify(messageEvent(apiUrl)), {
        signal: AbortSignal.timeout(2000),
      });
      assert.equal(response.status, 204);
      assert.equal(
        logs.some((entry) => entry.kind === "replied" && entry.webhook_id === "wh_slow"),
        false,
        "the reply must still be pending",
      );
    } finally {
      release();
    }
    await agent.idle();
    assert.ok(logs.some((entry) => entry.kind === "replied" && entry.webhook_id === "wh_slow"));
  });

  test("answers a repeated webhook-id with 200 and does not reply twice", async () => {
    const body = JSON.stringify(messageEvent(apiUrl));
    assert.equal((await deliver(agent.url, "wh_dup", body)).status, 204);
    const again = await deliver(agent.url, "wh_dup", body);
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), { duplicate: true });
    await agent.idle();
    assert.equal(requests.length, 1);
  });

  test("rejects a tampered body, a foreign signature and missing headers with 400 and does not reply", async () => {
    const body = JSON.stringify(messageEvent(apiUrl));
    const tampered = await deliver(agent.url, "wh_bad", body, { sentBody: body.replace("hello", "HELLO") });
    assert.equal(tampered.status, 400);
    assert.equal(((await tampered.json()) as { error: { code: string } }).error.code, "no_matching_signature");
    assert.equal((await deliver(agent.url, "wh_bad2", body, { secret: newSigningSecret() })).status, 400);
    const unsigned = await fetch(`${agent.url}/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    assert.equal(unsigned.status, 400);
    assert.equal(((await unsigned.json()) as { error: { code: string } }).error.code, "missing_headers");
    await agent.idle();
    assert.equal(requests.length, 0);
    // The rejected attempt must not make the genuine delivery look like a duplicate.
    assert.equal((await deliver(agent.url, "wh_bad", body)).status, 204);
    await agent.idle();
    assert.equal(requests.length, 1);
  });

  test("logs a ping without calling the Agent API", async () => {
    assert.equal((await deliver(agent.url, "wh_ping", JSON.stringify(PING))).status, 204);
    await agent.idle();
    assert.equal(requests.length, 0);
    assert.ok(logs.some((entry) => entry.kind === "ping" && entry.event_id === "evt_ping"));
  });

  test("logs a reply refused for longer than the client waits, with its Retry-After", async () => {
    apiAnswer = {
      status: 429,
      headers: { "retry-after": "120" },
      body: JSON.stringify({ error: { code: "RATE_LIMIT_EXCEEDED", message: "wait" } }),
    };
    assert.equal((await deliver(agent.url, "wh_429", JSON.stringify(messageEvent(apiUrl)))).status, 204);
    await agent.idle();
    assert.ok(
      logs.some(
        (entry) =>
          entry.kind === "reply_failed" &&
          entry.webhook_id === "wh_429" &&
          entry.code === "RATE_LIMIT_EXCEEDED" &&
          entry.retry_after_seconds === 120,
      ),
    );
  });

  test("refuses methods other than POST", async () => {
    const response = await fetch(`${agent.url}/webhook`);
    assert.equal(response.status, 405);
    assert.equal(response.headers.get("allow"), "POST");
  });

  test("never logs the signing secret or the token", () => {
    assert.ok(logs.length > 0);
    const text = JSON.stringify(logs);
    assert.equal(text.includes(SECRET.slice(6)), false);
    assert.equal(text.includes(TOKEN), false);
  });
});

describe("echoText", () => {
  test("removes the agent's own mention, in any case, and keeps the rest", () => {
    assert.equal(echoText(messageEvent("u", "@Echo what's up?")), "Echo: what's up?");
    assert.equal(echoText(messageEvent("u", "@Echo: status")), "Echo: status");
    assert.equal(echoText(messageEvent("u", "hey @echo, ping @Ada")), "Echo: hey ping @Ada");
    assert.equal(echoText(messageEvent("u", "@Echoes are not me")), "Echo: @Echoes are not me");
  });

  test("says so when nothing is left", () => {
    assert.equal(echoText(messageEvent("u", "  @Echo  ")), "Echo: (nothing to echo)");
  });
});

describe("openEchoAgent", () => {
  test("listens before it has its secrets, answers 503 with Retry-After until then, and verifies deliveries after", async () => {
    const logs: Array<Record<string, unknown>> = [];
    const agent = await openEchoAgent({ port: 0, log: (entry) => logs.push(entry) });
    try {
      const early = await deliver(agent.url, "wh_early", JSON.stringify(PING));
      assert.equal(early.status, 503);
      assert.equal(early.headers.get("retry-after"), "1");
      assert.equal(agent.events.length, 0);
      agent.useCredentials({ signingSecret: SECRET, token: TOKEN });
      assert.equal((await deliver(agent.url, "wh_early", JSON.stringify(PING))).status, 204);
      assert.equal(
        (await deliver(agent.url, "wh_forged", JSON.stringify(PING), { secret: newSigningSecret() })).status,
        400,
      );
      assert.deepEqual(
        agent.events.map((event) => event.id),
        ["evt_ping"],
      );
      assert.deepEqual(
        logs.map((entry) => entry.kind),
        ["rejected", "received", "ping", "rejected"],
      );
    } finally {
      await agent.close();
    }
  });
});

describe("startEchoAgent", () => {
  test("refuses an invalid signing secret before listening", async () => {
    const started = await startEchoAgent({ signingSecret: "whsec_tooshort", token: TOKEN, port: 0 }).then(
      async (agent) => {
        await agent.close();
        return true;
      },
      () => false,
    );
    assert.equal(started, false);
  });
});
