import assert from "node:assert/strict";
import { test } from "node:test";
import type { RequestOutcome } from "./request";
import {
  REQUESTING_SHOWN_AFTER_MS,
  StatusController,
  deriveStatus,
  initialStatus,
  reduceStatus,
  type Notice,
  type StatusKind,
  type StatusModel,
} from "./status";
import { STATUS_TEXT, actionLabel, describeNotice, describeStatus } from "./statusView";
import { FakeClock } from "./testing";

const NOW = 1_000_000;
const ready = initialStatus(true, []);

function failed(status: number, retryAfterMs?: number): RequestOutcome {
  return { kind: "failed", status, code: "X", message: `HTTP ${status}`, retryAfterMs, durationMs: 5 };
}
const ok: RequestOutcome = { kind: "ok", text: "x", ended: "done", status: 200, firstChunkMs: 1, durationMs: 2 };
const unreachable: RequestOutcome = { kind: "unreachable", message: "ECONNREFUSED", durationMs: 1 };

function after(model: StatusModel, outcome: RequestOutcome, now = NOW): StatusModel {
  return reduceStatus(reduceStatus(model, { type: "requestStarted" }, now), { type: "requestEnded", outcome }, now);
}

test("ready → requesting once a request has been in flight for a second → ready when it ends", () => {
  const started = reduceStatus(ready, { type: "requestStarted" }, NOW);
  assert.equal(deriveStatus(started, NOW), "ready");
  assert.equal(deriveStatus(started, NOW + REQUESTING_SHOWN_AFTER_MS - 1), "ready");
  assert.equal(deriveStatus(started, NOW + REQUESTING_SHOWN_AFTER_MS), "requesting");
  const ended = reduceStatus(started, { type: "requestEnded", outcome: ok }, NOW + REQUESTING_SHOWN_AFTER_MS);
  assert.equal(deriveStatus(ended, NOW + REQUESTING_SHOWN_AFTER_MS), "ready");
});

test("overlapping requests show as requesting from the first one's start until the last one ends", () => {
  const first = reduceStatus(ready, { type: "requestStarted" }, NOW);
  const second = reduceStatus(first, { type: "requestStarted" }, NOW + 600);
  const firstEnded = reduceStatus(second, { type: "requestEnded", outcome: ok }, NOW + 700);
  assert.equal(deriveStatus(firstEnded, NOW + REQUESTING_SHOWN_AFTER_MS), "requesting");
  const bothEnded = reduceStatus(firstEnded, { type: "requestEnded", outcome: ok }, NOW + 1_200);
  assert.equal(deriveStatus(bothEnded, NOW + 1_200), "ready");
  // The next request counts its own time, not the earlier ones'.
  const next = reduceStatus(bothEnded, { type: "requestStarted" }, NOW + 1_300);
  assert.equal(deriveStatus(next, NOW + 1_300 + REQUESTING_SHOWN_AFTER_MS - 1), "ready");
});

test("the controller tells nobody about a request answered within the second, and shows a slower one by itself", async () => {
  const clock = new FakeClock(NOW);
  const status = new StatusController(clock, ready);
  const seen: StatusKind[] = [];
  status.onChange((kind) => seen.push(kind));
  status.dispatch({ type: "requestStarted" });
  await clock.advance(40);
  status.dispatch({ type: "requestEnded", outcome: ok });
  assert.deepEqual(seen, []);
  assert.equal(clock.pendingTimers, 0);

  status.dispatch({ type: "requestStarted" });
  await clock.advance(REQUESTING_SHOWN_AFTER_MS - 1);
  assert.deepEqual(seen, []);
  await clock.advance(1);
  assert.deepEqual(seen, ["requesting"]);
  assert.equal(clock.pendingTimers, 0, "no timer is left running while the request goes on");
  await clock.advance(5_000);
  status.dispatch({ type: "requestEnded", outcome: ok });
  assert.deepEqual(seen, ["requesting", "ready"]);
  status.dispose();
});

test("disabled and enabled again by configuration", () => {
  const off = reduceStatus(ready, { type: "configured", enabled: false, missing: [] }, NOW);
  assert.equal(deriveStatus(off, NOW), "disabled");
  assert.equal(deriveStatus(reduceStatus(off, { type: "configured", enabled: true, missing: [] }, NOW), NOW), "ready");
});

test("not configured until the missing settings and key are there", () => {
  const missing = reduceStatus(ready, { type: "configured", enabled: true, missing: ["API key"] }, NOW);
  assert.equal(deriveStatus(missing, NOW), "notConfigured");
  assert.equal(
    deriveStatus(reduceStatus(missing, { type: "configured", enabled: true, missing: [] }, NOW), NOW),
    "ready",
  );
});

test("snoozed until the given time, or until resumed", () => {
  const snoozed = reduceStatus(ready, { type: "snoozed", until: NOW + 5 * 60_000 }, NOW);
  assert.equal(deriveStatus(snoozed, NOW + 1), "snoozed");
  assert.equal(deriveStatus(reduceStatus(snoozed, { type: "tick" }, NOW + 5 * 60_000), NOW + 5 * 60_000), "ready");
  assert.equal(deriveStatus(reduceStatus(snoozed, { type: "resumed" }, NOW), NOW), "ready");
});

