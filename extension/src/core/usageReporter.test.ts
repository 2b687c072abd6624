import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { TAB_USAGE_MAX_BATCH, TabUsageBatch, systemClock, type TabUsageEvent } from "@tab-relay/shared";
import { USAGE_EVENTS_PATH, sendUsageBatch } from "./request";
import { DEFAULT_SETTINGS, type Settings } from "./settings";
import { FakeClock } from "./testing";
import type { FetchLike } from "./types";
import { UsageReporter } from "./usageReporter";

const KEY = "svc_ws_0123456789abcdefghijklmnopqrstABCDEF";

const event = (n: number): TabUsageEvent => ({
  id: `cmpl-${n}`,
  outcome: "accepted",
  shown_chars: 10,
  accepted_chars: 10,
  shown_lines: 1,
  accepted_lines: 1,
  time_to_ghost_ms: 200,
  language: "typescript",
});

type Answer = { status: number; headers?: Record<string, string> } | "unreachable";

function harness(options: { settings?: Partial<Settings>; telemetry?: boolean; maxQueued?: number } = {}) {
  const clock = new FakeClock();
  const calls: { url: string; headers: Record<string, string>; batch: TabUsageBatch; at: number }[] = [];
  const answers: Answer[] = [];
  let settings: Settings = { ...DEFAULT_SETTINGS, ...options.settings };
  let telemetry = options.telemetry ?? true;
  const logs: string[] = [];
  const fetch: FetchLike = (url, init) => {
    calls.push({
      url,
      headers: init.headers,
      batch: TabUsageBatch.parse(JSON.parse(init.body ?? "")),
      at: clock.now(),
    });
    const answer = answers.shift() ?? { status: 202 };
    if (answer === "unreachable") return Promise.reject(new TypeError("fetch failed"));
    return Promise.resolve(
      new Response(answer.status === 202 ? JSON.stringify({ counted: 1 }) : "{}", {
        status: answer.status,
        headers: answer.headers ?? {},
      }),
    );
  };
  const reporter = new UsageReporter(
    {
      clock,
      fetch,
      logger: { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) },
      getSettings: () => settings,
      getApiKey: () => Promise.resolve(KEY),
      telemetryAllowed: () => telemetry,
    },
    options.maxQueued === undefined ? {} : { maxQueued: options.maxQueued },
  );
  return {
    clock,
    calls,
    answers,
    logs,
    reporter,
    setSettings: (patch: Partial<Settings>) => (settings = { ...settings, ...patch }),
    setTelemetry: (on: boolean) => (telemetry = on),
  };
}

const ids = (batch: TabUsageBatch | undefined) => batch?.events.map((e) => e.id);

test("events go out together about 30 s after the first, to the relay's events endpoint with the key", async () => {
  const { clock, calls, reporter } = harness();
  reporter.record(event(1));
  await clock.advance(10_000);
  reporter.record(event(2));
  await clock.advance(19_999);
  assert.equal(calls.length, 0);
  await clock.advance(1);
  assert.equal(calls.length, 1);
  assert.equal(calls[0]?.url, `http://127.0.0.1:8787${USAGE_EVENTS_PATH}`);
  assert.equal(calls[0]?.headers.Authorization, `Bearer ${KEY}`);
  assert.deepEqual(ids(calls[0]?.batch), ["cmpl-1", "cmpl-2"]);
  assert.deepEqual(reporter.stats, { sent: 2, dropped: 0, queued: 0 });
  await clock.advance(60_000);
  assert.equal(calls.length, 1, "no timer runs while nothing is queued");
  assert.equal(clock.pendingTimers, 0);
});

test("flush sends at once (on deactivate)", async () => {
  const { clock, calls, reporter } = harness();
  reporter.record(event(1));
  await reporter.flush();
  assert.deepEqual(ids(calls[0]?.batch), ["cmpl-1"]);
  assert.equal(clock.pendingTimers, 0);
});

test("a batch carries at most the schema's maximum of events", async () => {
  const { calls, reporter } = harness();
  for (let n = 0; n < 2 * TAB_USAGE_MAX_BATCH + 50; n++) reporter.record(event(n));
  await reporter.flush();
  assert.deepEqual(
    calls.map((call) => call.batch.events.length),
    [TAB_USAGE_MAX_BATCH, TAB_USAGE_MAX_BATCH, 50],
  );
  assert.equal(reporter.stats.sent, 2 * TAB_USAGE_MAX_BATCH + 50);
});

