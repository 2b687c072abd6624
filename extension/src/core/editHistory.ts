import { NEXT_EDIT_LIMITS, type RecentEdit } from "@tab-relay/shared";
import type { TrackedFile } from "./trackedFile";

/**
 * The person's recent edits as small diffs (old lines, new lines, where), for next-edit requests. Peers send the
 * same: Zeta's "User edited <path>:" events with a diff each (zed-industries/zed, crates/zeta/src/zeta1.rs), Copilot
 * NES's `<|edit_diff_history|>` (microsoft/vscode-copilot-chat, src/extension/xtab/). Only files RecentFiles holds
 * are recorded, so an excluded file (tabRelay.excludeGlobs, files.exclude) never has an edit here, and a file that
 * becomes excluded takes its edits with it.
 */
export interface EditHistoryLimits {
  /** Edits kept across all files (the relay accepts NEXT_EDIT_LIMITS.recentEdits). */
  readonly maxEdits: number;
  /** Characters of old and new lines kept across all edits; the oldest edits go first. */
  readonly maxChars: number;
  /** Lines on either side of one edit; a larger edit (a paste, a reformat) is not a pattern to follow and is left out. */
  readonly maxLines: number;
}

export const DEFAULT_EDIT_HISTORY_LIMITS: EditHistoryLimits = {
  maxEdits: NEXT_EDIT_LIMITS.recentEdits,
  // Zeta budgets about 500 tokens of events; 6,000 characters is about 1,500 tokens, room for the region and context.
  maxChars: 6_000,
  maxLines: NEXT_EDIT_LIMITS.editLines,
};

interface HistoryEntry {
  readonly file: TrackedFile;
  /** Line of the first new line, in the file as it stands after this edit (and any merged into it). */
  start: number;
  readonly oldLines: readonly string[];
  newLines: readonly string[];
  at: number;
  chars: number;
}

export class EditHistory {
  private entries: HistoryEntry[] = [];
  private chars = 0;
  private readonly limits: EditHistoryLimits;

  constructor(limits: Partial<EditHistoryLimits> = {}) {
    this.limits = { ...DEFAULT_EDIT_HISTORY_LIMITS, ...limits };
  }

  /**
   * Lines `[start, start + oldLines.length)` of `file` became `newLines` at `at`. A change inside the lines of the
   * file's last edit (typing a word one key at a time) grows that edit, so a rename typed letter by letter is one
   * edit from the old line to the new one; a change that undoes its edit removes it.
   */
  record(file: TrackedFile, start: number, oldLines: readonly string[], newLines: readonly string[], at: number): void {
    const last = this.entries[this.entries.length - 1];
    const end = start + oldLines.length;
    if (last !== undefined && last.file === file && start >= last.start && end <= last.start + last.newLines.length) {
      const offset = start - last.start;
      const merged = [...last.newLines.slice(0, offset), ...newLines, ...last.newLines.slice(offset + oldLines.length)];
      this.drop(this.entries.length - 1);
      if (!sameLines(last.oldLines, merged)) this.push(file, last.start, last.oldLines, merged, at);
      return;
    }
    if (sameLines(oldLines, newLines)) return;
    this.push(file, start, oldLines, newLines, at);
  }

  /** Forgets a file's edits (it was let go, or is now excluded). */
  forget(file: TrackedFile): void {
    for (let i = this.entries.length - 1; i >= 0; i--) if (this.entries[i]?.file === file) this.drop(i);
  }

  /** The recent edits, oldest first, in the request's form; `now` dates them. */
  recent(now: number): RecentEdit[] {
    return this.entries.map((entry) => ({
      file_path: entry.file.path,
      start_line: entry.start,
      old_lines: [...entry.oldLines],
      new_lines: [...entry.newLines],
      age_ms: Math.min(86_400_000, Math.max(0, now - entry.at)),
    }));
  }

  /** The newest edit, for deciding whether a pause follows an edit. */
  newest(): { readonly path: string; readonly at: number } | undefined {
    const last = this.entries[this.entries.length - 1];
    return last && { path: last.file.path, at: last.at };
  }

  get heldChars(): number {
    return this.chars;
  }

  private push(
    file: TrackedFile,
    start: number,
    oldLines: readonly string[],
    newLines: readonly string[],
    at: number,
  ): void {
    const { maxLines, maxEdits, maxChars } = this.limits;
    if (oldLines.length > maxLines || newLines.length > maxLines) return;
    if ([...oldLines, ...newLines].some((line) => line.length > NEXT_EDIT_LIMITS.lineChars)) return;
    const chars = [...oldLines, ...newLines].reduce((sum, line) => sum + line.length + 1, 0);
    if (chars > maxChars) return;
    this.entries.push({ file, start, oldLines, newLines, at, chars });
    this.chars += chars;
    while (this.entries.length > maxEdits || this.chars > maxChars) this.drop(0);
  }

  private drop(index: number): void {
    const [entry] = this.entries.splice(index, 1);
    if (entry) this.chars -= entry.chars;
  }
}

function sameLines(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((line, i) => line === b[i]);
}
