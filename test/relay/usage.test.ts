import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { ApiKeyCreated, TabUsageAccepted, TabUsageReport, UserCreated } from "@tab-relay/shared/api";
import type { TabUsageEvent } from "@tab-relay/shared";
import { FakeClock } from "@tab-relay/shared/testing";
import { NextEditUsage } from "../../extension/src/core/nextEditUsage";
import {
  completionBody,
  dataOf,
  expectError,
  fakeClock,
  startTestRelay,
  type TestRelay,
} from "../support/relayHarness";
import { initWorkspace } from "../../relay/src/workspace/init";
import { startUpstreamStandIn, type UpstreamStandIn } from "../support/upstreamStandIn";

const START = Date.UTC(2026, 10, 24, 9, 0, 0);
const TODAY = "2026-11-24";

const event = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  outcome: "accepted",
  shown_chars: 20,
  accepted_chars: 20,
  shown_lines: 2,
  accepted_lines: 2,
  time_to_ghost_ms: 120,
  ...extra,
});

async function complete(relay: TestRelay, key: string, language: string, stream = false): Promise<string> {
  const response = await relay.request("/api/v1/tab/chat/completions", {
    method: "POST",
    key,
    json: completionBody({ code_language: language }, stream ? { stream: true } : {}),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const id = /"id":"(chatcmpl-[^"]+)"/.exec(text)?.[1];
  assert.ok(id, text);
  return id;
}

async function report(relay: TestRelay, key: string, events: unknown[]): Promise<number> {
  const response = await relay.request("/api/v1/tab/events", { method: "POST", key, json: { events } });
  return (await dataOf<TabUsageAccepted>(response, 202)).counted;
}

const usageOf = async (relay: TestRelay, query: string, key?: string) =>
  dataOf<TabUsageReport>(await relay.request(`/api/v1/tab/usage${query}`, key === undefined ? {} : { key }), 200);

