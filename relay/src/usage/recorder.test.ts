import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, test } from "node:test";
import type { TabUsageEvent } from "@tab-relay/shared";
import { FakeClock } from "@tab-relay/shared/testing";
import { silentLogger } from "../logger";
import { createMetrics } from "../metrics";
import { openSqliteStore } from "../store/sqlite";
import type { Store, UsageGroupBy } from "../store/types";
import { MAX_LANGUAGES, USAGE_FLUSH_EVERY_MS, createUsageRecorder } from "./recorder";

const START = Date.UTC(2026, 10, 24, 23, 59, 0);
const OLIVE = { workspaceId: "ws_acme", userId: "usr_olive" };
const BOB = { workspaceId: "ws_acme", userId: "usr_bob" };

const event = (id: string, extra: Partial<TabUsageEvent> = {}): TabUsageEvent => ({
  id,
  outcome: "accepted",
  shown_chars: 20,
  accepted_chars: 20,
  shown_lines: 2,
  accepted_lines: 2,
  time_to_ghost_ms: 120,
  ...extra,
});

let dir: string;
let store: Store;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "tab-relay-usage-"));
  store = await openSqliteStore(join(dir, "relay.db"));
});
afterEach(() => store.usage.prune("9999-01-01"));
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const summary = (groupBy: UsageGroupBy, userId?: string) =>
  store.usage.summarize("ws_acme", {
    since: "2026-01-01",
    until: "2027-01-01",
    groupBy,
    ...(userId === undefined ? {} : { userId }),
  });

test("counts stay in memory until the flush timer, then reach the store in one write, on the injected clock", async () => {
  const clock = new FakeClock(START);
  const recorder = createUsageRecorder({ store, clock, logger: silentLogger, metrics: createMetrics() });
  recorder.completion(OLIVE, { id: "c1", language: "TypeScript", model: "tab-v1", cacheHit: true, failed: false });
  recorder.completion(OLIVE, { id: "c2", language: "typescript", model: "tab-v1", cacheHit: false, failed: true });
  recorder.rateLimited(OLIVE);
  await clock.advance(USAGE_FLUSH_EVERY_MS - 1);
  await recorder.idle();
  assert.deepEqual(await summary("all"), []);
  await clock.advance(1);
  await recorder.idle();
  const rows = await summary("model");
  assert.deepEqual(
    rows.map((r) => [r.key, r.requests, r.cache_hits, r.errors, r.rate_limited]),
    [
      ["tab-v1", 2, 1, 1, 0],
      ["unknown", 1, 0, 0, 1],
    ],
  );
  await recorder.stop();
  assert.equal(clock.pendingTimers, 0, "a stopped recorder schedules nothing more");
});

