import type { Clock } from "./types";

/**
 * Waits `ms` on the clock unless `signal` aborts first. Resolves true when the wait ran out (the user paused),
 * false when it was cancelled (a newer keystroke arrived). VS Code calls the provider on almost every
 * keystroke and cancels the previous call, so waiting here is what turns keystrokes into one request per pause.
 */
export function debounce(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = () => {
      clock.clearTimeout(handle);
      resolve(false);
    };
    const handle = clock.setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
