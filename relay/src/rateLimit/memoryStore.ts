import type { RateLimitResult, RateLimitStore } from "./types";

interface Window {
  start: number;
  count: number;
}

export interface MemoryRateLimitStore extends RateLimitStore {
  hit(bucket: string, limit: number, windowMs: number, now: number): RateLimitResult;
}

/**
 * Fixed windows aligned to multiples of `windowMs` since the epoch, so every bucket resets on the same
 * boundary and `X-RateLimit-Reset` is predictable. Memory is bounded: when the map is full, expired windows
 * are swept (at most once per window, so a full map never costs a scan per request), and if it is still
 * full the oldest buckets are dropped.
 */
export function createMemoryRateLimitStore(options: { maxBuckets?: number } = {}): MemoryRateLimitStore {
  const windows = new Map<string, Window>();
  const maxBuckets = options.maxBuckets ?? 100_000;
  let sweptWindow = -1;
  const makeRoom = (currentStart: number) => {
    if (sweptWindow !== currentStart) {
      sweptWindow = currentStart;
      for (const [bucket, window] of windows) if (window.start < currentStart) windows.delete(bucket);
    }
    // Maps iterate in insertion order, so the first keys are the longest-lived buckets.
    for (const bucket of windows.keys()) {
      if (windows.size < maxBuckets) break;
      windows.delete(bucket);
    }
  };
  return {
    hit(bucket, limit, windowMs, now): RateLimitResult {
      const start = now - (now % windowMs);
      let window = windows.get(bucket);
      if (!window || window.start !== start) {
        if (!window && windows.size >= maxBuckets) makeRoom(start);
        window = { start, count: 0 };
        windows.set(bucket, window);
      }
      const allowed = window.count < limit;
      if (allowed) window.count++;
      return { allowed, limit, remaining: limit - window.count, resetAt: start + windowMs };
    },
  };
}
