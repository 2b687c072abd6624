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

export interface TypingRhythmOptions {
  /** How many recent gaps between keystrokes to learn from. */
  readonly window: number;
  /** Below this many gaps, the configured debounce is used as it is. */
  readonly minSamples: number;
  /** Gaps outside [minGapMs, pauseMs) are not typing: repeated calls for one keystroke, or real pauses. */
  readonly minGapMs: number;
  readonly pauseMs: number;
  /** The wait is this multiple of the 90th-percentile gap, so nearly every gap inside a word is shorter. */
  readonly factor: number;
  /** Never wait longer than this, however slowly someone types. */
  readonly maxMs: number;
}

export const DEFAULT_TYPING_RHYTHM: TypingRhythmOptions = {
  window: 40,
  minSamples: 4,
  minGapMs: 20,
  pauseMs: 1_000,
  factor: 1.25,
  maxMs: 400,
};

/**
 * Learns how fast the user types, so a request waits for a pause rather than for the gap between two
 * keystrokes. A fixed 120 ms fires in the middle of words for anyone typing at about 8 characters a second
 * (gaps of 85 to 165 ms), spending requests whose answers are stale at the next keystroke; Tabby's adaptive
 * debounce solves the same problem. The configured debounce stays the floor.
 */
export class TypingRhythm {
  private readonly gaps: number[];
  private last: number | undefined;

  /** `learned` are gaps remembered from an earlier session, so a restart does not start from scratch. */
  constructor(
    learned: readonly number[] = [],
    private readonly options: TypingRhythmOptions = DEFAULT_TYPING_RHYTHM,
  ) {
    this.gaps = learned
      .filter((gap) => Number.isFinite(gap) && gap >= options.minGapMs && gap < options.pauseMs)
      .slice(-options.window);
  }

  /** The recent gaps, to be remembered across sessions. */
  learned(): number[] {
    return [...this.gaps];
  }

  keystroke(at: number): void {
    const gap = this.last === undefined ? undefined : at - this.last;
    this.last = at;
    if (gap === undefined || gap < this.options.minGapMs || gap >= this.options.pauseMs) return;
    this.gaps.push(gap);
    if (this.gaps.length > this.options.window) this.gaps.shift();
  }

  waitMs(floorMs: number): number {
    if (this.gaps.length < this.options.minSamples) return floorMs;
    const sorted = [...this.gaps].sort((a, b) => a - b);
    const p90 = sorted[Math.floor(0.9 * (sorted.length - 1))] as number;
    return Math.max(floorMs, Math.min(this.options.maxMs, Math.round(p90 * this.options.factor)));
  }
}
