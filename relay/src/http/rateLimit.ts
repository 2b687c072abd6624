import { RelayError } from "@tab-relay/shared";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Clock } from "../clock";
import type { Metrics } from "../metrics";
import { setOrHold } from "./heldHeaders";
import type { RateLimitResult, RateLimitStore } from "../rateLimit/types";

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

export interface RateLimitDeps {
  store: RateLimitStore;
  clock: Clock;
  metrics: Metrics;
  windowMs: number;
}

/** What counting one request decided: the figures of the `X-RateLimit-*` headers, and the 429 when over. */
export interface RateDecision {
  limit: number;
  remaining: number;
  /** When the window ends, in Unix seconds. */
  resetSeconds: number;
  refused: RelayError | undefined;
}

/**
 * Counts one request against the fixed 60-second window its policy names. HTTP requests (through
 * `createRateLimit`) and WebSocket upgrades (which never reach express) are both counted here.
 */
export async function countRequest(deps: RateLimitDeps, policy: RatePolicy): Promise<RateDecision> {
  const now = deps.clock.now();
  return decide(deps, policy, now, await deps.store.hit(policy.bucket, policy.limit, deps.windowMs, now));
}

/** What one count in the store means for the request counted at `now`. */
function decide(deps: RateLimitDeps, policy: RatePolicy, now: number, result: RateLimitResult): RateDecision {
  const { limit, label } = policy;
  const resetSeconds = Math.ceil(result.resetAt / 1000);
  const remaining = Math.max(0, result.remaining);
  if (result.allowed) return { limit: result.limit, remaining, resetSeconds, refused: undefined };
  deps.metrics.rateLimited.inc({ class: label });
  // Retry-After names the same moment as X-RateLimit-Reset, rounded up so a client never retries early.
  const retryAfter = Math.max(1, resetSeconds - Math.floor(now / 1000));
  const refused = new RelayError(
    "RATE_LIMIT_EXCEEDED",
    `Rate limit of ${limit} ${label}s per minute exceeded; retry after ${retryAfter} s`,
    {
      headers: { "Retry-After": String(retryAfter) },
    },
  );
  return { limit: result.limit, remaining, resetSeconds, refused };
}

/** The `X-RateLimit-*` headers of a decision, for answers written without express (refused upgrades). */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  return {
    "X-RateLimit-Limit": String(decision.limit),
    "X-RateLimit-Remaining": String(decision.remaining),
    "X-RateLimit-Reset": String(decision.resetSeconds),
  };
}

/**
 * Counts the request against the fixed 60-second window its policy names and answers the `X-RateLimit-*`
 * headers on every response, 429 with `Retry-After` when over.
 */
export function createRateLimit(
  deps: RateLimitDeps & {
    policy: (req: Request) => RatePolicy;
    /** Told of each request refused with 429 (the usage counts note refused completions). */
    refused?: (req: Request) => void;
  },
): RequestHandler {
  const answer = (req: Request, res: Response, next: NextFunction, decision: RateDecision) => {
    if (decision.refused) deps.refused?.(req);
    setOrHold(res, "X-RateLimit-Limit", String(decision.limit));
    setOrHold(res, "X-RateLimit-Remaining", String(decision.remaining));
    setOrHold(res, "X-RateLimit-Reset", String(decision.resetSeconds));
    next(decision.refused);
  };
  return function rateLimit(req, res, next) {
    const policy = deps.policy(req);
    const now = deps.clock.now();
    const result = deps.store.hit(policy.bucket, policy.limit, deps.windowMs, now);
    // The relay's own store counts at once: its answer goes on without a promise and a turn of the microtask queue.
    if (result instanceof Promise)
      return result.then((counted) => answer(req, res, next, decide(deps, policy, now, counted)));
    return answer(req, res, next, decide(deps, policy, now, result));
  };
}
