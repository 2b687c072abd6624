import assert from "node:assert/strict";
import type { IncomingHttpHeaders, Server } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { FakeClock, settle } from "@tab-relay/shared/testing";
import { AgentApiError, createAgentClient, replyTo } from "./client";
import { NOW_MS, messageEvent } from "./fixtures";

/** A clock standing still at `ms`: Retry-After dates are read against it. */
function clockAt(ms: number): FakeClock {
  return new FakeClock(ms);
}

interface Captured {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingHttpHeaders;
  body: string;
}

describe("replyTo and the client's answers", () => {
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
    await assert.rejects(replyTo(event, "hi", { token: "svc_agent_token", maxRetries: 0 }), (error: unknown) => {
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
      replyTo(messageEvent({ replyUrl: `${base}/messages` }), "hi", { token: "t", clock: clockAt(NOW_MS) }),
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
      replyTo(messageEvent({ replyUrl: `${base}/messages` }), "hi", { token: "t", clock: clockAt(NOW_MS - 400) }),
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
      replyTo(messageEvent({ replyUrl: `${base}/messages` }), "hi", { token: "t", clock: clockAt(NOW_MS) }),
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
      return new Response(JSON.stringify({ data: { id: "msg_ok" } }), { status: 200 });
    };
    assert.deepEqual(await replyTo(messageEvent(), "hi", { token: "t", fetch: fakeFetch }), { id: "msg_ok" });
    assert.deepEqual(seen, [messageEvent().reply.url]);
  });
});