describe("Tab usage: the extension's reports and the relay's counts, read back per day, person, language, model", () => {
  let relay: TestRelay;
  let upstream: UpstreamStandIn;
  let member: { id: string; key: string };
  /** The owner's key that may only complete and report. */
  let ownerTabKey: string;
  let messagesKey: string;

  before(async () => {
    upstream = await startUpstreamStandIn({ behaviour: { kind: "reply", text: "\n  return a + b;\n}" } });
    relay = await startTestRelay({
      clock: fakeClock(START),
      env: {
        TAB_RELAY_UPSTREAM_URL: upstream.url,
        TAB_RELAY_UPSTREAM_MODEL: "stand-in-coder",
        TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000",
      },
    });
    const created = await dataOf<UserCreated>(
      await relay.request("/api/v1/users", { method: "POST", json: { name: "Mia Member", role: "member" } }),
      201,
    );
    member = { id: created.user.id, key: created.api_key.secret };
    const key = async (scopes: string[]) =>
      (
        await dataOf<ApiKeyCreated>(
          await relay.request("/api/v1/api-keys", { method: "POST", json: { name: scopes.join(" "), scopes } }),
          201,
        )
      ).secret;
    ownerTabKey = await key(["tab.complete"]);
    messagesKey = await key(["messages.read"]);
  });
  after(async () => {
    await relay.close();
    await upstream.close();
  });

  test("requests, cache hits, errors and reported outcomes add up per language, person and day", async () => {
    const first = await complete(relay, member.key, "typescript");
    const cached = await complete(relay, member.key, "typescript");
    const streamed = await complete(relay, member.key, "python", true);
    upstream.enqueue({ kind: "error", status: 500 });
    await expectError(
      await relay.request("/api/v1/tab/chat/completions", {
        method: "POST",
        key: member.key,
        json: completionBody({ code_language: "python", active_text_before_cursor: "def broken(" }),
      }),
      502,
      "UPSTREAM_ERROR",
    );
    assert.equal(
      await report(relay, member.key, [
        event(first),
        event(cached, { outcome: "typed_over", accepted_chars: 0, accepted_lines: 0, time_to_ghost_ms: 400 }),
        event(streamed, {
          outcome: "accepted_partial",
          shown_chars: 30,
          accepted_chars: 10,
          shown_lines: 3,
          accepted_lines: 1,
          time_to_ghost_ms: 90,
        }),
      ]),
      3,
    );
    // The owner's tab-only key reports on the member's completion: it counts as the owner's, of an unknown model.
    assert.equal(
      await report(relay, ownerTabKey, [event(first, { outcome: "dismissed", accepted_chars: 0, accepted_lines: 0 })]),
      1,
    );

    const byLanguage = await usageOf(relay, "?group_by=language");
    assert.equal(byLanguage.scope, "workspace");
    assert.equal(byLanguage.until, "2026-11-25");
    assert.equal(byLanguage.since, "2026-10-28");
    const pick = (row: TabUsageReport["rows"][number] | TabUsageReport["totals"] | undefined) =>
      row && [
        row.requests,
        row.cache_hits,
        row.errors,
        row.suggestions_shown,
        row.acceptances,
        row.chars_accepted,
        row.lines_accepted,
      ];
    const language = (name: string) => byLanguage.rows.find((row) => row.key === name);
    assert.deepEqual(pick(language("typescript")), [2, 1, 0, 2, 1, 20, 2]);
    assert.deepEqual(pick(language("python")), [2, 0, 1, 1, 1, 10, 1]);
    assert.equal(language("typescript")?.acceptance_rate, 0.5);
    assert.deepEqual(pick(byLanguage.totals), [4, 1, 1, 4, 2, 30, 3]);
    assert.equal(byLanguage.totals.acceptance_rate, 0.5);
    assert.equal(byLanguage.totals.active_users, 2);
    assert.equal(byLanguage.totals.partial_acceptances, 1);
    assert.equal(byLanguage.totals.typed_over, 1);
    assert.equal(byLanguage.totals.dismissals, 1);
    assert.equal(byLanguage.totals.lines_shown, 9);

    const byUser = await usageOf(relay, "?group_by=user");
    const mia = byUser.rows.find((row) => row.key === member.id);
    assert.equal(mia?.name, "Mia Member");
    // 90, 120 and 400 ms: the median is in the bucket up to 150 ms, the 90th percentile in the one up to 400 ms.
    assert.deepEqual(mia?.time_to_ghost_ms, { p50: 150, p90: 400 });
    assert.deepEqual(pick(byUser.rows.find((row) => row.key === relay.user.id)), [0, 0, 0, 1, 0, 0, 0]);

    const byModel = await usageOf(relay, "?group_by=model");
    assert.deepEqual(
      byModel.rows.map((row) => [row.key, row.requests, row.suggestions_shown]),
      [
        ["tab-v1", 4, 3],
        ["unknown", 0, 1],
      ],
    );
    const byDay = await usageOf(relay, `?group_by=day&since=${TODAY}&until=2026-11-25`);
    assert.deepEqual(
      byDay.rows.map((row) => [row.key, row.requests]),
      [[TODAY, 4]],
    );
    const yesterday = await usageOf(relay, "?since=2026-11-01&until=2026-11-24");
    assert.deepEqual(yesterday.rows, []);
    assert.equal(yesterday.totals.requests, 0);
    assert.equal(yesterday.totals.acceptance_rate, null);
    assert.deepEqual(yesterday.totals.time_to_ghost_ms, { p50: null, p90: null });

    const metrics = await (await fetch(`${relay.url}/metrics`)).text();
    assert.match(metrics, /^tab_relay_tab_suggestions_shown_total\{language="typescript"\} 2$/m);
    assert.match(metrics, /^tab_relay_tab_suggestions_accepted_total\{language="python"\} 1$/m);
    assert.match(metrics, /^tab_relay_tab_accepted_characters_total\{language="typescript"\} 20$/m);
  });

  test("a tab.complete-only key reports events and reads only its own person's usage; a member too", async () => {
    const own = await usageOf(relay, "?group_by=user", ownerTabKey);
    assert.equal(own.scope, "self");
    assert.deepEqual(
      own.rows.map((row) => row.key),
      [relay.user.id],
    );
    assert.equal(own.totals.active_users, 1);
    const mine = await usageOf(relay, "?group_by=user", member.key);
    assert.equal(mine.scope, "self");
    assert.deepEqual(
      mine.rows.map((row) => row.key),
      [member.id],
    );
    await expectError(
      await relay.request("/api/v1/tab/usage", { key: messagesKey }),
      403,
      "FORBIDDEN",
      /tab\.complete/,
    );
    await expectError(
      await relay.request("/api/v1/tab/events", { method: "POST", key: messagesKey, json: { events: [event("x")] } }),
      403,
      "FORBIDDEN",
      /tab\.complete/,
    );
  });

  test("reports and queries are checked at the edge, naming the field", async () => {
    const post = (body: unknown) => relay.request("/api/v1/tab/events", { method: "POST", json: body });
    await expectError(await post({ events: [] }), 400, "VALIDATION_ERROR", /events/);
    await expectError(await post({ events: [{ ...event("x"), text: "secret()" }] }), 400, "VALIDATION_ERROR", /text/);
    await expectError(
      await post({ events: [event("x", { time_to_ghost_ms: -1 })] }),
      400,
      "VALIDATION_ERROR",
      /time_to_ghost_ms/,
    );
    await expectError(await post({ events: Array(101).fill(event("x")) }), 400, "VALIDATION_ERROR", /events/);
    await expectError(await relay.request("/api/v1/tab/usage?since=yesterday"), 400, "VALIDATION_ERROR", /since/);
    await expectError(await relay.request("/api/v1/tab/usage?group_by=editor"), 400, "VALIDATION_ERROR", /group_by/);
    await expectError(await relay.request("/api/v1/tab/usage?until=0000-01-01"), 400, "VALIDATION_ERROR", /until/);
    await expectError(
      await relay.request("/api/v1/tab/usage?since=2026-11-24&until=2026-11-24"),
      400,
      "VALIDATION_ERROR",
      /since/,
    );
    await expectError(
      await relay.request("/api/v1/tab/usage?since=2020-01-01&until=2026-11-24"),
      400,
      "VALIDATION_ERROR",
      /since/,
    );
  });
});

