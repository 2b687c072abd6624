import { TAB_USAGE_LIMITS, type TabUsageEvent } from "@tab-relay/shared";
import type { Clock } from "./types";
import { lineCount } from "./usageTracker";

/** What a shown next edit is reported with: its answer's id, when the pause ended, and its new text's size. */
export interface ShownNextEdit {
  /** The relay's next-edit answer `id`. */
  readonly id: string;
  /** When the pause ended (NextEditProposal.pausedAt): the time to show is counted from here. */
  readonly pausedAt: number;
  readonly languageId: string;
  /** The edit's new text: only its length and lines are kept, never the text. */
  readonly text: string;
}

export interface NextEditUsageOptions {
  /**
   * How long a next edit that ended by an edit of the document waits before it is reported: a ghost-text next edit's
   * accept command runs after VS Code inserted it, and that insertion first looks like typing over it.
   */
  readonly settleMs?: number;
  /** A next edit nothing happened to for this long was hidden some other way: it is dismissed. */
  readonly maxOpenMs?: number;
}

interface Open {
  readonly id: string;
  readonly language: string;
  readonly chars: number;
  readonly lines: number;
  readonly timeToShowMs: number;
  ending: "dismissed" | "typed_over" | undefined;
  timer: unknown;
  expiry: unknown;
}

const RECENT_IDS = 200;

/**
 * Decides what became of each next edit the editor drew, as its own kind of usage event: applied (Tab, or its ghost
 * text's accept command), dismissed (Escape, another editor, another next edit, or nothing for a long while) or typed
 * over (the document changed some other way). One next edit is shown at a time, so one is tracked. Events carry the
 * new text's characters and lines and the time from the pause to the drawing, never the text.
 */
export class NextEditUsage {
  private open: Open | undefined;
  /** Ids already reported or being tracked: one answer is reported once, however often it is drawn again. */
  private readonly seen: string[] = [];
  private readonly settleMs: number;
  private readonly maxOpenMs: number;

  constructor(
    private readonly deps: {
      readonly clock: Clock;
      readonly enabled: () => boolean;
      readonly report: (event: TabUsageEvent) => void;
    },
    options: NextEditUsageOptions = {},
  ) {
    this.settleMs = options.settleMs ?? 1_000;
    this.maxOpenMs = options.maxOpenMs ?? 120_000;
  }

  /** A next edit is drawn; one still open ends as dismissed (or as it was already ending). */
  shown(edit: ShownNextEdit): void {
    if (!this.deps.enabled() || this.open?.id === edit.id || this.seen.includes(edit.id)) return;
    if (this.open !== undefined) this.emit(this.open.ending ?? "dismissed");
    const open: Open = {
      id: edit.id,
      language: edit.languageId,
      chars: edit.text.length,
      lines: lineCount(edit.text),
      timeToShowMs: Math.max(0, this.deps.clock.now() - edit.pausedAt),
      ending: undefined,
      timer: undefined,
      expiry: undefined,
    };
    this.open = open;
    open.expiry = this.deps.clock.setTimeout(() => {
      if (this.open === open) this.emit(open.ending ?? "dismissed");
    }, this.maxOpenMs);
    this.seen.push(edit.id);
    if (this.seen.length > RECENT_IDS) this.seen.shift();
  }

  /** The next edit was applied, even if an edit of the document seemed to end it just before. */
  accepted(): void {
    if (this.open !== undefined) this.emit("accepted");
  }

  /** Escape, or it was taken away without being applied: reported once it settled. */
  ended(how: "dismissed" | "typed_over"): void {
    const open = this.open;
    if (open === undefined || open.ending !== undefined) return;
    open.ending = how;
    open.timer = this.deps.clock.setTimeout(() => {
      if (this.open === open) this.emit(how);
    }, this.settleMs);
  }

  /** Reports the open next edit now, with what is known of it (on deactivate). */
  flush(): void {
    if (this.open !== undefined) this.emit(this.open.ending ?? "dismissed");
  }

  private emit(outcome: "accepted" | "dismissed" | "typed_over"): void {
    const open = this.open;
    if (open === undefined) return;
    this.open = undefined;
    if (open.timer !== undefined) this.deps.clock.clearTimeout(open.timer);
    this.deps.clock.clearTimeout(open.expiry);
    if (!this.deps.enabled()) return;
    const chars = clamp(open.chars, TAB_USAGE_LIMITS.maxChars);
    const lines = clamp(open.lines, TAB_USAGE_LIMITS.maxLines);
    this.deps.report({
      id: open.id,
      kind: "next_edit",
      outcome,
      shown_chars: chars,
      accepted_chars: outcome === "accepted" ? chars : 0,
      shown_lines: lines,
      accepted_lines: outcome === "accepted" ? lines : 0,
      time_to_ghost_ms: clamp(Math.round(open.timeToShowMs), TAB_USAGE_LIMITS.maxTimeToGhostMs),
      ...(open.language === "" ? {} : { language: open.language.slice(0, 128) }),
    });
  }
}

function clamp(value: number, max: number): number {
  return Math.max(0, Math.min(max, value));
}
