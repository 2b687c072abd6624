import assert from "node:assert/strict";
import { test } from "node:test";
import { createMemoryRateLimitStore } from "./memoryStore";

const MINUTE = 60_000;

test("counts hits in fixed windows aligned to the minute", () => {
  const store = createMemoryRateLimitStore();
  const t = 10 * MINUTE + 59_000;
  const results = [1, 2, 3].map(() => store.hit("k", 2, MINUTE, t));
  assert.deepEqual(
    results.map((r) => r.allowed),
    [true, true, false],
  );
  assert.deepEqual(
    results.map((r) => r.remaining),
    [1, 0, 0],
  );
  assert.equal(results[0]?.resetAt, 11 * MINUTE);
  const next = store.hit("k", 2, MINUTE, 11 * MINUTE);
  assert.equal(next.allowed, true);
  assert.equal(next.resetAt, 12 * MINUTE);
});

test("keeps buckets apart", () => {
  const store = createMemoryRateLimitStore();
  assert.equal(store.hit("a", 1, MINUTE, 0).allowed, true);
  assert.equal(store.hit("a", 1, MINUTE, 0).allowed, false);
  assert.equal(store.hit("b", 1, MINUTE, 0).allowed, true);
});

test("sweeps expired windows when the bucket map is full", () => {
  const store = createMemoryRateLimitStore({ maxBuckets: 2 });
  store.hit("a", 1, MINUTE, 0);
  store.hit("b", 1, MINUTE, 0);
  store.hit("c", 1, MINUTE, MINUTE);
  // "a" was swept, so its next window starts fresh rather than carrying the old count.
  assert.equal(store.hit("a", 1, MINUTE, MINUTE).allowed, true);
});

test("stays within its size when every bucket is in the current window, and stays fast", () => {
  const store = createMemoryRateLimitStore({ maxBuckets: 1_000 });
  const started = performance.now();
  for (let i = 0; i < 50_000; i++) store.hit(`ip:${i}`, 10, MINUTE, 5_000);
  assert.ok(performance.now() - started < 1_000, `took ${performance.now() - started} ms`);
  // The newest buckets are kept: this one still counts.
  assert.equal(store.hit("ip:49999", 1, MINUTE, 5_000).allowed, false);
});