describe("Tab usage across a 429 and a restart", () => {
  test("refused completions count as rate limited, and what was counted is stored when the relay closes", async () => {
    const first = await startTestRelay({ clock: fakeClock(START), env: { TAB_RELAY_RATE_LIMITS: "reads=2" } });
    let second: TestRelay | undefined;
    try {
      const tabKey = (
        await dataOf<ApiKeyCreated>(
          await first.request("/api/v1/api-keys", {
            method: "POST",
            json: { name: "editor", scopes: ["tab.complete"] },
          }),
          201,
        )
      ).secret;
      const id = await complete(first, tabKey, "rust");
      await complete(first, tabKey, "rust");
      await expectError(
        await first.request("/api/v1/tab/chat/completions", { method: "POST", key: tabKey, json: completionBody() }),
        429,
        "RATE_LIMIT_EXCEEDED",
      );
      assert.equal(await report(first, tabKey, [event(id)]), 1);
      await first.relay.close(0);
      second = await startTestRelay({ clock: fakeClock(START), reuse: first });
      const usage = await usageOf(second, "?group_by=language");
      assert.deepEqual(
        usage.rows.map((row) => [row.key, row.requests, row.rate_limited, row.suggestions_shown]),
        [
          ["rust", 2, 0, 1],
          ["unknown", 1, 1, 0],
        ],
      );
    } finally {
      await (second ?? first).close();
    }
  });
});

describe("Tab usage of a document without a code language", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ clock: fakeClock(START) });
  });
  after(async () => relay.close());

  test("a Markdown file's requests and the extension's reports on them (which name markdown) share one row", async () => {
    const response = await relay.request("/api/v1/tab/chat/completions", {
      method: "POST",
      json: completionBody({ surface: "docs", document_type: "markdown", code_language: undefined }),
    });
    const text = await response.text();
    assert.equal(response.status, 200, text);
    const id = /"id":"(chatcmpl-[^"]+)"/.exec(text)?.[1];
    assert.ok(id, text);
    assert.equal(await report(relay, relay.apiKey, [event(id, { language: "markdown" })]), 1);
    const byLanguage = await usageOf(relay, "?group_by=language");
    assert.deepEqual(
      byLanguage.rows.map((row) => [row.key, row.requests, row.suggestions_shown]),
      [["markdown", 1, 1]],
    );
  });
});

