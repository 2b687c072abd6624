import assert from "node:assert/strict";
import { test } from "node:test";
import { TabUsageBatch, TabUsageEvent } from "@tab-relay/shared";
import { NextEditUsage } from "./nextEditUsage";
import { FakeClock } from "./testing";

const TEXT = "renamed(total, unit)";

function harness(enabled = true) {
  const clock = new FakeClock();
  const events: TabUsageEvent[] = [];
  let on = enabled;
  const usage = new NextEditUsage({ clock, enabled: () => on, report: (event) => events.push(event) });
  const show = (id: string, text = TEXT, pausedAt = clock.now()) =>
    usage.shown({ id, pausedAt, languageId: "typescript", text });
  return { clock, events, usage, show, turnOff: () => (on = false) };
}

test("an applied next edit is reported as its own kind, with its new text's size and the time to show, no text", async () => {
  const { clock, events, usage, show } = harness();
  const pausedAt = clock.now();
  await clock.advance(35);
  show("ne-1", "a\nb", pausedAt);
  usage.accepted();
  assert.deepEqual(events, [
    {
      id: "ne-1",
      kind: "next_edit",
      outcome: "accepted",
      shown_chars: 3,
      accepted_chars: 3,
      shown_lines: 2,
      accepted_lines: 2,
      time_to_ghost_ms: 35,
      language: "typescript",
    },
  ]);
  assert.ok(TabUsageBatch.safeParse({ events }).success, "the relay's schema takes the event");
  assert.ok(!JSON.stringify(events).includes("a\\nb"), "the edit's text is never reported");
});

test("Escape reports a dismissal once it settled, with nothing accepted", async () => {
  const { clock, events, usage, show } = harness();
  show("ne-1");
  usage.ended("dismissed");
  assert.equal(events.length, 0);
  await clock.advance(1_000);
  assert.equal(events.length, 1);
  assert.deepEqual(
    [events[0]?.outcome, events[0]?.shown_chars, events[0]?.accepted_chars, events[0]?.accepted_lines],
    ["dismissed", TEXT.length, 0, 0],
  );
});

test("typing elsewhere ends it as typed over; a ghost next edit's accept command right after still counts as applied", async () => {
  const typed = harness();
  typed.show("ne-1");
  typed.usage.ended("typed_over");
  await typed.clock.advance(1_000);
  assert.equal(typed.events[0]?.outcome, "typed_over");

  // VS Code inserts a ghost text before it runs the item's command: the insertion first looks like typing.
  const ghost = harness();
  ghost.show("ne-2");
  ghost.usage.ended("typed_over");
  await ghost.clock.advance(100);
  ghost.usage.accepted();
  await ghost.clock.advance(5_000);
  assert.deepEqual(
    ghost.events.map((e) => e.outcome),
    ["accepted"],
  );
});

test("a new next edit ends the one shown as dismissed; the same answer drawn again is not counted twice", async () => {
  const { events, usage, show } = harness();
  show("ne-1");
  show("ne-1");
  show("ne-2");
  show("ne-1");
  usage.flush();
  assert.deepEqual(
    events.map((e) => [e.id, e.outcome]),
    [
      ["ne-1", "dismissed"],
      ["ne-2", "dismissed"],
    ],
  );
});

test("a next edit nothing happened to for two minutes is reported dismissed", async () => {
  const { clock, events, show } = harness();
  show("ne-1");
  await clock.advance(119_000);
  assert.equal(events.length, 0);
  await clock.advance(1_000);
  assert.equal(events[0]?.outcome, "dismissed");
});

test("nothing is reported while usage reports are off, nor for a next edit shown then", async () => {
  const off = harness(false);
  off.show("ne-1");
  off.usage.accepted();
  off.usage.flush();
  assert.equal(off.events.length, 0);

  const turned = harness();
  turned.show("ne-1");
  turned.turnOff();
  turned.usage.accepted();
  assert.equal(turned.events.length, 0);
});

test("sizes and times past the wire's bounds are clamped, so the relay never refuses the batch", async () => {
  const { clock, events, usage, show } = harness();
  const pausedAt = clock.now();
  await clock.advance(700_000);
  show("ne-1", "x".repeat(150_000), pausedAt);
  usage.accepted();
  assert.deepEqual(
    [events[0]?.shown_chars, events[0]?.accepted_chars, events[0]?.time_to_ghost_ms],
    [100_000, 100_000, 600_000],
  );
  assert.ok(TabUsageEvent.safeParse(events[0]).success);
});
