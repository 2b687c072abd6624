/** Wall-clock time in milliseconds; injected so limiters and schedulers can be tested on a fake clock. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