describe("Tab usage languages of two workspaces on one relay", () => {
  test("one workspace's 300 made-up languages leave another's python and typescript their own rows", async () => {
    const relay = await startTestRelay({
      clock: fakeClock(START),
      env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" },
    });
    try {
      const beta = await initWorkspace(relay.relay.store, fakeClock(START), { slug: "beta", ownerName: "Bea" });
      const madeUp = Array.from({ length: 300 }, (_, i) => event(`made-up-${i}`, { language: `lang${i}` }));
      for (let i = 0; i < madeUp.length; i += 100) {
        assert.equal(await report(relay, beta.apiKey, madeUp.slice(i, i + 100)), 100);
      }
      assert.equal(
        await report(relay, relay.apiKey, [
          event("mine-1", { language: "python" }),
          event("mine-2", { language: "typescript" }),
        ]),
        2,
      );
      const ours = await usageOf(relay, "?group_by=language");
      assert.deepEqual(
        ours.rows.map((row) => [row.key, row.suggestions_shown]),
        [
          ["python", 1],
          ["typescript", 1],
        ],
      );
      // Beta's own cap still holds: its first 200 names, then `other`.
      const theirs = await usageOf(relay, "?group_by=language", beta.apiKey);
      assert.equal(theirs.rows.length, 201);
      assert.equal(theirs.rows.find((row) => row.key === "other")?.suggestions_shown, 100);
    } finally {
      await relay.close();
    }
  });
});

describe("Tab usage of next edits", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ clock: fakeClock(START) });
  });
  after(async () => relay.close());

  test("the extension's next-edit events count apart from completions, beside an old extension's events", async () => {
    // The extension core's own tracker makes the events, as it does in VS Code.
    const clock = new FakeClock(START);
    const events: TabUsageEvent[] = [];
    const usage = new NextEditUsage({ clock, enabled: () => true, report: (e) => events.push(e) });
    const pausedAt = clock.now();
    await clock.advance(20);
    usage.shown({ id: "ne-1", pausedAt, languageId: "typescript", text: "renamed" });
    usage.accepted();
    usage.shown({ id: "ne-2", pausedAt, languageId: "typescript", text: "a,\nb" });
    usage.ended("dismissed");
    await clock.advance(1_000);
    usage.shown({ id: "ne-3", pausedAt: clock.now() - 60, languageId: "typescript", text: "x" });
    usage.ended("typed_over");
    await clock.advance(1_000);
    assert.equal(events.length, 3);
    // An extension from before next edits sends no `kind`: a completion, as it always was.
    assert.equal(await report(relay, relay.apiKey, [...events, event("cmpl-old")]), 4);

    const { totals, rows } = await usageOf(relay, "?group_by=language");
    assert.deepEqual(totals.next_edits, {
      shown: 3,
      accepted: 1,
      dismissed: 1,
      typed_over: 1,
      acceptance_rate: 1 / 3,
      chars_shown: 7 + 4 + 1,
      chars_accepted: 7,
      mean_time_to_show_ms: Math.round((20 + 20 + 60) / 3),
    });
    assert.deepEqual(
      [totals.suggestions_shown, totals.acceptances, totals.dismissals, totals.typed_over, totals.chars_shown],
      [1, 1, 0, 0, 20],
      "next edits do not count as completion suggestions",
    );
    assert.equal(totals.time_to_ghost_ms.p50, 150, "only the completion's time is in the ghost-text histogram");
    assert.deepEqual(
      rows.map((row) => [row.key, row.suggestions_shown, row.next_edits.shown]),
      [
        ["typescript", 0, 3],
        ["unknown", 1, 0],
      ],
    );
    // Read per day and per person too: the roll-ups and the daily rows agree.
    assert.equal((await usageOf(relay, "?group_by=day")).rows[0]?.next_edits.accepted, 1);
    assert.equal((await usageOf(relay, "?group_by=user")).rows[0]?.next_edits.shown, 3);
  });

  test("a kind the relay does not know is refused, naming the field", async () => {
    await expectError(
      await relay.request("/api/v1/tab/events", {
        method: "POST",
        json: { events: [event("x", { kind: "refactor" })] },
      }),
      400,
      "VALIDATION_ERROR",
      /kind/,
    );
  });
});
