import { RelayError } from "@tab-relay/shared";
import type { RequestHandler } from "express";
import type { Clock } from "../clock";
import type { RateLimits } from "../config";
import type { Metrics } from "../metrics";
import type { RateLimitStore } from "../rateLimit/types";

export type LimitClass = "read" | "write";

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** GET, HEAD and OPTIONS are reads, every other method a write; routes that only read or stream (completions) say so. */
export function classify(method: string, streams: boolean): LimitClass {
  return streams || READ_METHODS.has(method) ? "read" : "write";
}

/**
 * Counts the request against its key's fixed 60-second window (or the client address when no key could be
 * resolved) and answers the `X-RateLimit-*` headers on every response, 429 with `Retry-After` when over.
 */
export function createRateLimit(deps: {
  store: RateLimitStore;
  clock: Clock;
  metrics: Metrics;
  limits: Readonly<RateLimits>;
  windowMs: number;
  isStreamingRoute: (req: { method: string; path: string }) => boolean;
}): RequestHandler {
  return async function rateLimit(req, res, next) {
    const limitClass = classify(req.method, deps.isStreamingRoute(req));
    const limit = limitClass === "read" ? deps.limits.reads : deps.limits.writes;
    const subject = req.caller ? `key:${req.caller.key.id}` : `ip:${req.ip ?? "unknown"}`;
    const now = deps.clock.now();
    const result = await deps.store.hit(`${subject}:${limitClass}`, limit, deps.windowMs, now);
    const resetSeconds = Math.ceil(result.resetAt / 1000);
    res.setHeader("X-RateLimit-Limit", String(result.limit));
    res.setHeader("X-RateLimit-Remaining", String(Math.max(0, result.remaining)));
    res.setHeader("X-RateLimit-Reset", String(resetSeconds));
    if (!result.allowed) {
      deps.metrics.rateLimited.inc({ class: limitClass });
      // Retry-After names the same moment as X-RateLimit-Reset, rounded up so a client never retries early.
      const retryAfter = Math.max(1, resetSeconds - Math.floor(now / 1000));
      return next(
        new RelayError("RATE_LIMIT_EXCEEDED", `Rate limit of ${limit} ${limitClass}s per minute exceeded; retry after ${retryAfter} s`, {
          headers: { "Retry-After": String(retryAfter) },
        }),
      );
    }
    next();
  };
}
