import type { WebhookOutcome } from "./webhookClient";

/**
 * Answers that end a delivery at once (docs/api.md, "Delivery"): 410 (the agent is gone) and 413
 * (the payload is too large, so sending it again cannot help).
 */
export const FINAL_STATUSES: ReadonlySet<number> = new Set([410, 413]);
/** Each scheduled delay is spread by up to this fraction either way, so the retries of many events do not bunch up. */
export const JITTER = 0.2;
/** A Retry-After longer than this is not honoured beyond it: an agent may not hold its events back for days. */
export const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;

export interface RetryPolicy {
  /** The delay after attempt n is `scheduleMs[n - 1]`; an event gets as many retries as the schedule has entries. */
  readonly scheduleMs: readonly number[];
  /** In [0, 1): where in the ±JITTER band a delay falls. */
  readonly random: () => number;
}

export interface FinishedAttempt {
  /** Which attempt of the event this was, counting from 1. */
  readonly number: number;
  /** The event's `retries`: 0 when it gets no retry at all (a redelivery of a finished event), else 1. */
  readonly retries: number;
  readonly outcome: Pick<WebhookOutcome, "ok" | "status" | "retryAfterMs">;
}

export type NextAttempt =
  | { readonly kind: "delivered" }
  | { readonly kind: "failed"; readonly why: "final status" | "no retries" | "schedule exhausted" }
  | { readonly kind: "retry"; readonly delayMs: number };

/**
 * What follows an attempt: delivered on a 2xx; failed for good on a final status, for an event without retries, or
 * after the schedule's last retry; otherwise a retry after the scheduled delay with jitter, or after the agent's
 * Retry-After when that is longer (capped at MAX_RETRY_AFTER_MS).
 */
export function nextAttempt(attempt: FinishedAttempt, policy: RetryPolicy): NextAttempt {
  const { ok, status, retryAfterMs } = attempt.outcome;
  if (ok) return { kind: "delivered" };
  if (status !== undefined && FINAL_STATUSES.has(status)) return { kind: "failed", why: "final status" };
  if (attempt.retries === 0) return { kind: "failed", why: "no retries" };
  const scheduled = policy.scheduleMs[attempt.number - 1];
  if (scheduled === undefined) return { kind: "failed", why: "schedule exhausted" };
  let delayMs = scheduled * (1 + JITTER * (2 * policy.random() - 1));
  // Retry-After only ever lengthens the wait: a short one must not make retries come faster than the schedule.
  if (retryAfterMs !== undefined) delayMs = Math.max(delayMs, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
  return { kind: "retry", delayMs: Math.round(delayMs) };
}
