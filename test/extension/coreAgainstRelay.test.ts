// The extension's pipeline against the real relay, in process, over real HTTP: the local engine for the happy
// path, and the relay's OpenAI-compatible provider in front of a scripted upstream for slow streams and failures.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { CompletionSession } from "../../extension/src/core/completionSession";
import { DEFAULT_SETTINGS, type Settings } from "../../extension/src/core/settings";
import { StatusController, initialStatus } from "../../extension/src/core/status";
import { inputAt } from "../../extension/src/core/testing/fixtures";
import type { Clock } from "../../extension/src/core/types";
import { systemClock } from "@tab-relay/shared";
import { FakeClock } from "@tab-relay/shared/testing";
import { fakeClock, startTestRelay, type TestRelay } from "../support/relayHarness";
import { startUpstreamStandIn, type UpstreamStandIn } from "../support/upstreamStandIn";

function pipeline(relay: TestRelay, apiKey: string, overrides: Partial<Settings> = {}, clock: Clock = systemClock) {
  const status = new StatusController(clock, initialStatus(true, []));
  const logs: string[] = [];
  const session = new CompletionSession({
    clock,
    fetch: (url, init) => fetch(url, init),
    logger: { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) },
    getSettings: () => ({
      ...DEFAULT_SETTINGS,
      relayUrl: relay.url,
      workspaceSlug: relay.workspace.slug,
      debounceMs: 5,
      ...overrides,
    }),
    getApiKey: () => Promise.resolve(apiKey),
    status,
  });
  return { session, status, logs };
}

describe("the extension core against the relay's local engine", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay();
  });
  after(() => relay.close());

  test("streams the engine's continuation and shows it as ghost text", async () => {
    const { session, status, logs } = pipeline(relay, relay.apiKey);
    const input = inputAt(
      'function greet(name) {\n  return "Hello, " + name;\n}\n\nfunction greet(name) {\n  return █',
    );
    const shown = await session.provide(input);
    assert.equal(shown?.insertText, '"Hello, " + name;');
    assert.equal(status.kind, "ready");
    assert.match(logs[0] ?? "", /: 200 in \d+ ms/);
    assert.ok(!logs.join("\n").includes(relay.apiKey), "the key is never logged");
  });

  test("repetitive text gets its continuation rather than being taken for a repeat of what was typed", async () => {
    const { session } = pipeline(relay, relay.apiKey);
    const shown = await session.provide(inputAt("- [ ] buy eggs\n- [ ] buy milk\n- [ ] buy eggs\n- [ ] █"));
    assert.match(shown?.insertText ?? "", /^buy milk/);
  });

  test("a key revoked on the relay puts the status in unauthorized and stops asking", async () => {
    const created = (await (
      await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "editor", scopes: ["tab.complete"] } })
    ).json()) as { data: { id: string; secret: string } };
    assert.equal((await relay.request(`/api/v1/api-keys/${created.data.id}`, { method: "DELETE" })).status, 200);
    const { session, status } = pipeline(relay, created.data.secret);
    assert.equal(await session.provide(inputAt("const a = 1;\nconst b = █")), undefined);
    assert.equal(status.kind, "unauthorized");
    assert.equal(await session.provide(inputAt("const a = 1;\nconst b = 2█")), undefined);
    assert.equal(session.stats.requestsStarted, 1);
  });

  test("a key without tab.complete shows as forbidden", async () => {
    const created = (await (
      await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "reader", scopes: ["workspace.read"] } })
    ).json()) as { data: { secret: string } };
    const { session, status } = pipeline(relay, created.data.secret);
    assert.equal(await session.provide(inputAt("x = █")), undefined);
    assert.equal(status.kind, "forbidden");
  });

  test("a relay that is not listening shows as unreachable", async () => {
    const spare = createServer();
    await new Promise<void>((resolve) => spare.listen(0, "127.0.0.1", resolve));
    const { port } = spare.address() as AddressInfo;
    await new Promise<void>((resolve) => spare.close(() => resolve()));
    const { session, status } = pipeline(relay, relay.apiKey, { relayUrl: `http://127.0.0.1:${port}` });
    assert.equal(await session.provide(inputAt("x = █\n")), undefined);
    assert.equal(status.kind, "unreachable");
  });
});