test("each event counts against its caller; only the caller's own completion lends its model and language", async () => {
  const clock = new FakeClock(START);
  const metrics = createMetrics();
  const recorder = createUsageRecorder({ store, clock, logger: silentLogger, metrics });
  recorder.completion(OLIVE, { id: "c_olive", language: "python", model: "tab-v1", cacheHit: false, failed: false });
  assert.equal(
    recorder.events(OLIVE, [
      event("c_olive"),
      event("c_olive", { outcome: "accepted_partial", accepted_chars: 5, accepted_lines: 1, time_to_ghost_ms: 90 }),
      event("c_olive", { outcome: "typed_over", accepted_chars: 0, accepted_lines: 0, time_to_ghost_ms: 400 }),
    ]),
    3,
  );
  // Bob reports on Olive's completion, and on one no relay knows: both are Bob's, of an unknown model.
  recorder.events(BOB, [event("c_olive", { outcome: "dismissed", accepted_chars: 0, accepted_lines: 0 })]);
  recorder.events(BOB, [event("c_nobody", { language: "Go" })]);
  await recorder.stop();

  const [olive] = await summary("all", OLIVE.userId);
  assert.deepEqual(
    [olive?.requests, olive?.shown, olive?.accepted, olive?.accepted_partial, olive?.typed_over],
    [1, 3, 1, 1, 1],
  );
  assert.deepEqual(
    [olive?.shown_chars, olive?.accepted_chars, olive?.shown_lines, olive?.accepted_lines],
    [60, 25, 6, 3],
  );
  // 90 ms, 120 ms and 400 ms fall in the buckets up to 100, 150 and 400 ms.
  assert.deepEqual([olive?.ghost_ms_b1, olive?.ghost_ms_b2, olive?.ghost_ms_b5], [1, 1, 1]);
  const bob = await store.usage.summarize("ws_acme", {
    since: "2026-01-01",
    until: "2027-01-01",
    userId: BOB.userId,
    groupBy: "language",
  });
  assert.deepEqual(
    bob.map((r) => [r.key, r.shown, r.dismissed, r.accepted]),
    [
      ["go", 1, 0, 1],
      ["unknown", 1, 1, 0],
    ],
  );
  assert.deepEqual(
    (await summary("model", BOB.userId)).map((r) => r.key),
    ["unknown"],
  );

  const text = await metrics.render();
  assert.match(text, /^tab_relay_tab_suggestions_shown_total\{language="python"\} 3$/m);
  assert.match(text, /^tab_relay_tab_suggestions_accepted_total\{language="python"\} 2$/m);
  assert.match(text, /^tab_relay_tab_accepted_characters_total\{language="python"\} 25$/m);
  assert.match(text, /^tab_relay_tab_suggestions_shown_total\{language="unknown"\} 1$/m);
});

test("counts are filed under the day they were made, and a day's counts add up across flushes", async () => {
  const clock = new FakeClock(START);
  const recorder = createUsageRecorder({ store, clock, logger: silentLogger, metrics: createMetrics() });
  recorder.events(OLIVE, [event("a")]);
  await recorder.flush();
  recorder.events(OLIVE, [event("b")]);
  // Past midnight (UTC): the next counts belong to the 25th.
  await clock.advance(60_000);
  await recorder.idle();
  recorder.events(OLIVE, [event("c")]);
  await recorder.stop();
  assert.deepEqual(
    (await summary("day")).map((r) => [r.key, r.shown]),
    [
      ["2026-11-24", 2],
      ["2026-11-25", 1],
    ],
  );
});

test("languages are normalised and capped, so clients cannot grow the rows or the metrics without bound", async () => {
  const clock = new FakeClock(START);
  const recorder = createUsageRecorder({ store, clock, logger: silentLogger, metrics: createMetrics() });
  recorder.events(OLIVE, [event("a", { language: " C++ " }), event("b", { language: "not a language!" })]);
  for (let i = 0; i < MAX_LANGUAGES + 5; i++) recorder.events(OLIVE, [event(`x${i}`, { language: `lang${i}` })]);
  await recorder.stop();
  const languages = (await summary("language")).map((r) => r.key);
  assert.ok(languages.includes("c++"));
  assert.equal((await summary("language")).find((r) => r.key === "other")?.shown, 1 + 6);
  assert.equal(languages.length, MAX_LANGUAGES + 1);
});

test("a write that fails is logged and its counts are kept for the next flush", async () => {
  const clock = new FakeClock(START);
  const errors: string[] = [];
  let failures = 1;
  const flaky: Pick<Store, "usage"> = {
    usage: {
      ...store.usage,
      async add(rows) {
        if (failures-- > 0) throw new Error("database is locked");
        return store.usage.add(rows);
      },
    },
  };
  const logger = { ...silentLogger, error: (message: string) => void errors.push(message) };
  const recorder = createUsageRecorder({ store: flaky, clock, logger, metrics: createMetrics() });
  recorder.events(OLIVE, [event("a")]);
  await clock.advance(USAGE_FLUSH_EVERY_MS);
  await recorder.idle();
  assert.deepEqual(errors, ["could not store usage counts; kept for the next flush"]);
  recorder.events(OLIVE, [event("b")]);
  await clock.advance(USAGE_FLUSH_EVERY_MS);
  await recorder.idle();
  assert.equal((await summary("all"))[0]?.shown, 2);
  await recorder.stop();
});
