import type { TabUsageOutcome } from "@tab-relay/shared";
import type { Suggestion } from "./types";
import { UsageLifecycle, lineCount, usageFigures, type UsageLifecycleOptions } from "./usageLifecycle";

/** What the pipeline knows about a suggestion it returns, beyond the suggestion itself. */
export interface SuggestionOrigin {
  /** The relay's completion `id`; suggestions without one are not reported. */
  readonly id: string | undefined;
  readonly uri: string;
  readonly languageId: string;
  /** Offset in the whole document of the suggestion's offsets' origin (CompletionInput.documentOffset). */
  readonly documentOffset: number;
  /** When the user paused: the keystroke that led to the suggestion. */
  readonly pausedAt: number;
}

/** One edit of a document, in VS Code's shape (TextDocumentContentChangeEvent). */
export interface DocumentChange {
  readonly rangeOffset: number;
  readonly rangeLength: number;
  readonly text: string;
}

export type UsageTrackerOptions = UsageLifecycleOptions;

interface Open {
  readonly id: string;
  readonly uri: string;
  readonly language: string;
  /** Document offset where the suggestion's replacement starts. */
  readonly start: number;
  /** What the document holds from `start` once the suggestion is taken whole. */
  readonly full: string;
  /** Characters the ghost text added when shown: `full` minus what the document already had (a selected item). */
  readonly shownChars: number;
  readonly shownLines: number;
  readonly timeToGhostMs: number;
  /** How much of `full` the document holds at `start` now. */
  consumed: number;
  /** Characters that arrived in multi-character insertions (Tab, word or line accept), not typed one by one. */
  acceptedChars: number;
  /** The furthest point of `full` reached by accepted insertions, for the lines kept. */
  acceptedUpTo: number;
  /** Set when the suggestion ended: the outcome it is reported with once it settled. */
  ending: "typed_over" | "left" | undefined;
  timer: unknown;
  expiry: unknown;
}

/**
 * Decides what became of each suggestion the editor showed, from what the adapters forward: shown, the accept
 * command VS Code runs after Tab, Escape, and every document edit. Edits that insert the suggestion's next
 * characters at its place keep it open: several characters at once are accepted (Tab, or a partial accept by word or
 * line), single characters are the user typing through it. An edit at its place that does not match ends it as typed
 * over; an edit elsewhere, or a new suggestion, ends it as dismissed (accepted in part when some was accepted).
 * Only one ghost text is visible at a time, so one suggestion is tracked.
 */
export class UsageTracker extends UsageLifecycle<Open, "accepted" | "typed_over" | "left"> {
  private readonly origins = new WeakMap<Suggestion, SuggestionOrigin>();

  /** The pipeline announces a suggestion it returns (it may still not be shown: VS Code can cancel). */
  offer(suggestion: Suggestion, origin: SuggestionOrigin): void {
    this.origins.set(suggestion, origin);
  }

  /** The editor shows `suggestion`; returns the id its accept command must carry, or undefined when not tracked. */
  shown(suggestion: Suggestion): string | undefined {
    if (!this.deps.enabled()) return undefined;
    const origin = this.origins.get(suggestion);
    if (origin?.id === undefined) return undefined;
    const now = this.deps.clock.now();
    if (this.open?.id === origin.id) {
      if (this.open.ending === undefined) return origin.id;
      this.emit(this.open.ending);
      return undefined;
    }
    if (this.reportedBefore(origin.id)) return undefined;
    if (this.open !== undefined) this.emit("left");
    const replaced = suggestion.end - suggestion.start;
    const added = suggestion.insertText.slice(Math.min(replaced, suggestion.insertText.length));
    this.open = {
      id: origin.id,
      uri: origin.uri,
      language: origin.languageId,
      start: origin.documentOffset + suggestion.start,
      full: suggestion.insertText,
      shownChars: added.length,
      shownLines: lineCount(added),
      timeToGhostMs: Math.max(0, now - origin.pausedAt),
      // The document already holds the selected item's range, which the suggestion extends.
      consumed: Math.min(replaced, suggestion.insertText.length),
      acceptedChars: 0,
      acceptedUpTo: Math.min(replaced, suggestion.insertText.length),
      ending: undefined,
      timer: undefined,
      expiry: undefined,
    };
    const open = this.open;
    this.begin(open, () => open.ending ?? "left");
    return origin.id;
  }

  /** VS Code ran the accept command of the suggestion `id`: it was taken whole. */
  accepted(id: string): void {
    const open = this.open;
    if (open?.id !== id) return;
    open.acceptedChars = open.shownChars;
    open.acceptedUpTo = open.full.length;
    this.emit("accepted");
  }

  /** Escape: the ghost text was hidden without being accepted. */
  dismissed(): void {
    if (this.open !== undefined) this.emit(this.open.ending ?? "left");
  }

  /** A document changed; `changes` in VS Code's order and offsets (each relative to the document before it). */
  edited(uri: string, changes: readonly DocumentChange[]): void {
    const open = this.open;
    if (open === undefined || open.uri !== uri || open.ending !== undefined) return;
    for (const change of changes) {
      if (!this.follow(open, change)) return;
    }
    if (open.consumed >= open.full.length) this.end(open, "left");
  }

  /** Reports the open suggestion now, with what is known of it (on deactivate). */
  flush(): void {
    if (this.open !== undefined) this.emit(this.open.ending ?? "left");
  }

  /** Applies one change to the open suggestion; false when it ended it. */
  private follow(open: Open, change: DocumentChange): boolean {
    const at = open.start + open.consumed;
    const from = change.rangeOffset;
    const to = change.rangeOffset + change.rangeLength;
    const touches = from <= at && to >= open.start;
    if (!touches) {
      this.end(open, "left");
      return false;
    }
    // The document keeps `full` up to `from`, then holds `change.text`: it still agrees if that continues `full`.
    const offset = from - open.start;
    if (to === at && offset >= 0 && open.full.startsWith(change.text, offset)) {
      const reached = offset + change.text.length;
      if (change.text.length > 1 && reached > open.consumed) {
        open.acceptedChars = Math.min(open.shownChars, open.acceptedChars + reached - open.consumed);
        open.acceptedUpTo = Math.max(open.acceptedUpTo, reached);
      }
      open.consumed = reached;
      return true;
    }
    this.end(open, "typed_over");
    return false;
  }

  private end(open: Open, ending: "typed_over" | "left"): void {
    open.ending = ending;
    this.settle(open, ending);
  }

  protected emit(ending: "accepted" | "typed_over" | "left"): void {
    const open = this.close();
    if (open === undefined) return;
    const outcome: TabUsageOutcome =
      ending === "accepted" || (open.shownChars > 0 && open.acceptedChars >= open.shownChars)
        ? "accepted"
        : open.acceptedChars > 0
          ? "accepted_partial"
          : ending === "typed_over"
            ? "typed_over"
            : "dismissed";
    const replaced = open.full.length - open.shownChars;
    const keptLines =
      outcome === "accepted" ? open.shownLines : lineCount(open.full.slice(replaced, open.acceptedUpTo));
    this.deps.report({
      id: open.id,
      outcome,
      ...usageFigures({
        shownChars: open.shownChars,
        acceptedChars: open.acceptedChars,
        shownLines: open.shownLines,
        acceptedLines: Math.min(keptLines, open.shownLines),
        timeToGhostMs: open.timeToGhostMs,
      }),
      ...(open.language === "" ? {} : { language: open.language.slice(0, 128) }),
    });
  }
}
