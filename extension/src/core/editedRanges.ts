import type { EditedRange, TrackedFile } from "./trackedFile";

/** Edits this close together (in lines) are one edit. */
const EDIT_MERGE_LINES = 3;

/**
 * Where the user edited lately: ranges of lines per file, newest last, bounded in count. They follow their lines
 * when lines above them come or go, so a snippet of an edit shows what was edited even after more typing above it.
 */
export class EditedRanges {
  private edits: EditedRange[] = [];

  constructor(private readonly maxEdits: number) {}

  /** Newest first. */
  newestFirst(): EditedRange[] {
    return [...this.edits].reverse();
  }

  forget(file: TrackedFile): void {
    this.edits = this.edits.filter((edit) => edit.file !== file);
  }

  /**
   * Remembers lines `[start, end]` as edited at `at`. Typing on, next to the last edit of the same file, grows that
   * edit rather than starting a new one, so one function being written is one edit.
   */
  record(file: TrackedFile, start: number, end: number, at: number): void {
    const last = this.edits[this.edits.length - 1];
    if (last && last.file === file && start <= last.end + EDIT_MERGE_LINES && end >= last.start - EDIT_MERGE_LINES) {
      last.start = Math.min(last.start, start);
      last.end = Math.max(last.end, end);
      last.at = at;
      return;
    }
    const same = this.edits.findIndex(
      (edit) => edit.file === file && start <= edit.end + EDIT_MERGE_LINES && end >= edit.start - EDIT_MERGE_LINES,
    );
    if (same !== -1) {
      const [edit] = this.edits.splice(same, 1);
      if (edit) {
        edit.start = Math.min(edit.start, start);
        edit.end = Math.max(edit.end, end);
        edit.at = at;
        this.edits.push(edit);
        return;
      }
    }
    this.edits.push({ file, start, end, at });
    if (this.edits.length > this.maxEdits) this.edits.shift();
  }

  /** Lines `[from, to)` of `file` were replaced by `count` lines; it now has `lineCount` lines. */
  shift(file: TrackedFile, from: number, to: number, count: number, lineCount: number): void {
    const delta = count - (to - from);
    const lastLine = Math.max(0, lineCount - 1);
    for (const edit of this.edits) {
      if (edit.file !== file) continue;
      if (edit.end < from) continue;
      if (edit.start >= to) {
        edit.start += delta;
        edit.end += delta;
      } else {
        edit.start = Math.min(edit.start, from);
        edit.end = Math.max(edit.end + delta, from + count - 1);
      }
      edit.start = Math.min(Math.max(0, edit.start), lastLine);
      edit.end = Math.min(Math.max(edit.start, edit.end), lastLine);
    }
  }
}
