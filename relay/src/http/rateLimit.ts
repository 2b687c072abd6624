import { RelayError } from "@tab-relay/shared";
import type { Request, RequestHandler } from "express";
import type { Clock } from "../clock";
import type { Metrics } from "../metrics";
import type { RateLimitStore } from "../rateLimit/types";

export type LimitClass = "read" | "write";

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** GET, HEAD and OPTIONS are reads, every other method a write; routes that only read or stream (completions) say so. */
export function classify(method: string, streams: boolean): LimitClass {
  return streams || READ_METHODS.has(method) ? "read" : "write";
}

/** Which counter a request goes against: `bucket` names the subject and class, `label` is what the class is called. */
export interface RatePolicy {
  bucket: string;
  limit: number;
  label: string;
}

/**
 * Counts the request against the fixed 60-second window its policy names and answers the `X-RateLimit-*`
 * headers on every response, 429 with `Retry-After` when over.
 */
export function createRateLimit(deps: {
  store: RateLimitStore;
  clock: Clock;
  metrics: Metrics;
  windowMs: number;
  policy: (req: Request) => RatePolicy;
}): RequestHandler {
  return async function rateLimit(req, res, next) {
    const { bucket, limit, label } = deps.policy(req);
    const now = deps.clock.now();
    const result = await deps.store.hit(bucket, limit, deps.windowMs, now);
    const resetSeconds = Math.ceil(result.resetAt / 1000);
    res.setHeader("X-RateLimit-Limit", String(result.limit));
    res.setHeader("X-RateLimit-Remaining", String(Math.max(0, result.remaining)));
    res.setHeader("X-RateLimit-Reset", String(resetSeconds));
    if (!result.allowed) {
      deps.metrics.rateLimited.inc({ class: label });
      // Retry-After names the same moment as X-RateLimit-Reset, rounded up so a client never retries early.
      const retryAfter = Math.max(1, resetSeconds - Math.floor(now / 1000));
      return next(
        new RelayError("RATE_LIMIT_EXCEEDED", `Rate limit of ${limit} ${label}s per minute exceeded; retry after ${retryAfter} s`, {
          headers: { "Retry-After": String(retryAfter) },
        }),
      );
    }
    next();
  };
}