test("401 → unauthorized until the key changes", () => {
  const rejected = after(ready, failed(401));
  assert.equal(deriveStatus(rejected, NOW), "unauthorized");
  assert.equal(
    deriveStatus(reduceStatus(rejected, { type: "tick" }, NOW + 3_600_000), NOW + 3_600_000),
    "unauthorized",
  );
  assert.equal(deriveStatus(reduceStatus(rejected, { type: "credentialsChanged" }, NOW), NOW), "ready");
});

test("403 → forbidden until retried", () => {
  const forbidden = after(ready, failed(403));
  assert.equal(deriveStatus(forbidden, NOW), "forbidden");
  assert.equal(deriveStatus(reduceStatus(forbidden, { type: "retry" }, NOW), NOW), "ready");
});

test("429 → rate limited for Retry-After, then ready again by itself", () => {
  const limited = after(ready, failed(429, 7_000));
  assert.equal(deriveStatus(limited, NOW + 6_999), "rateLimited");
  assert.equal(deriveStatus(reduceStatus(limited, { type: "tick" }, NOW + 7_000), NOW + 7_000), "ready");
});

test("429 without Retry-After backs off exponentially", () => {
  const first = after(ready, failed(429));
  const second = after(reduceStatus(first, { type: "tick" }, NOW + 1_000), failed(429), NOW + 1_000);
  assert.deepEqual(first.problem?.kind === "rateLimited" && first.problem.until, NOW + 1_000);
  assert.deepEqual(second.problem?.kind === "rateLimited" && second.problem.until, NOW + 1_000 + 2_000);
});

test("a connection failure → relay unreachable, with growing retry delays, until a request succeeds", () => {
  const once = after(ready, unreachable);
  const twice = after(once, unreachable, NOW + 1_000);
  assert.equal(deriveStatus(twice, NOW), "unreachable");
  assert.equal(once.problem?.kind === "unreachable" && once.problem.retryAt, NOW + 1_000);
  assert.equal(twice.problem?.kind === "unreachable" && twice.problem.retryAt, NOW + 1_000 + 2_000);
  assert.equal(deriveStatus(after(twice, ok), NOW), "ready");
});

test("a server error or timeout is logged but does not change the state", () => {
  assert.equal(deriveStatus(after(ready, failed(502)), NOW), "ready");
  assert.equal(deriveStatus(after(ready, { kind: "timeout", durationMs: 5_000 }), NOW), "ready");
});

test("the controller blocks requests while rate limited and resumes by itself when Retry-After has passed", async () => {
  const clock = new FakeClock(NOW);
  const status = new StatusController(clock, ready);
  const seen: StatusKind[] = [];
  status.onChange((kind) => seen.push(kind));
  status.dispatch({ type: "requestStarted" });
  status.dispatch({ type: "requestEnded", outcome: failed(429, 3_000) });
  assert.equal(status.gate().blocked, "rateLimited");
  await clock.advance(2_999);
  assert.equal(status.kind, "rateLimited");
  await clock.advance(1);
  assert.equal(status.kind, "ready");
  assert.equal(status.gate().blocked, undefined);
  assert.deepEqual(seen, ["rateLimited", "ready"]);
});

test("the controller ends a snooze by itself", async () => {
  const clock = new FakeClock(NOW);
  const status = new StatusController(clock, ready);
  status.dispatch({ type: "snoozed", until: NOW + 15 * 60_000 });
  assert.deepEqual(status.gate(), { pause: "snoozed", blocked: "snoozed" });
  await clock.advance(15 * 60_000);
  assert.equal(status.kind, "ready");
  assert.equal(clock.pendingTimers, 0);
});

test("blocks requests to an unreachable relay only until the retry time", () => {
  const clock = new FakeClock(NOW);
  const status = new StatusController(clock, after(ready, unreachable));
  assert.equal(status.gate().blocked, "unreachable");
  const later = new StatusController(new FakeClock(NOW + 1_000), after(ready, unreachable));
  assert.equal(later.gate().blocked, undefined);
  assert.equal(later.kind, "unreachable");
});

test("each problem is announced once, not on every failed request", () => {
  const status = new StatusController(new FakeClock(NOW), ready);
  const notices: Notice[] = [];
  status.onNotice((notice) => notices.push(notice));
  for (let i = 0; i < 3; i++) {
    status.dispatch({ type: "requestStarted" });
    status.dispatch({ type: "requestEnded", outcome: failed(401) });
  }
  assert.deepEqual(notices, [{ kind: "unauthorized", message: "HTTP 401" }]);
  status.dispatch({ type: "credentialsChanged" });
  status.dispatch({ type: "requestStarted" });
  status.dispatch({ type: "requestEnded", outcome: failed(401) });
  assert.equal(notices.length, 2);
});

test("a rate limit is shown in the status bar but not announced", () => {
  const status = new StatusController(new FakeClock(NOW), ready);
  const notices: Notice[] = [];
  status.onNotice((notice) => notices.push(notice));
  status.dispatch({ type: "requestStarted" });
  status.dispatch({ type: "requestEnded", outcome: failed(429, 1_000) });
  assert.deepEqual(notices, []);
  status.dispose();
});

