import assert from "node:assert/strict";
import { test } from "node:test";
import { TabUsageEvent } from "@tab-relay/shared";
import { CompletionSession } from "./completionSession";
import { DEFAULT_SETTINGS } from "./settings";
import { StatusController, initialStatus } from "./status";
import { FakeClock, FakeFetch, inputAt } from "./testing";
import type { Suggestion } from "./types";
import { lineCount } from "./usageLifecycle";
import { UsageTracker } from "./usageTracker";

const URI = "file:///work/project/src/app.ts";
/** Where the ghost text starts in the document. */
const AT = 40;

function harness(enabled = true) {
  const clock = new FakeClock();
  const events: TabUsageEvent[] = [];
  let on = enabled;
  const tracker = new UsageTracker({ clock, enabled: () => on, report: (event) => events.push(event) });
  /** Offers and shows a suggestion the way the session and the provider do; returns the id for the accept command. */
  const show = (
    id: string,
    insertText: string,
    options: { replaced?: string; pausedAt?: number; languageId?: string } = {},
  ) => {
    const replaced = options.replaced?.length ?? 0;
    const suggestion: Suggestion = { insertText, start: AT - replaced, end: AT, fromCache: false };
    tracker.offer(suggestion, {
      id,
      uri: URI,
      languageId: options.languageId ?? "typescript",
      documentOffset: 0,
      pausedAt: options.pausedAt ?? clock.now(),
    });
    return tracker.shown(suggestion);
  };
  const insert = (offset: number, text: string, uri = URI) =>
    tracker.edited(uri, [{ rangeOffset: offset, rangeLength: 0, text }]);
  return { clock, events, tracker, show, insert, turnOff: () => (on = false) };
}

const TEXT = "console.log(total);\nreturn total;";

test("Tab: the whole suggestion is accepted, with its characters and lines", async () => {
  const { clock, events, tracker, show, insert } = harness();
  const id = show("cmpl-1", TEXT);
  assert.equal(id, "cmpl-1");
  // VS Code inserts the text, then runs the item's command.
  insert(AT, TEXT);
  tracker.accepted("cmpl-1");
  await clock.advance(5_000);
  assert.deepEqual(events, [
    {
      id: "cmpl-1",
      outcome: "accepted",
      shown_chars: TEXT.length,
      accepted_chars: TEXT.length,
      shown_lines: 2,
      accepted_lines: 2,
      time_to_ghost_ms: 0,
      language: "typescript",
    },
  ]);
  assert.ok(TabUsageEvent.safeParse(events[0]).success);
});

test("Tab counts as accepted even when the inserted edit did not look like the suggestion", async () => {
  const { clock, events, tracker, show } = harness();
  show("cmpl-1", TEXT);
  tracker.edited(URI, [{ rangeOffset: AT - 3, rangeLength: 3, text: `foo${TEXT}` }]);
  await clock.advance(100);
  tracker.accepted("cmpl-1");
  assert.equal(events.length, 1);
  assert.equal(events[0]?.outcome, "accepted");
});

test("a partial accept by word keeps those characters, and typing on ends it as accepted in part", async () => {
  const { clock, events, show, insert } = harness();
  show("cmpl-1", TEXT);
  insert(AT, "console");
  insert(AT + 7, ".");
  insert(AT + 8, "x");
  assert.equal(events.length, 0, "reported only once VS Code had time to run an accept command");
  await clock.advance(1_000);
  assert.equal(events.length, 1);
  assert.equal(events[0]?.outcome, "accepted_partial");
  assert.equal(events[0]?.accepted_chars, 7, "the typed '.' was typed through, not accepted");
  assert.equal(events[0]?.accepted_lines, 1);
  assert.equal(events[0]?.shown_chars, TEXT.length);
});

test("a partial accept by line counts the lines kept", async () => {
  const { clock, events, tracker, show, insert } = harness();
  show("cmpl-1", "a = 1;\nb = 2;\nc = 3;");
  insert(AT, "a = 1;\n");
  insert(AT + 7, "b = 2;\n");
  tracker.dismissed();
  await clock.advance(1_000);
  assert.equal(events.length, 1);
  assert.deepEqual(
    { outcome: events[0]?.outcome, chars: events[0]?.accepted_chars, lines: events[0]?.accepted_lines },
    { outcome: "accepted_partial", chars: 14, lines: 2 },
  );
  assert.equal(events[0]?.shown_lines, 3);
});

test("accepting every part one by one is an acceptance of the whole", async () => {
  const { clock, events, show, insert } = harness();
  show("cmpl-1", "a = 1;\nb = 2;");
  insert(AT, "a = 1;\n");
  insert(AT + 7, "b = 2;");
  await clock.advance(1_000);
  assert.equal(events[0]?.outcome, "accepted");
  assert.equal(events[0]?.accepted_chars, 13);
});

test("typing something else at the ghost text ends it as typed over", async () => {
  const { clock, events, show, insert } = harness();
  show("cmpl-1", TEXT);
  insert(AT, "c");
  insert(AT + 1, "o");
  insert(AT + 2, "u");
  await clock.advance(999);
  assert.equal(events.length, 0);
  await clock.advance(1);
  assert.equal(events.length, 1);
  assert.deepEqual(
    { outcome: events[0]?.outcome, chars: events[0]?.accepted_chars, lines: events[0]?.accepted_lines },
    { outcome: "typed_over", chars: 0, lines: 0 },
  );
});

