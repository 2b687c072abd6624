/**
 * When to start the engine again after it stopped: 0.5 s, 1 s, 2 s … up to 30 s, with the count of failures in a
 * row reset once a child has served for a minute. Pure, like delivery/retryPolicy.ts, so the rule is tested
 * without waiting. Unlike Tabby's supervisor (a fixed 1 s, then `process::exit` after 5 failures), the relay never
 * gives up or exits: it keeps answering 503 with a Retry-After while the engine is down.
 */
export const RESTART_BASE_MS = 500;
export const RESTART_MAX_MS = 30_000;
/** A child that ran this long was healthy: its crash starts the count again. */
export const RESTART_STABLE_MS = 60_000;

/** The delay before the next start, and the count of failures in a row including this one. */
export function restartDelay(failuresInRow: number, ranMs: number): { delayMs: number; failuresInRow: number } {
  const failures = ranMs >= RESTART_STABLE_MS ? 1 : failuresInRow + 1;
  return { delayMs: Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** (failures - 1)), failuresInRow: failures };
}
