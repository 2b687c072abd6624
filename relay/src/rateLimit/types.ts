/** The outcome of counting one request against a fixed window. */
export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** When the current window ends, in Unix milliseconds. */
  resetAt: number;
}

/**
 * Fixed-window counters. In memory for one relay; a shared implementation (Redis) can replace it for
 * several relays without touching the middleware.
 */
export interface RateLimitStore {
  hit(bucket: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult> | RateLimitResult;
}
