/** Time, as the pipeline sees it: the repository's one clock interface. The extension passes the system clock, tests a FakeClock. */
export type { Clock } from "@tab-relay/shared";

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** The subset of `fetch` the pipeline uses, so tests can script responses. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
) => Promise<Response>;

/** The IntelliSense item selected in the suggest widget, as offsets into the document. */
export interface SelectedCompletion {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** Everything the pipeline needs to know about one cursor position, as plain data. */
export interface CompletionInput {
  /** Stable identity of the document: its URI. */
  readonly uri: string;
  /** Workspace-relative path for files inside the workspace, else undefined. */
  readonly relativePath: string | undefined;
  /** The URI scheme (`file`, `untitled`, `vscode-scm`, ...). */
  readonly scheme: string;
  readonly languageId: string;
  /** A short human title: the file name, or `Untitled-1`. */
  readonly title: string;
  /** The document, or a window of it around the cursor. */
  readonly text: string;
  /** Cursor offset into `text`. */
  readonly offset: number;
  /** Offset of `text` in the whole document, when `text` is a window of it (0 when absent). */
  readonly documentOffset?: number;
  /** The cursor's line in the whole document, from 0; counted in `text` when absent (then `text` must be whole). */
  readonly cursorLine?: number | undefined;
  readonly selected?: SelectedCompletion | undefined;
  /**
   * When the document was last edited (on the pipeline's clock), as the adapter saw the change: the keystroke the
   * debounce and the person's wait are counted from. Absent, the provide call's own time stands in for it.
   */
  readonly editedAt?: number | undefined;
}

/** What to show: replace `[start, end)` of the document with `insertText`. */
export interface Suggestion {
  readonly insertText: string;
  readonly start: number;
  readonly end: number;
  readonly fromCache: boolean;
}
