import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { completionBody, fakeClock, startTestRelay, type TestRelay } from "../support/relayHarness";
import { rawAnswer } from "../support/rawAnswer";

// 20 s into a window, so a test's requests never straddle a boundary.
const WINDOW_START = Date.UTC(2026, 10, 28, 8, 0, 0);
const NOW = WINDOW_START + 20_000;
const RESET = String((WINDOW_START + 60_000) / 1000);

const limitHeaders = (remaining: number) => [
  "X-RateLimit-Limit: 5",
  `X-RateLimit-Remaining: ${remaining}`,
  `X-RateLimit-Reset: ${RESET}`,
];

/**
 * The completion route's answers header by header, in order: its success stream is written with one `writeHead`
 * (docs/benchmarks.md, "One writeHead and the postprocessor's allocations"), and every answer keeps the headers and
 * order it had when `X-Request-Id` and `X-RateLimit-*` were set on the response as each was decided.
 */
describe("completion route: the answer's header lines", () => {
  let relay: TestRelay;
  const clock = fakeClock(NOW);
  before(async () => {
    relay = await startTestRelay({ clock, env: { TAB_RELAY_RATE_LIMITS: "reads=5,writes=3" } });
  });
  after(() => relay.close());

  const streamHeaders = (requestId: string, remaining: number) => [
    `X-Request-Id: ${requestId}`,
    ...limitHeaders(remaining),
    "Content-Type: text/event-stream; charset=utf-8",
    "Cache-Control: no-cache, no-transform",
    "Connection: keep-alive",
    "X-Accel-Buffering: no",
    "Date: …",
    "Transfer-Encoding: chunked",
  ];
  const jsonHeaders = (requestId: string, remaining: number, length: number, extra: string[] = []) => [
    `X-Request-Id: ${requestId}`,
    ...limitHeaders(remaining),
    ...extra,
    "Content-Type: application/json; charset=utf-8",
    `Content-Length: ${length}`,
    "Date: …",
    "Connection: keep-alive",
    "Keep-Alive: timeout=65",
  ];

  for (const path of ["/api/v1/tab/chat/completions", "/v1/tab/chat/completions", "/API/V1/Tab/Chat/Completions/"]) {
    test(`${path}: a stream, a whole answer, 400, 401 and 429 answers`, async () => {
      clock.set(NOW + 60_000 * (path.length % 7) + 600_000);
      const reset = String(Math.ceil((Math.floor(clock.now() / 60_000) * 60_000 + 60_000) / 1000));
      const fix = (lines: string[]) => lines.map((line) => line.replace(`Reset: ${RESET}`, `Reset: ${reset}`));

      const stream = await rawAnswer(relay.url, path, {
        key: relay.apiKey,
        requestId: "stream-1",
        body: JSON.stringify(completionBody({}, { stream: true })),
      });
      assert.equal(stream.status, 200);
      assert.deepEqual(stream.headers, fix(streamHeaders("stream-1", 4)));
      assert.match(stream.body, /data: \[DONE\]\n\n$/);

      const whole = await rawAnswer(relay.url, path, {
        key: relay.apiKey,
        requestId: "whole-1",
        body: JSON.stringify(completionBody()),
      });
      assert.equal(whole.status, 200);
      assert.deepEqual(whole.headers, fix(jsonHeaders("whole-1", 3, Buffer.byteLength(whole.body))));

      const malformed = await rawAnswer(relay.url, path, { key: relay.apiKey, requestId: "bad-1", body: "{" });
      assert.equal(malformed.status, 400);
      assert.deepEqual(malformed.headers, fix(jsonHeaders("bad-1", 2, Buffer.byteLength(malformed.body))));

      const unknownModel = await rawAnswer(relay.url, path, {
        key: relay.apiKey,
        requestId: "bad-2",
        body: JSON.stringify({ ...completionBody(), model: "nope" }),
      });
      assert.equal(unknownModel.status, 400);
      assert.match(unknownModel.body, /unknown model/);
      assert.deepEqual(unknownModel.headers, fix(jsonHeaders("bad-2", 1, Buffer.byteLength(unknownModel.body))));

      const noKey = await rawAnswer(relay.url, path, { requestId: "anon-1", body: JSON.stringify(completionBody()) });
      assert.equal(noKey.status, 401);
      // An unauthenticated request is counted against its address, a budget of its own.
      assert.deepEqual(noKey.headers, fix(jsonHeaders("anon-1", 4, Buffer.byteLength(noKey.body))));

      const generated = await rawAnswer(relay.url, path, {
        key: relay.apiKey,
        body: JSON.stringify(completionBody({}, { stream: true })),
      });
      assert.equal(generated.status, 200);
      assert.match(generated.headers[0] ?? "", /^X-Request-Id: req_/);
      assert.deepEqual(generated.headers.slice(1), fix(streamHeaders("", 0)).slice(1));

      const limited = await rawAnswer(relay.url, path, {
        key: relay.apiKey,
        requestId: "over-1",
        body: JSON.stringify(completionBody({}, { stream: true })),
      });
      assert.equal(limited.status, 429);
      const retryAfter = Number(reset) - Math.floor(clock.now() / 1000);
      assert.deepEqual(
        limited.headers,
        fix(jsonHeaders("over-1", 0, Buffer.byteLength(limited.body), [`Retry-After: ${retryAfter}`])),
      );
    });
  }
});
