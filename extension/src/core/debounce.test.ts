import assert from "node:assert/strict";
import { test } from "node:test";
import { debounce } from "./debounce";
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