describe("the extension core against the relay in front of a scripted upstream", () => {
  let upstream: UpstreamStandIn;
  let relay: TestRelay;
  // Half a second before a window ends, so a 429's Retry-After is one second.
  const WINDOW = Date.UTC(2026, 10, 21, 12, 0, 0);
  const clock = fakeClock(WINDOW + 59_500);
  before(async () => {
    upstream = await startUpstreamStandIn();
    relay = await startTestRelay({
      clock,
      env: {
        TAB_RELAY_UPSTREAM_URL: upstream.url,
        TAB_RELAY_UPSTREAM_MODEL: "m",
        TAB_RELAY_CACHE_ENTRIES: "0",
        TAB_RELAY_RATE_LIMITS: "reads=1000",
      },
    });
  });
  after(async () => {
    await relay.close();
    await upstream.close();
  });

  test("a single-line context shows its first line while the stream goes on, and the upstream is released", async () => {
    upstream.enqueue({ kind: "reply", text: ["a, ", "b", "\nnext line", " and more", " and more"], chunkDelayMs: 200 });
    const index = upstream.requests.length;
    const { session } = pipeline(relay, relay.apiKey);
    const shown = await session.provide(inputAt("call(█);\n"));
    assert.equal(shown?.insertText, "a, b");
    // The extension hung up, the relay saw it and aborted its upstream request before the stream ended.
    await upstream.waitForClientDisconnect(index, 2000);
  });

  test("a newer keystroke aborts the request in flight, through the relay to the upstream", async () => {
    upstream.enqueue(
      { kind: "reply", text: ["slo", "w", " stream"], chunkDelayMs: 400 },
      { kind: "reply", text: "2;" },
    );
    const index = upstream.requests.length;
    const { session } = pipeline(relay, relay.apiKey);
    const first = session.provide(inputAt("let a = █\n"));
    await upstream.until(() => upstream.requests.length > index, "the first request upstream");
    const second = session.provide(inputAt("let a = 1█\n"));
    assert.equal(await first, undefined);
    await upstream.waitForClientDisconnect(index, 2000);
    assert.equal((await second)?.insertText, "2;");
    assert.equal(session.stats.requestsAborted, 1);
  });

  test("an upstream failure mid-stream is logged and shows nothing", async () => {
    upstream.enqueue({ kind: "disconnect", sent: ["par"] });
    const { session, status, logs } = pipeline(relay, relay.apiKey);
    assert.equal(await session.provide(inputAt("x = █\n")), undefined);
    assert.equal(status.kind, "ready");
    assert.match(logs.join("\n"), /UPSTREAM_ERROR/);
  });

  test("a 429 from the relay backs off for Retry-After and then resumes by itself", async () => {
    const created = (await (
      await relay.request("/api/v1/api-keys", {
        method: "POST",
        json: { name: "tight", scopes: ["tab.complete", "workspace.read"] },
      })
    ).json()) as { data: { secret: string } };
    // Spend the key's whole read budget for this window.
    let spent = 0;
    while ((await relay.request("/api/v1/me", { key: created.data.secret })).status === 200) spent++;
    assert.equal(spent, 1000);
    // The extension's waits (its debounce, its backoff) run on a clock of its own that the test moves.
    const editorClock = new FakeClock(WINDOW + 59_500);
    const { session, status } = pipeline(relay, created.data.secret, {}, editorClock);
    const provide = async (text: string) => {
      const shown = session.provide(inputAt(text));
      await editorClock.advance(5);
      return shown;
    };
    assert.equal(await provide("x = █\n"), undefined);
    assert.equal(status.kind, "rateLimited");
    assert.equal(await provide("x = █\n"), undefined);
    assert.equal(session.stats.requestsStarted, 1, "no request while backing off");
    clock.set(WINDOW + 60_000);
    await editorClock.advance(1_100);
    assert.equal(status.kind, "ready");
    upstream.enqueue({ kind: "reply", text: "42;" });
    assert.equal((await provide("x = █\n"))?.insertText, "42;");
    status.dispose();
  });
});