test("a backspace at the ghost text is typing over it too", async () => {
  const { clock, events, tracker, show } = harness();
  show("cmpl-1", TEXT);
  tracker.edited(URI, [{ rangeOffset: AT - 1, rangeLength: 1, text: "" }]);
  await clock.advance(1_000);
  assert.equal(events[0]?.outcome, "typed_over");
});

test("while the user types through it, the same suggestion served again is not a new one", async () => {
  const { clock, events, tracker, show, insert } = harness();
  show("cmpl-1", TEXT);
  insert(AT, "c");
  assert.equal(show("cmpl-1", TEXT.slice(1)), "cmpl-1", "the remainder still carries the accept command");
  insert(AT + 1, "o");
  tracker.accepted("cmpl-1");
  await clock.advance(5_000);
  assert.equal(events.length, 1);
  assert.equal(events[0]?.outcome, "accepted");
  assert.equal(show("cmpl-1", TEXT), undefined, "an id is reported once");
});

test("Escape dismisses the suggestion at once", () => {
  const { events, tracker, show } = harness();
  show("cmpl-1", TEXT);
  tracker.dismissed();
  assert.equal(events.length, 1);
  assert.equal(events[0]?.outcome, "dismissed");
  assert.equal(events[0]?.accepted_chars, 0);
});

test("hidden without acceptance: an edit elsewhere, a newer suggestion, or nothing for two minutes dismisses it", async () => {
  const { clock, events, show, insert } = harness();
  show("cmpl-1", TEXT);
  insert(AT + 500, "x");
  await clock.advance(1_000);
  show("cmpl-2", TEXT);
  show("cmpl-3", TEXT);
  show("cmpl-4", "x = 1;");
  assert.deepEqual(
    events.map((event) => [event.id, event.outcome]),
    [
      ["cmpl-1", "dismissed"],
      ["cmpl-2", "dismissed"],
      ["cmpl-3", "dismissed"],
    ],
  );
  await clock.advance(119_999);
  assert.equal(events.length, 3);
  await clock.advance(1);
  assert.deepEqual(events[3] && [events[3].id, events[3].outcome], ["cmpl-4", "dismissed"]);
  assert.equal(clock.pendingTimers, 0);
});

test("edits in other documents leave the suggestion alone", async () => {
  const { clock, events, tracker, show, insert } = harness();
  show("cmpl-1", TEXT);
  insert(0, "other", "file:///work/project/src/other.ts");
  await clock.advance(1_000);
  assert.equal(events.length, 0);
  tracker.flush();
  assert.equal(events[0]?.outcome, "dismissed");
});

test("with an IntelliSense item selected, only the characters the ghost text adds are shown and accepted", () => {
  const { events, tracker, show } = harness();
  show("cmpl-1", "log(message);", { replaced: "l" });
  tracker.accepted("cmpl-1");
  assert.equal(events[0]?.shown_chars, "og(message);".length);
  assert.equal(events[0]?.accepted_chars, "og(message);".length);
});

test("the time to ghost text runs from the keystroke the user paused after to the suggestion shown", async () => {
  const clock = new FakeClock();
  const events: TabUsageEvent[] = [];
  const tracker = new UsageTracker({ clock, enabled: () => true, report: (event) => events.push(event) });
  const fake = new FakeFetch(clock, [
    { kind: "sse", latencyMs: 60, chunks: [{ content: "items.length;", delayMs: 25 }] },
  ]);
  const session = new CompletionSession({
    clock,
    fetch: fake.fetch,
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
    getSettings: () => ({ ...DEFAULT_SETTINGS, adaptiveDebounce: false, debounceMs: 120 }),
    getApiKey: () => Promise.resolve("svc_ws_0123456789abcdefghijklmnopqrstABCDEF"),
    status: new StatusController(clock, initialStatus(true, [])),
    usage: tracker,
  });
  await clock.advance(1_000);
  // As the provider does: the suggestion is shown as soon as the session returns it.
  const shown = session.provide(inputAt("const n = █", { documentOffset: 300 })).then((suggestion) => {
    assert.ok(suggestion);
    return tracker.shown(suggestion);
  });
  await clock.advance(1_000);
  assert.equal(await shown, "cmpl-test", "the id of the relay's answer");
  tracker.edited(URI, [{ rangeOffset: 310, rangeLength: 0, text: "items" }]);
  tracker.dismissed();
  assert.equal(events.length, 1);
  assert.equal(events[0]?.time_to_ghost_ms, 120 + 60 + 25);
  assert.equal(events[0]?.accepted_chars, 5, "offsets count from the document, not the window the session saw");
});

test("a suggestion without a completion id, or with reporting off, is not tracked", () => {
  const { events, tracker, show, turnOff } = harness();
  const suggestion: Suggestion = { insertText: TEXT, start: AT, end: AT, fromCache: false };
  tracker.offer(suggestion, { id: undefined, uri: URI, languageId: "ts", documentOffset: 0, pausedAt: 0 });
  assert.equal(tracker.shown(suggestion), undefined);
  show("cmpl-1", TEXT);
  turnOff();
  tracker.dismissed();
  assert.equal(show("cmpl-2", TEXT), undefined);
  assert.deepEqual(events, []);
});

test("lines are those with a character of the text", () => {
  assert.deepEqual(["", "a", "a\n", "a\nb", "\n\n"].map(lineCount), [0, 1, 1, 2, 2]);
});
