import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { test } from "node:test";
import { ReplayClock } from "./typingClock";

const START = 1_700_000_000_000;

/** Real I/O stand-in: ends after `ms` of real time. */
function realIo(clock: ReplayClock, ms: number): Promise<void> {
  clock.beginIo();
  return new Promise((resolve) =>
    setTimeout(() => {
      clock.endIo();
      resolve();
    }, ms),
  );
}

test("idle time is skipped: a timer ten minutes away fires without waiting for it", async () => {
  const clock = new ReplayClock(START);
  let firedAt: number | undefined;
  // Virtual time is real time plus what was skipped, so the timer is due 10 minutes after it was set, not after
  // START: a pause before setting it (a GC on a busy machine) moves both, as one CI run saw (due 4 ms after START).
  const due = clock.now() + 600_000;
  clock.setTimeout(() => (firedAt = clock.now()), 600_000);
  const real = performance.now();
  await clock.runUntil(due + 1_000);
  assert.ok(performance.now() - real < 500, `took ${performance.now() - real} ms`);
  // It fires at its time (the real milliseconds its callback waited for the event loop aside), not at the run's end.
  assert.ok(firedAt !== undefined && firedAt >= due && firedAt < due + 100, `${firedAt} against due ${due}`);
  assert.ok(clock.skipped >= 599_000);
});

test("timers fire in time order, and a cleared one not at all", async () => {
  const clock = new ReplayClock(START);
  const fired: string[] = [];
  clock.setTimeout(() => fired.push("b"), 200);
  const cleared = clock.setTimeout(() => fired.push("never"), 150);
  clock.setTimeout(() => fired.push("a"), 100);
  clock.clearTimeout(cleared);
  await clock.runUntil(START + 1_000);
  assert.deepEqual(fired, ["a", "b"]);
});

test("while I/O is in flight time runs for real, and the wait ends as soon as the I/O does", async () => {
  const clock = new ReplayClock(START);
  // Read the clock before the I/O starts: the timer counts from its own start, and a pause between the two (a GC on a
  // busy machine) would otherwise make the 60 ms look shorter.
  const real = performance.now();
  const io = realIo(clock, 60);
  await clock.runUntil(START + 5_000);
  await io;
  const waited = performance.now() - real;
  assert.ok(waited >= 55 && waited < 1_000, `waited ${waited} ms`);
  // The 60 ms of I/O were lived through; the rest up to 5 s was skipped.
  assert.ok(clock.skipped > 3_900 && clock.skipped < 4_950, `skipped ${clock.skipped} ms`);
});

test("a timer due during I/O fires on time, in real time", async () => {
  const clock = new ReplayClock(START);
  const io = realIo(clock, 150);
  let firedAfterReal: number | undefined;
  const real = performance.now();
  clock.setTimeout(() => (firedAfterReal = performance.now() - real), 40);
  await clock.runUntil(START + 1_000);
  await io;
  assert.ok(
    firedAfterReal !== undefined && firedAfterReal >= 35 && firedAfterReal < 140,
    `fired after ${firedAfterReal} ms`,
  );
});

test("the next event comes before slow I/O ends: runUntil returns with the I/O still in flight", async () => {
  const clock = new ReplayClock(START);
  const io = realIo(clock, 400);
  const real = performance.now();
  await clock.runUntil(START + 50);
  const waited = performance.now() - real;
  assert.equal(clock.busy, true);
  assert.ok(waited >= 45 && waited < 350, `waited ${waited} ms`);
  assert.ok(clock.now() >= START + 50);
  await io;
  assert.equal(clock.busy, false);
});
