import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { TypingRhythm, debounce } from "./debounce";
import { FakeClock } from "./testing";

test("resolves true once the wait has run out on the clock, not before", async () => {
  const clock = new FakeClock();
  let result: boolean | undefined;
  void debounce(clock, 120, new AbortController().signal).then((value) => (result = value));
  await clock.advance(119);
  assert.equal(result, undefined);
  await clock.advance(1);
  assert.equal(result, true);
});

test("resolves false at once and leaves no timer behind when aborted during the wait", async () => {
  const clock = new FakeClock();
  const controller = new AbortController();
  let result: boolean | undefined;
  void debounce(clock, 120, controller.signal).then((value) => (result = value));
  await clock.advance(60);
  controller.abort();
  await clock.advance(0);
  assert.equal(result, false);
  assert.equal(clock.pendingTimers, 0);
});

test("does not wait at all when already aborted", async () => {
  const controller = new AbortController();
  controller.abort();
  assert.equal(await debounce(new FakeClock(), 120, controller.signal), false);
});

test("a zero delay resolves without a timer", async () => {
  const clock = new FakeClock();
  assert.equal(await debounce(clock, 0, new AbortController().signal), true);
  assert.equal(clock.pendingTimers, 0);
});

describe("TypingRhythm", () => {
  const keystrokes = (rhythm: TypingRhythm, gaps: number[], start = 1_000) => {
    let at = start;
    rhythm.keystroke(at);
    for (const gap of gaps) rhythm.keystroke((at += gap));
  };

  test("uses the configured debounce until it has seen enough typing", () => {
    const rhythm = new TypingRhythm();
    keystrokes(rhythm, [130, 140, 150]);
    assert.equal(rhythm.waitMs(120), 120);
  });

  test("waits a little longer than nearly every gap of a fast typist", () => {
    const rhythm = new TypingRhythm();
    keystrokes(
      rhythm,
      Array.from({ length: 40 }, (_, i) => 85 + ((i * 37) % 81)),
    );
    const wait = rhythm.waitMs(120);
    assert.ok(wait > 165 && wait <= 210, `wait ${wait}`);
  });

  test("never goes below the configured debounce for a very fast typist", () => {
    const rhythm = new TypingRhythm();
    keystrokes(
      rhythm,
      Array.from({ length: 20 }, () => 40),
    );
    assert.equal(rhythm.waitMs(120), 120);
  });

  test("is capped for a slow typist", () => {
    const rhythm = new TypingRhythm();
    keystrokes(
      rhythm,
      Array.from({ length: 20 }, () => 900),
    );
    assert.equal(rhythm.waitMs(120), 400);
  });

  test("ignores pauses and repeated calls for one keystroke", () => {
    const rhythm = new TypingRhythm();
    keystrokes(rhythm, [5000, 3, 0, 2000, 1, 4000, 2, 1500, 0, 0, 0, 0]);
    assert.equal(rhythm.waitMs(120), 120);
  });

  test("starts from gaps learned in an earlier session, dropping values that are not typing", () => {
    const earlier = new TypingRhythm();
    keystrokes(
      earlier,
      Array.from({ length: 10 }, () => 160),
    );
    const restarted = new TypingRhythm([...earlier.learned(), Number.NaN, 5, 4000]);
    assert.deepEqual(restarted.learned(), earlier.learned());
    assert.equal(restarted.waitMs(120), 200);
  });

  test("forgets old gaps beyond its window", () => {
    const rhythm = new TypingRhythm();
    keystrokes(rhythm, [...Array.from({ length: 40 }, () => 300), ...Array.from({ length: 40 }, () => 100)]);
    assert.equal(rhythm.waitMs(120), 125);
  });
});
