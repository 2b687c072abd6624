/**
 * Time, as the code sees it. Whatever reads the time or waits takes a clock, so that tests run on a FakeClock
 * (`@tab-relay/shared/testing`) and no decision (a retry, a timeout, an expiry) needs real time to pass. Written for
 * every runtime the shared code runs in (Node, VS Code, Deno, Bun, browsers): no Node types.
 */
export interface WallClock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/** A clock that can also wait. Handles are opaque: only the clock that made one can clear it. */
export interface Clock extends WallClock {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The platform's clock and timers; the default where the agent helper is not handed one. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Resolves after `ms` on `clock` (a FakeClock resolves it when advanced that far). */
export function sleepOn(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}