describe("createAgentClient", () => {
  let server: Server;
  let url: string;
  const seen: { method: string; path: string; body: string; authorization: string | undefined }[] = [];
  /** The answers to give, in order; the last one repeats. */
  let script: { status: number; headers?: Record<string, string>; body: unknown }[] = [];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        seen.push({
          method: req.method ?? "",
          path: req.url ?? "",
          body: Buffer.concat(chunks).toString("utf8"),
          authorization: req.headers.authorization,
        });
        const next = (script.length > 1 ? script.shift() : script[0]) ?? { status: 500, body: "" };
        res.writeHead(next.status, { "content-type": "application/json", ...next.headers });
        res.end(typeof next.body === "string" ? next.body : JSON.stringify(next.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const reset = (answers: typeof script) => {
    seen.length = 0;
    script = answers;
  };

  test("reads and posts under /api/v1/agent-api of the relay's address, with the token, and returns data", async () => {
    const client = createAgentClient({ url: `${url}/`, token: "svc_agent_x" });
    reset([{ status: 200, body: { data: { agent: { id: "agt_1" }, workspace: { slug: "acme", name: "Acme" } } } }]);
    assert.equal((await client.me()).workspace.slug, "acme");
    reset([{ status: 200, body: { data: [{ type: "channel", id: "ch_1", name: "#general" }] } }]);
    assert.equal((await client.conversations())[0]?.id, "ch_1");
    reset([{ status: 200, body: { data: [] } }]);
    await client.messages({ type: "dm", id: "dm 1" }, { thread_id: "msg_1", before: "msg_9", limit: 5 });
    reset([{ status: 201, body: { data: { id: "msg_2", text: "hello" } } }]);
    assert.equal((await client.post({ type: "channel", id: "ch_1" }, { text: "hello", thread_id: null })).id, "msg_2");
    assert.deepEqual(seen[0], {
      method: "POST",
      path: "/api/v1/agent-api/conversations/channel/ch_1/messages",
      body: JSON.stringify({ text: "hello" }),
      authorization: "Bearer svc_agent_x",
    });
  });

  test("builds the messages query from the options given, the id escaped", async () => {
    const client = createAgentClient({ url, token: "t" });
    reset([{ status: 200, body: { data: [] } }]);
    await client.messages({ type: "dm", id: "dm 1" }, { thread_id: "msg_1", limit: 5 });
    await client.messages({ type: "channel", id: "ch_1" });
    assert.deepEqual(
      seen.map((request) => request.path),
      [
        "/api/v1/agent-api/conversations/dm/dm%201/messages?thread_id=msg_1&limit=5",
        "/api/v1/agent-api/conversations/channel/ch_1/messages",
      ],
    );
  });

  test("waits out a 429's Retry-After on its clock and sends the post again", async () => {
    const clock = new FakeClock(NOW_MS);
    const client = createAgentClient({ url, token: "t", clock });
    reset([
      {
        status: 429,
        headers: { "retry-after": "3" },
        body: { error: { code: "RATE_LIMIT_EXCEEDED", message: "slow" } },
      },
      { status: 201, body: { data: { id: "msg_late" } } },
    ]);
    const posted = client.post({ type: "channel", id: "ch_1" }, { text: "hi" });
    await waitFor(() => clock.pendingTimers === 1);
    assert.equal(seen.length, 1);
    await clock.advance(2999);
    assert.equal(seen.length, 1, "not before the 3 s are up");
    await clock.advance(1);
    assert.equal((await posted).id, "msg_late");
    assert.equal(seen.length, 2);
  });

  test("gives up after maxRetries, and at once on a Retry-After beyond maxRetryAfterMs", async () => {
    const clock = new FakeClock(NOW_MS);
    reset([
      { status: 429, headers: { "retry-after": "1" }, body: { error: { code: "RATE_LIMIT_EXCEEDED", message: "x" } } },
    ]);
    const client = createAgentClient({ url, token: "t", clock, maxRetries: 1 });
    const me = client.me();
    const failed = assert.rejects(me, (error: unknown) => error instanceof AgentApiError && error.status === 429);
    await waitFor(() => clock.pendingTimers === 1);
    await clock.advance(1000);
    await failed;
    assert.equal(seen.length, 2);

    reset([
      {
        status: 429,
        headers: { "retry-after": "120" },
        body: { error: { code: "RATE_LIMIT_EXCEEDED", message: "x" } },
      },
    ]);
    await assert.rejects(createAgentClient({ url, token: "t", clock }).me(), (error: unknown) => {
      assert.ok(error instanceof AgentApiError);
      assert.equal(error.retryAfterSeconds, 120);
      return true;
    });
    assert.equal(seen.length, 1, "a two-minute wait is the agent's decision");
  });

  test("sends a read again after a 503 but never a post, which may have been stored", async () => {
    const clock = new FakeClock(NOW_MS);
    const client = createAgentClient({ url, token: "t", clock });
    reset([
      { status: 503, headers: { "retry-after": "2" }, body: { error: { code: "SERVICE_UNAVAILABLE", message: "db" } } },
      { status: 200, body: { data: [] } },
    ]);
    const read = client.conversations();
    await waitFor(() => clock.pendingTimers === 1);
    await clock.advance(2000);
    assert.deepEqual(await read, []);
    reset([
      { status: 503, headers: { "retry-after": "2" }, body: { error: { code: "SERVICE_UNAVAILABLE", message: "db" } } },
    ]);
    await assert.rejects(
      client.post({ type: "channel", id: "ch_1" }, { text: "once" }),
      (error: unknown) => error instanceof AgentApiError && error.code === "SERVICE_UNAVAILABLE",
    );
    assert.equal(seen.length, 1);
  });

  test("an abort during the wait ends the call with the signal's reason", async () => {
    const clock = new FakeClock(NOW_MS);
    const client = createAgentClient({ url, token: "t", clock });
    reset([
      { status: 429, headers: { "retry-after": "5" }, body: { error: { code: "RATE_LIMIT_EXCEEDED", message: "x" } } },
    ]);
    const controller = new AbortController();
    const me = client.me({ signal: controller.signal });
    await waitFor(() => clock.pendingTimers === 1);
    controller.abort(new Error("shutting down"));
    await assert.rejects(me, /shutting down/);
    assert.equal(clock.pendingTimers, 0);
  });

  test("needs the relay's address for every call but reply, and a token", async () => {
    const client = createAgentClient({ token: "t" });
    await assert.rejects(client.me(), TypeError);
    assert.throws(() => createAgentClient({ token: "" }), TypeError);
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await settle();
  assert.ok(condition(), "timed out waiting");
}
