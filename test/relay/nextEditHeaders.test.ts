import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { after, before, describe, test } from "node:test";
import type { Api, NextEditRequest } from "@tab-relay/shared";
import { application } from "express";
import { completionBody, dataOf, fakeClock, startTestRelay, type TestRelay } from "../support/relayHarness";
import { WARM_UP_REQUEST } from "../../relay/src/nextEdits/service";
import { type RawAnswer, rawAnswer } from "../support/rawAnswer";

// 20 s into a window, so a spelling's requests never straddle a boundary; each spelling gets a window of its own.
const WINDOW_START = Date.UTC(2026, 10, 28, 8, 0, 0);
const INTO_WINDOW_MS = 20_000;
const READS = 7;
const MAX_BODY_BYTES = 4096;

/** The relay's own warm-up rename (`sum` renamed `priceSum`), which the local engine proposes on, in this workspace. */
function renameRequest(overrides: Partial<NextEditRequest> = {}): NextEditRequest {
  return { ...WARM_UP_REQUEST, workspace_slug: "acme", ...overrides };
}

/**
 * The next-edit route's answers, header by header and byte by byte, whichever spelling of its path is asked: the
 * canonical ones (`/api/v1/tab/next-edits`, `/v1/tab/next-edits`) and the ones only express's router matches (a
 * trailing slash, another case). Every answer keeps the headers and order it has when `X-Request-Id` and
 * `X-RateLimit-*` are set as each is decided, and a next edit counts as a read without counting in Tab usage's
 * `rate_limited` (which is for completions).
 */
