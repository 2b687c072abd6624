import type { RateLimitResult, RateLimitStore } from "./types";

interface Window {
  start: number;
  count: number;
}

/**
 * Fixed windows aligned to multiples of `windowMs` since the epoch, so every bucket resets on the same
 * boundary and `X-RateLimit-Reset` is predictable. Expired windows are swept lazily when the map grows.
 */
export interface MemoryRateLimitStore extends RateLimitStore {
  hit(bucket: string, limit: number, windowMs: number, now: number): RateLimitResult;
}

export function createMemoryRateLimitStore(options: { maxBuckets?: number } = {}): MemoryRateLimitStore {
  const windows = new Map<string, Window>();
  const maxBuckets = options.maxBuckets ?? 100_000;
  return {
    hit(bucket, limit, windowMs, now): RateLimitResult {
      const start = now - (now % windowMs);
      let window = windows.get(bucket);
      if (!window || window.start !== start) {
        if (!window && windows.size >= maxBuckets) sweep(windows, start);
        window = { start, count: 0 };
        windows.set(bucket, window);
      }
      const allowed = window.count < limit;
      if (allowed) window.count++;
      return { allowed, limit, remaining: limit - window.count, resetAt: start + windowMs };
    },
  };
}

function sweep(windows: Map<string, Window>, currentStart: number): void {
  for (const [bucket, window] of windows) if (window.start < currentStart) windows.delete(bucket);
}
