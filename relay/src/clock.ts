import type { Clock, WallClock } from "@tab-relay/shared";

/** The repository's one clock interface (shared/src/clock.ts): `now`, and timers so waits run on a FakeClock in tests. */
export type { Clock, WallClock };

/**
 * The system clock. Its timers never keep the process alive by themselves (the servers and open sockets do), as
 * every timer of the delivery worker, Socket Mode and the live hub was unref'd before they moved onto the clock.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback, ms) {
    const timer = setTimeout(callback, ms);
    timer.unref();
    return timer;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