describe("next-edit route: the answer's header lines and body, on every spelling", () => {
  let relay: TestRelay;
  let narrowKey: string;
  let reference: Map<string, RawAnswer>;
  const clock = fakeClock(WINDOW_START + INTO_WINDOW_MS);
  let window = 0;
  /** Each exchange in a window of its own, so every spelling starts with full rate-limit counters. */
  const nextWindow = () => {
    window++;
    clock.set(WINDOW_START + window * 60_000 + INTO_WINDOW_MS);
    return String((WINDOW_START + (window + 1) * 60_000) / 1000);
  };

  /** One of each answer the route gives, in an order that leaves the rate-limit figures known. */
  async function exchange(path: string): Promise<Map<string, RawAnswer>> {
    const reset = nextWindow();
    const send = (requestId: string, init: { key?: string; body: string; type?: string }) =>
      rawAnswer(relay.url, path, { requestId, ...init });
    const owner = relay.apiKey;
    const answers = new Map<string, RawAnswer>([
      ["edits", await send("edits", { key: owner, body: JSON.stringify(renameRequest()) })],
      ["no change", await send("no-change", { key: owner, body: JSON.stringify(renameRequest({ recent_edits: [] })) })],
      [
        "a field out of bounds",
        await send("invalid", {
          key: owner,
          body: JSON.stringify(renameRequest({ editable_region: { start_line: 40, end_line: 41 } })),
        }),
      ],
      ["a body that is not JSON", await send("not-json", { key: owner, body: "{" })],
      ["a body over the limit", await send("too-large", { key: owner, body: " ".repeat(MAX_BODY_BYTES + 1) })],
      ["a body of another type", await send("text", { key: owner, body: "hello", type: "text/plain" })],
      [
        "another workspace",
        await send("workspace", { key: owner, body: JSON.stringify(renameRequest({ workspace_slug: "other" })) }),
      ],
      ["no key", await send("anonymous", { body: JSON.stringify(renameRequest()) })],
      ["an unknown key", await send("unknown", { key: "not-a-key", body: JSON.stringify(renameRequest()) })],
      ["a key without tab.complete", await send("narrow", { key: narrowKey, body: JSON.stringify(renameRequest()) })],
      ["over the limit", await send("limited", { key: owner, body: JSON.stringify(renameRequest()) })],
    ]);
    // What differs by the window and the id alone is checked here and then named, so answers compare whole.
    for (const answer of answers.values()) {
      const length = `Content-Length: ${Buffer.byteLength(answer.body)}`;
      answer.headers = answer.headers.map((line) =>
        line === `X-RateLimit-Reset: ${reset}`
          ? "X-RateLimit-Reset: (end of window)"
          : line === length
            ? "Content-Length: (the body's)"
            : line,
      );
      answer.body = answer.body
        .replace(/"id":"nextedit-[\w-]+"/, '"id":"nextedit-…"')
        .replace(/"created":\d+/, '"created":0');
    }
    return answers;
  }

  before(async () => {
    relay = await startTestRelay({
      clock,
      env: { TAB_RELAY_RATE_LIMITS: `reads=${READS},writes=3`, TAB_RELAY_MAX_BODY_BYTES: String(MAX_BODY_BYTES) },
    });
    const narrow = await dataOf<Api.ApiKeyCreated>(
      await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "reader", scopes: ["agents.read"] } }),
      201,
    );
    narrowKey = narrow.secret;
    // A spelling only express's router matches (trailing slash): what every other spelling must answer like.
    reference = await exchange("/api/v1/tab/next-edits/");
  });
  after(() => relay.close());

  const jsonHeaders = (requestId: string, remaining: number, extra: string[] = []) => [
    `X-Request-Id: ${requestId}`,
    "X-RateLimit-Limit: 7",
    `X-RateLimit-Remaining: ${remaining}`,
    "X-RateLimit-Reset: (end of window)",
    ...extra,
    "Content-Type: application/json; charset=utf-8",
    "Content-Length: (the body's)",
    "Date: …",
    "Connection: keep-alive",
    "Keep-Alive: timeout=65",
  ];

  test("each answer's status, header lines in order, and body", () => {
    const expected: [string, number, string, number, RegExp, string[]?][] = [
      ["edits", 200, "edits", 6, /"object":"tab\.next_edit".*"edits":\[\{"range"/],
      ["no change", 200, "no-change", 5, /"edits":\[\],"reason":"no_change"/],
      ["a field out of bounds", 400, "invalid", 4, /"code":"VALIDATION_ERROR".*editable_region/],
      ["a body that is not JSON", 400, "not-json", 3, /"code":"VALIDATION_ERROR","message":"body: not valid JSON"/],
      ["a body over the limit", 413, "too-large", 2, /"code":"PAYLOAD_TOO_LARGE","message":"body: larger than 4096/],
      ["a body of another type", 415, "text", 1, /"code":"UNSUPPORTED_MEDIA_TYPE"/],
      ["another workspace", 401, "workspace", 0, /"code":"UNAUTHORIZED".*workspace_slug/],
      // Unauthenticated requests are counted against their address, a budget of their own; so is the narrow key.
      ["no key", 401, "anonymous", 6, /"code":"UNAUTHORIZED","message":"Missing API key/],
      ["an unknown key", 401, "unknown", 5, /"code":"UNAUTHORIZED","message":"API key not recognised/],
      ["a key without tab.complete", 403, "narrow", 6, /"code":"FORBIDDEN".*tab\.complete/],
      ["over the limit", 429, "limited", 0, /"code":"RATE_LIMIT_EXCEEDED".*7 reads per minute/, ["Retry-After: 40"]],
    ];
    assert.deepEqual(
      [...reference.keys()],
      expected.map(([name]) => name),
    );
    for (const [name, status, requestId, remaining, body, extra] of expected) {
      const answer = reference.get(name);
      assert.ok(answer, name);
      assert.equal(answer.status, status, `${name}: ${answer.body}`);
      assert.deepEqual(answer.headers, jsonHeaders(requestId, remaining, extra), name);
      assert.match(answer.body, body, name);
    }
  });

  for (const path of [
    "/api/v1/tab/next-edits",
    "/v1/tab/next-edits",
    "/api/v1/tab/next-edits?trace=1",
    "/v1/tab/next-edits/",
    "/API/V1/Tab/Next-Edits",
  ]) {
    test(`${path} answers as the trailing-slash spelling does, header by header`, async () => {
      const answers = await exchange(path);
      assert.deepEqual([...answers.keys()], [...reference.keys()]);
      for (const [name, answer] of answers) assert.deepEqual(answer, reference.get(name), `${name} via ${path}`);
    });
  }

  test("a refused next edit is not counted as a rate-limited completion in Tab usage; a refused completion is", async () => {
    // Every spelling above was refused once; a completion refused here shows the counter is the one looked at.
    nextWindow();
    for (let i = 0; i < READS; i++) assert.equal((await relay.request("/api/v1/me")).status, 200);
    const refused = await relay.request("/api/v1/tab/chat/completions", { method: "POST", json: completionBody() });
    assert.equal(refused.status, 429);
    nextWindow();
    const usage = await dataOf<Api.TabUsageReport>(await relay.request("/api/v1/tab/usage"), 200);
    assert.equal(usage.totals.rate_limited, 1);
  });
});

/**
 * Which requests reach express at all: the canonical spellings of the two routes asked for on every pause in the
 * editor (a completion, then a next edit) are served by lanes in front of it (app.ts), and every other spelling goes
 * through express's router, which answers the same (above, and completions.test.ts).
 */
describe("the completion and next-edit lanes: which spellings go around express", () => {
  let relay: TestRelay;
  const seen: string[] = [];
  // Every express application copies `handle` from this prototype when it is made, so the relay made below reports
  // each request express is given.
  const proto = application as unknown as { handle: (req: IncomingMessage, ...rest: unknown[]) => void };
  const handle = proto.handle;
  before(async () => {
    proto.handle = function (this: unknown, req: IncomingMessage, ...rest: unknown[]) {
      seen.push(req.url ?? "");
      handle.call(this, req, ...rest);
    };
    relay = await startTestRelay();
  });
  after(async () => {
    proto.handle = handle;
    await relay.close();
  });

  test("the canonical spellings never reach express's router; the others do, and all answer 200", async () => {
    const ask = async (path: string, json: unknown) => {
      const response = await relay.request(path, { method: "POST", json });
      assert.equal(response.status, 200, `${path}: ${await response.text()}`);
    };
    const lanes = [
      "/api/v1/tab/next-edits",
      "/v1/tab/next-edits",
      "/api/v1/tab/next-edits?trace=1",
      "/api/v1/tab/chat/completions",
      "/v1/tab/chat/completions",
    ];
    const router = ["/api/v1/tab/next-edits/", "/V1/Tab/Next-Edits", "/api/v1/tab/chat/completions/"];
    for (const path of [...lanes, ...router])
      await ask(path, path.toLowerCase().includes("next-edits") ? renameRequest() : completionBody());
    assert.deepEqual(seen, router);
  });
});
