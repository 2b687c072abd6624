import assert from "node:assert/strict";
import { test } from "node:test";
import { RESTART_MAX_MS, RESTART_STABLE_MS, restartDelay } from "./restartPolicy";

test("the engine's restart delay doubles from 0.5 s with each failure in a row, up to 30 s", () => {
  const delays: number[] = [];
  let failures = 0;
  for (let i = 0; i < 10; i++) {
    const next = restartDelay(failures, 100);
    delays.push(next.delayMs);
    failures = next.failuresInRow;
  }
  assert.deepEqual(delays.slice(0, 5), [500, 1000, 2000, 4000, 8000]);
  assert.equal(delays.at(-1), RESTART_MAX_MS);
});

test("a child that served for a minute before it stopped restarts after the shortest delay", () => {
  assert.deepEqual(restartDelay(7, RESTART_STABLE_MS), { delayMs: 500, failuresInRow: 1 });
});
