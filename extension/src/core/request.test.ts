import assert from "node:assert/strict";
import { test } from "node:test";
import { buildRequestBody, requestCompletion, type RelayRequest, type RequestOutcome } from "./request";
import { DEFAULT_SETTINGS } from "./settings";
import { FakeClock, FakeFetch, type FetchStep } from "./testing";

const body = buildRequestBody(
  { ...DEFAULT_SETTINGS, workspaceSlug: "acme", maxCompletionTokens: 64 },
  {
    surface: "code",
    workspace_slug: "acme",
    entity_id: "a.ts",
    document_type: "plaintext",
    active_text_before_cursor: "x = ",
  },
);

function setup(steps: FetchStep[], overrides: Partial<RelayRequest> = {}) {
  const clock = new FakeClock();
  const fake = new FakeFetch(clock, steps);
  const controller = new AbortController();
  const request: RelayRequest = {
    relayUrl: "http://relay.test",
    apiKey: "svc_ws_secret",
    body,
    timeoutMs: 2_000,
    singleLine: false,
    signal: controller.signal,
    ...overrides,
  };
  let outcome: RequestOutcome | undefined;
  const done = requestCompletion({ fetch: fake.fetch, clock }, request).then((value) => (outcome = value));
  return { clock, fake, controller, done, result: () => outcome };
}

test("POSTs a streaming request with the key as a bearer token", async () => {
  const { clock, fake, done } = setup([{ kind: "sse", chunks: [{ content: "42" }] }]);
  await clock.advance(0);
  await done;
  const call = fake.calls[0];
  assert.equal(call?.url, "http://relay.test/api/v1/tab/chat/completions");
  assert.equal(call?.method, "POST");
  assert.equal(call?.headers.Authorization, "Bearer svc_ws_secret");
  assert.equal(call?.headers["Content-Type"], "application/json");
  assert.deepEqual(call?.body, {
    model: "tab-v1",
    stream: true,
    max_completion_tokens: 64,
    tab_context: {
      surface: "code",
      workspace_slug: "acme",
      entity_id: "a.ts",
      document_type: "plaintext",
      active_text_before_cursor: "x = ",
    },
  });
  fake.assertDone();
});

test("joins the streamed deltas and reports time to the first chunk", async () => {
  const { clock, done, result } = setup([
    {
      kind: "sse",
      latencyMs: 30,
      chunks: [
        { content: "foo", delayMs: 20 },
        { content: "\nbar", delayMs: 50 },
      ],
    },
  ]);
  await clock.advance(1_000);
  await done;
  assert.deepEqual(result(), {
    kind: "ok",
    text: "foo\nbar",
    ended: "done",
    status: 200,
    firstChunkMs: 50,
    durationMs: 100,
    completionId: "cmpl-test",
  });
});

test("a single-line context shows the first line as soon as it is complete and stops the stream", async () => {
  const { clock, fake, result } = setup(
    [
      {
        kind: "sse",
        chunks: [
          { content: "first", delayMs: 10 },
          { content: " line\nsecond", delayMs: 10 },
          { content: " more", delayMs: 500 },
        ],
      },
    ],
    { singleLine: true },
  );
  await clock.advance(20);
  assert.deepEqual(result(), {
    kind: "ok",
    text: "first line",
    ended: "first line",
    status: 200,
    firstChunkMs: 10,
    durationMs: 20,
    completionId: "cmpl-test",
  });
  assert.equal(fake.calls[0]?.signal.aborted, true);
  assert.equal(clock.pendingTimers, 0);
});

test("gives up after the timeout when the relay does not answer", async () => {
  const { clock, fake, result } = setup([{ kind: "hang" }], { timeoutMs: 300 });
  await clock.advance(299);
  assert.equal(result(), undefined);
  await clock.advance(1);
  assert.deepEqual(result(), { kind: "timeout", durationMs: 300 });
  assert.equal(fake.calls[0]?.signal.aborted, true);
});

test("at the timeout, shows the whole lines that arrived but not a half line", async () => {
  const slow = (singleLine: boolean) =>
    setup(
      [
        {
          kind: "sse",
          chunks: [
            { content: "one\ntwo\nthr", delayMs: 10 },
            { content: "ee", delayMs: 1_000 },
          ],
        },
      ],
      { timeoutMs: 200, singleLine },
    );
  const multi = slow(false);
  await multi.clock.advance(200);
  assert.deepEqual(multi.result(), {
    kind: "ok",
    text: "one\ntwo",
    ended: "timeout",
    status: 200,
    firstChunkMs: 10,
    durationMs: 200,
    completionId: "cmpl-test",
  });
  const single = setup(
    [
      {
        kind: "sse",
        chunks: [
          { content: "thr", delayMs: 10 },
          { content: "ee", delayMs: 1_000 },
        ],
      },
    ],
    { timeoutMs: 200, singleLine: true },
  );
  await single.clock.advance(200);
  assert.deepEqual(single.result(), { kind: "timeout", durationMs: 200 });
});

test("aborting the signal aborts the HTTP request mid-stream", async () => {
  const { clock, fake, controller, result } = setup([
    {
      kind: "sse",
      chunks: [
        { content: "par", delayMs: 10 },
        { content: "tial", delayMs: 100 },
      ],
    },
  ]);
  await clock.advance(50);
  controller.abort();
  await clock.advance(0);
  assert.deepEqual(result(), { kind: "aborted", durationMs: 50 });
  assert.equal(fake.calls[0]?.signal.aborted, true);
  assert.equal(clock.pendingTimers, 0);
});

test("an abort before the response arrives ends the request too", async () => {
  const { clock, controller, result } = setup([{ kind: "sse", latencyMs: 100, chunks: [{ content: "late" }] }]);
  await clock.advance(10);
  controller.abort();
  await clock.advance(0);
  assert.deepEqual(result(), { kind: "aborted", durationMs: 10 });
});

test("reads the relay's error envelope and Retry-After", async () => {
  const { clock, result } = setup([
    {
      kind: "error",
      status: 429,
      code: "RATE_LIMIT_EXCEEDED",
      message: "Too many requests",
      headers: { "Retry-After": "7" },
    },
  ]);
  await clock.advance(0);
  assert.deepEqual(result(), {
    kind: "failed",
    status: 429,
    code: "RATE_LIMIT_EXCEEDED",
    message: "Too many requests",
    retryAfterMs: 7_000,
    durationMs: 0,
  });
});

test("a 401 is a failure with the relay's code", async () => {
  const { clock, result } = setup([{ kind: "error", status: 401, code: "UNAUTHORIZED", message: "Invalid API key" }]);
  await clock.advance(0);
  assert.deepEqual(result(), {
    kind: "failed",
    status: 401,
    code: "UNAUTHORIZED",
    message: "Invalid API key",
    retryAfterMs: undefined,
    durationMs: 0,
  });
});

test("a connection failure means the relay is unreachable", async () => {
  const { clock, result } = setup([{ kind: "network", message: "connect ECONNREFUSED 127.0.0.1:8787" }]);
  await clock.advance(0);
  assert.deepEqual(result(), {
    kind: "unreachable",
    message: "fetch failed: connect ECONNREFUSED 127.0.0.1:8787",
    durationMs: 0,
  });
});