test("while the relay cannot be reached, the queue stays bounded by dropping the oldest events", async () => {
  const { clock, calls, answers, reporter } = harness({ maxQueued: 150 });
  answers.push("unreachable");
  for (let n = 0; n < 100; n++) reporter.record(event(n));
  await clock.advance(30_000);
  assert.equal(calls.length, 1);
  for (let n = 100; n < 200; n++) reporter.record(event(n));
  assert.deepEqual(reporter.stats, { sent: 0, dropped: 50, queued: 150 });
  await clock.advance(30_000);
  assert.deepEqual(
    calls.slice(1).map((call) => [call.batch.events[0]?.id, call.batch.events.length]),
    [
      ["cmpl-50", 100],
      ["cmpl-150", 50],
    ],
  );
  assert.deepEqual(reporter.stats, { sent: 150, dropped: 50, queued: 0 });
});

test("a 429 keeps the events and waits as long as Retry-After asks", async () => {
  const { clock, calls, answers, reporter } = harness();
  answers.push({ status: 429, headers: { "Retry-After": "120" } });
  reporter.record(event(1));
  await clock.advance(30_000);
  assert.equal(calls.length, 1);
  await reporter.flush();
  assert.equal(calls.length, 1, "not even a flush sends before the relay's time");
  await clock.advance(119_999);
  assert.equal(calls.length, 1);
  await clock.advance(30_001);
  assert.equal(calls.length, 2);
  assert.deepEqual(ids(calls[1]?.batch), ["cmpl-1"]);
  assert.equal(reporter.stats.queued, 0);
});

test("a batch the relay refuses for good (an old relay without the endpoint) is dropped, not retried", async () => {
  const { clock, calls, answers, logs, reporter } = harness();
  answers.push({ status: 404 });
  reporter.record(event(1));
  await clock.advance(30_000);
  assert.deepEqual(reporter.stats, { sent: 0, dropped: 1, queued: 0 });
  await clock.advance(60_000);
  assert.equal(calls.length, 1);
  assert.match(logs.join("\n"), /usage: 404 NOT_FOUND/);
});

test("off when tabRelay.reportUsage is false: nothing is queued or sent", async () => {
  const { clock, calls, reporter, setSettings } = harness({ settings: { reportUsage: false } });
  assert.equal(reporter.enabled, false);
  reporter.record(event(1));
  await clock.advance(60_000);
  await reporter.flush();
  assert.equal(calls.length, 0);
  setSettings({ reportUsage: true });
  reporter.record(event(2));
  setSettings({ reportUsage: false });
  await clock.advance(30_000);
  assert.equal(calls.length, 0, "events queued before the switch are not sent after it");
  assert.equal(reporter.stats.queued, 0);
});

test("off when VS Code's telemetry level is off", async () => {
  const { clock, calls, reporter, setTelemetry } = harness({ telemetry: false });
  assert.equal(reporter.enabled, false);
  reporter.record(event(1));
  await reporter.flush();
  setTelemetry(true);
  reporter.record(event(2));
  setTelemetry(false);
  await clock.advance(30_000);
  assert.equal(calls.length, 0);
});

test("sendUsageBatch POSTs the batch as JSON to a real HTTP server", async () => {
  const received: {
    method: string | undefined;
    url: string | undefined;
    headers: IncomingHttpHeaders;
    body: string;
  }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      received.push({ method: req.method, url: req.url, headers: req.headers, body });
      res.writeHead(202, { "Content-Type": "application/json" }).end(JSON.stringify({ counted: 2 }));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    const { port } = server.address() as AddressInfo;
    const outcome = await sendUsageBatch(
      { fetch: (url, init) => fetch(url, init), clock: systemClock },
      { relayUrl: `http://127.0.0.1:${port}`, apiKey: KEY, batch: { events: [event(1), event(2)] }, timeoutMs: 5_000 },
    );
    assert.deepEqual(outcome, { kind: "ok", status: 202 });
    assert.equal(received[0]?.method, "POST");
    assert.equal(received[0]?.url, "/api/v1/tab/events");
    assert.equal(received[0]?.headers.authorization, `Bearer ${KEY}`);
    assert.equal(received[0]?.headers["content-type"], "application/json");
    assert.deepEqual(TabUsageBatch.parse(JSON.parse(received[0]?.body ?? "")), { events: [event(1), event(2)] });
  } finally {
    server.close();
  }
});
