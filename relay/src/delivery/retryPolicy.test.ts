import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_RETRY_SCHEDULE_MS } from "../config";
import { MAX_RETRY_AFTER_MS, type FinishedAttempt, type NextAttempt, nextAttempt } from "./retryPolicy";

const SCHEDULE = [10_000, 60_000, 300_000];
const HOUR = 3600_000;

interface Case {
  why: string;
  attempt: number;
  retries?: number;
  status?: number;
  ok?: boolean;
  retryAfterMs?: number;
  /** What random() answers: 0 is the bottom of the ±20% band, 0.5 its middle, 1 its top. */
  random?: number;
  next: NextAttempt;
}

const cases: Case[] = [
  { why: "a 2xx is delivered", attempt: 1, status: 204, ok: true, next: { kind: "delivered" } },
  {
    why: "a 2xx on the last scheduled retry is delivered",
    attempt: 4,
    status: 200,
    ok: true,
    next: { kind: "delivered" },
  },
  {
    why: "a 2xx without retries left is delivered",
    attempt: 1,
    retries: 0,
    status: 200,
    ok: true,
    next: { kind: "delivered" },
  },
  // final statuses
  { why: "410 Gone ends the delivery", attempt: 1, status: 410, next: { kind: "failed", why: "final status" } },
  {
    why: "413 Payload Too Large ends the delivery",
    attempt: 1,
    status: 413,
    next: { kind: "failed", why: "final status" },
  },
  {
    why: "a final status wins over a Retry-After",
    attempt: 1,
    status: 410,
    retryAfterMs: 5000,
    next: { kind: "failed", why: "final status" },
  },
  {
    why: "a redirect is an ordinary failure",
    attempt: 1,
    status: 301,
    random: 0.5,
    next: { kind: "retry", delayMs: 10_000 },
  },
  {
    why: "a 400 is an ordinary failure",
    attempt: 1,
    status: 400,
    random: 0.5,
    next: { kind: "retry", delayMs: 10_000 },
  },
  // the schedule and its jitter
  {
    why: "the first retry waits the first delay (middle of the band)",
    attempt: 1,
    status: 500,
    random: 0.5,
    next: { kind: "retry", delayMs: 10_000 },
  },
  {
    why: "the top of the jitter band is +20%",
    attempt: 1,
    status: 500,
    random: 1,
    next: { kind: "retry", delayMs: 12_000 },
  },
  {
    why: "the bottom of the jitter band is -20%",
    attempt: 1,
    status: 500,
    random: 0,
    next: { kind: "retry", delayMs: 8_000 },
  },
  {
    why: "the second retry waits the second delay",
    attempt: 2,
    status: 503,
    random: 0.5,
    next: { kind: "retry", delayMs: 60_000 },
  },
  { why: "a network error (no status) is retried", attempt: 2, random: 0.25, next: { kind: "retry", delayMs: 54_000 } },
  {
    why: "the delay is rounded to whole milliseconds",
    attempt: 1,
    status: 500,
    random: 0.333_33,
    next: { kind: "retry", delayMs: 9333 },
  },
  { why: "the last scheduled retry", attempt: 3, status: 500, random: 0.5, next: { kind: "retry", delayMs: 300_000 } },
  // giving up
  {
    why: "after the last scheduled retry the delivery fails",
    attempt: 4,
    status: 500,
    next: { kind: "failed", why: "schedule exhausted" },
  },
  {
    why: "a Retry-After does not extend the schedule",
    attempt: 4,
    status: 503,
    retryAfterMs: 1000,
    next: { kind: "failed", why: "schedule exhausted" },
  },
  {
    why: "an event without retries fails after its one attempt",
    attempt: 1,
    retries: 0,
    status: 500,
    next: { kind: "failed", why: "no retries" },
  },
  {
    why: "a redelivery of a finished event gets that one attempt",
    attempt: 3,
    retries: 0,
    status: 503,
    retryAfterMs: 1000,
    next: { kind: "failed", why: "no retries" },
  },
  // Retry-After
  {
    why: "a Retry-After longer than the scheduled delay wins",
    attempt: 1,
    status: 503,
    retryAfterMs: 120_000,
    random: 0.5,
    next: { kind: "retry", delayMs: 120_000 },
  },
  {
    why: "a Retry-After shorter than the scheduled delay is not a reason to come sooner",
    attempt: 1,
    status: 429,
    retryAfterMs: 1000,
    random: 0.5,
    next: { kind: "retry", delayMs: 10_000 },
  },
  {
    why: "a Retry-After of 0 leaves the schedule as it is",
    attempt: 2,
    status: 429,
    retryAfterMs: 0,
    random: 1,
    next: { kind: "retry", delayMs: 72_000 },
  },
  {
    why: "a Retry-After is honoured up to 24 h",
    attempt: 1,
    status: 503,
    retryAfterMs: 24 * HOUR,
    random: 0.5,
    next: { kind: "retry", delayMs: 24 * HOUR },
  },
  {
    why: "a Retry-After past 24 h is capped at 24 h",
    attempt: 1,
    status: 503,
    retryAfterMs: 72 * HOUR,
    random: 0.5,
    next: { kind: "retry", delayMs: MAX_RETRY_AFTER_MS },
  },
  {
    why: "the cap applies to an absurd Retry-After too",
    attempt: 1,
    status: 429,
    retryAfterMs: 2 ** 31 * 1000,
    random: 0,
    next: { kind: "retry", delayMs: MAX_RETRY_AFTER_MS },
  },
];

describe("nextAttempt", () => {
  for (const c of cases) {
    test(`${c.why}`, () => {
      const outcome: FinishedAttempt["outcome"] = {
        ok: c.ok ?? false,
        ...(c.status === undefined ? {} : { status: c.status }),
        ...(c.retryAfterMs === undefined ? {} : { retryAfterMs: c.retryAfterMs }),
      };
      let draws = 0;
      const random = () => {
        draws++;
        return c.random ?? 0.5;
      };
      assert.deepEqual(
        nextAttempt({ number: c.attempt, retries: c.retries ?? 1, outcome }, { scheduleMs: SCHEDULE, random }),
        c.next,
      );
      // Randomness is spent only on a retry, so a seeded sequence stays aligned with the retries it spread.
      assert.equal(draws, c.next.kind === "retry" ? 1 : 0);
    });
  }

  test("the default schedule gives seven retries over about 27 hours, then fails", () => {
    const policy = { scheduleMs: DEFAULT_RETRY_SCHEDULE_MS, random: () => 0.5 };
    let total = 0;
    for (let attempt = 1; attempt <= 7; attempt++) {
      const next = nextAttempt({ number: attempt, retries: 1, outcome: { ok: false, status: 500 } }, policy);
      assert.equal(next.kind, "retry", `attempt ${attempt}`);
      if (next.kind === "retry") total += next.delayMs;
    }
    assert.equal(total, 5_000 + 300_000 + 1_800_000 + 7_200_000 + 18_000_000 + 36_000_000 + 36_000_000);
    assert.ok(total > 27 * HOUR && total < 28 * HOUR, `${total / HOUR} h`);
    assert.deepEqual(nextAttempt({ number: 8, retries: 1, outcome: { ok: false, status: 500 } }, policy), {
      kind: "failed",
      why: "schedule exhausted",
    });
  });
});