test("every state has its own status bar text, and unauthorized offers to set the key", () => {
  const texts = Object.values(STATUS_TEXT);
  assert.equal(new Set(texts).size, texts.length);
  assert.equal(STATUS_TEXT.unauthorized, "$(error) Tab: unauthorized");
  const view = describeStatus("unauthorized", after(ready, failed(401)), NOW, String);
  assert.equal(view.severity, "error");
  assert.equal(view.actions[0], "setApiKey");
  assert.deepEqual(describeStatus("disabled", ready, NOW, String).actions[0], "enable");
  assert.deepEqual(describeStatus("snoozed", ready, NOW, String).actions[0], "resume");
});

test("the one-time notice for an unreachable relay names the URL and offers setup and the settings", () => {
  const notice = describeNotice("unreachable", "ECONNREFUSED", "http://127.0.0.1:8787");
  assert.match(notice.message, /http:\/\/127\.0\.0\.1:8787 \(ECONNREFUSED\)/);
  assert.deepEqual(notice.actions, ["setup", "openSettings", "showLog"]);
  assert.deepEqual(describeNotice("unauthorized", "Invalid API key", "x").actions[0], "setApiKey");
});

test("two timeouts in a row are a state of their own, shown until an answer comes", () => {
  const timeout: RequestOutcome = { kind: "timeout", durationMs: 5_001 };
  const once = after(ready, timeout);
  assert.equal(deriveStatus(once, NOW), "ready");
  const twice = after(once, timeout);
  assert.equal(deriveStatus(twice, NOW), "timingOut");
  const view = describeStatus("timingOut", twice, NOW, String);
  assert.equal(view.text, "$(watch) Tab: relay not answering");
  assert.match(view.tooltip, /last 2 requests got no answer in time/);
  assert.equal(deriveStatus(after(twice, ok), NOW), "ready");
});

test("a 401 for a key of another workspace is wrongWorkspace, naming it, with the switch offered first", () => {
  const model = reduceStatus(
    reduceStatus(ready, { type: "requestStarted" }, NOW),
    { type: "requestEnded", outcome: failed(401), keyWorkspace: { slug: "acme", name: "Acme", configured: "other" } },
    NOW,
  );
  assert.equal(deriveStatus(model, NOW), "wrongWorkspace");
  const view = describeStatus("wrongWorkspace", model, NOW, String);
  assert.equal(view.text, "$(error) Tab: wrong workspace");
  assert.match(view.tooltip, /belongs to workspace acme, not other/);
  assert.equal(view.actions[0], "useKeyWorkspace");
  assert.equal(deriveStatus(after(ready, failed(401)), NOW), "unauthorized");
});

test("the status says why nothing comes in an excluded file or a switched-off language, and offers the switch", () => {
  const excluded = describeStatus("ready", ready, NOW, String, {
    languageName: "Dotenv",
    off: "excluded",
    fileName: ".env",
  });
  assert.equal(excluded.text, "$(circle-slash) Tab: off for .env (excluded)");
  const markdown = { languageName: "Markdown", off: "language", fileName: "README.md" } as const;
  const language = describeStatus("ready", ready, NOW, String, markdown);
  assert.equal(language.text, "$(circle-slash) Tab: off for Markdown");
  assert.equal(actionLabel(language.actions[0] ?? "showLog", markdown), "Enable for Markdown");
  const on = { ...markdown, languageName: "TypeScript", off: undefined };
  const menu = describeStatus("ready", ready, NOW, String, on);
  assert.equal(menu.text, "$(sparkle) Tab");
  assert.ok(menu.actions.map((id) => actionLabel(id, on)).includes("Disable for TypeScript"));
  // A problem outranks the file: an unreachable relay is said even in an excluded file.
  assert.equal(
    describeStatus("unreachable", ready, NOW, String, { ...markdown, off: "excluded" }).text,
    STATUS_TEXT.unreachable,
  );
});

test("an unreachable relay is probed on the backoff schedule, and ready again once a probe gets an answer", async () => {
  const clock = new FakeClock(NOW);
  let reachable = false;
  const probes: number[] = [];
  const status = new StatusController(clock, ready, () => {
    probes.push(clock.now());
    return Promise.resolve({ reachable, message: reachable ? "" : "ECONNREFUSED" });
  });
  status.dispatch({ type: "requestStarted" });
  status.dispatch({ type: "requestEnded", outcome: unreachable });
  assert.equal(status.kind, "unreachable");
  await clock.advance(1_000);
  assert.deepEqual(probes, [NOW + 1_000]);
  assert.equal(status.kind, "unreachable");
  reachable = true;
  await clock.advance(1_999);
  assert.equal(probes.length, 1);
  await clock.advance(1);
  assert.deepEqual(probes, [NOW + 1_000, NOW + 3_000]);
  assert.equal(status.kind, "ready");
  await clock.advance(60_000);
  assert.equal(probes.length, 2, "probing goes on after the relay answered");
  status.dispose();
});
