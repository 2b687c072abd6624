import { UsageLifecycle, lineCount, usageFigures, type UsageLifecycleOptions } from "./usageLifecycle";

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

/** settleMs: a ghost-text next edit's accept command runs after VS Code inserted it, which looks like typing over it. */
export type NextEditUsageOptions = UsageLifecycleOptions;

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

/**
 * Decides what became of each next edit the editor drew, as its own kind of usage event: applied (Tab, or its ghost
 * text's accept command), dismissed (Escape, another editor, another next edit, or nothing for a long while) or typed
 * over (the document changed some other way). One next edit is shown at a time, so one is tracked. Events carry the
 * new text's characters and lines and the time from the pause to the drawing, never the text.
 */
export class NextEditUsage extends UsageLifecycle<Open, "accepted" | "dismissed" | "typed_over"> {
  /** A next edit is drawn; one still open ends as dismissed (or as it was already ending). */
  shown(edit: ShownNextEdit): void {
    if (!this.deps.enabled() || this.open?.id === edit.id || this.reportedBefore(edit.id)) return;
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
    this.begin(open, () => open.ending ?? "dismissed");
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
    this.settle(open, how);
  }

  /** Reports the open next edit now, with what is known of it (on deactivate). */
  flush(): void {
    if (this.open !== undefined) this.emit(this.open.ending ?? "dismissed");
  }

  protected emit(outcome: "accepted" | "dismissed" | "typed_over"): void {
    const open = this.close();
    if (open === undefined) return;
    const accepted = outcome === "accepted";
    this.deps.report({
      id: open.id,
      kind: "next_edit",
      outcome,
      ...usageFigures({
        shownChars: open.chars,
        acceptedChars: accepted ? open.chars : 0,
        shownLines: open.lines,
        acceptedLines: accepted ? open.lines : 0,
        timeToGhostMs: open.timeToShowMs,
      }),
      ...(open.language === "" ? {} : { language: open.language.slice(0, 128) }),
    });
  }
}
