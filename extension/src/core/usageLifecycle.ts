import { TAB_USAGE_LIMITS, type TabUsageEvent } from "@tab-relay/shared";
import type { Clock } from "./types";

export interface UsageLifecycleOptions {
  /**
   * How long an ended item waits before it is reported, so that VS Code's accept command, which runs after the
   * accepted text is inserted, still counts it as accepted whatever shape that edit had.
   */
  readonly settleMs?: number;
  /** An item nothing happened to for this long was hidden some other way (focus moved, editor closed). */
  readonly maxOpenMs?: number;
}

export interface UsageLifecycleDeps {
  readonly clock: Clock;
  readonly enabled: () => boolean;
  readonly report: (event: TabUsageEvent) => void;
}

/** What every tracked item carries for the lifecycle: its id and its two timers. */
export interface OpenItem {
  readonly id: string;
  timer: unknown;
  expiry: unknown;
}

const RECENT_IDS = 200;

/**
 * What the usage trackers of suggestions (UsageTracker) and of next edits (NextEditUsage) share: the editor shows one
 * at a time, so one item is open; an id is reported once however often it is shown again (the last 200 are kept); an
 * ending waits `settleMs` before it is reported, and an item nothing happened to for `maxOpenMs` ends by itself.
 * Subclasses decide what the endings are and what the event says.
 */
export abstract class UsageLifecycle<O extends OpenItem, Ending extends string> {
  protected open: O | undefined;
  private readonly seen: string[] = [];
  private readonly settleMs: number;
  private readonly maxOpenMs: number;

  constructor(
    protected readonly deps: UsageLifecycleDeps,
    options: UsageLifecycleOptions = {},
  ) {
    this.settleMs = options.settleMs ?? 1_000;
    this.maxOpenMs = options.maxOpenMs ?? 120_000;
  }

  /** Reports the open item now with how it ends (or ended). */
  protected abstract emit(ending: Ending): void;

  protected reportedBefore(id: string): boolean {
    return this.seen.includes(id);
  }

  /** Opens `open`; if nothing ends it within maxOpenMs, it is reported as `expired()` says. */
  protected begin(open: O, expired: () => Ending): void {
    this.open = open;
    open.expiry = this.deps.clock.setTimeout(() => {
      if (this.open === open) this.emit(expired());
    }, this.maxOpenMs);
    this.seen.push(open.id);
    if (this.seen.length > RECENT_IDS) this.seen.shift();
  }

  /** Reports `open` as `ending` once settleMs passed, unless it was reported otherwise first. */
  protected settle(open: O, ending: Ending): void {
    open.timer = this.deps.clock.setTimeout(() => {
      if (this.open === open) this.emit(ending);
    }, this.settleMs);
  }

  /** Closes the open item: returns it to report, or undefined when none was open or reports are off. */
  protected close(): O | undefined {
    const open = this.open;
    if (open === undefined) return undefined;
    this.open = undefined;
    if (open.timer !== undefined) this.deps.clock.clearTimeout(open.timer);
    this.deps.clock.clearTimeout(open.expiry);
    return this.deps.enabled() ? open : undefined;
  }
}

/** An event's sizes and time, each held to the bounds the relay accepts (TAB_USAGE_LIMITS). */
export function usageFigures(figures: {
  shownChars: number;
  acceptedChars: number;
  shownLines: number;
  acceptedLines: number;
  timeToGhostMs: number;
}): Pick<TabUsageEvent, "shown_chars" | "accepted_chars" | "shown_lines" | "accepted_lines" | "time_to_ghost_ms"> {
  return {
    shown_chars: clamp(figures.shownChars, TAB_USAGE_LIMITS.maxChars),
    accepted_chars: clamp(figures.acceptedChars, TAB_USAGE_LIMITS.maxChars),
    shown_lines: clamp(figures.shownLines, TAB_USAGE_LIMITS.maxLines),
    accepted_lines: clamp(figures.acceptedLines, TAB_USAGE_LIMITS.maxLines),
    time_to_ghost_ms: clamp(Math.round(figures.timeToGhostMs), TAB_USAGE_LIMITS.maxTimeToGhostMs),
  };
}

/** Lines with at least one character of `text`: `a` and `a\n` are one, `a\nb` two, an empty text none. */
export function lineCount(text: string): number {
  let lines = 0;
  for (const char of text) if (char === "\n") lines++;
  return text === "" || text.endsWith("\n") ? lines : lines + 1;
}

function clamp(value: number, max: number): number {
  return Math.max(0, Math.min(max, value));
}
