import { type RecentEdit, snippetCost } from "@tab-relay/shared";
import { EditedRanges } from "./editedRanges";
import { EditHistory, type EditHistoryLimits } from "./editHistory";
import { type ExcludeSettings, Exclusions, type Rejection } from "./exclusions";
import { languageFamily } from "./languageFamily";
import type { RelatedContext, RelatedContextRequest, RelatedContextSource } from "./relatedContext";
import { selectRelatedContext } from "./relatedContext";
import { EMPTY_TOKENS, lineTokens } from "./tokens";
import type { FileDescriptor, Position, TextChange, Window } from "./trackedFile";
import { type HeldWindow, type WindowedFile, WindowIndex, forgetWindows, moveWindows, refreshWindows } from "./windows";

// Callers import these from here, as before the files, windows and edits had their own modules.
export type { ExcludeSettings, Rejection } from "./exclusions";
export type { EditedRange, FileDescriptor, Position, TextChange, TrackedFile, Window } from "./trackedFile";
export { WINDOW_LINES, WINDOW_STEP } from "./windows";

/**
 * The files the user worked in (open tabs, recently focused, recently edited), each held as lines with the
 * identifier tokens of every line and of every window of lines, so that a request only compares cached sets.
 * Tokenising happens when a file arrives or changes, for the changed lines only. Windows follow their content:
 * lines added above a window move it down rather than change what it holds, so an edit touches only the windows
 * over the edited lines, and those are rebuilt at the next request (typing ten characters costs one rebuild, not
 * ten, and pressing Enter at the top of a long file costs no more than at its end). Bounded in files and
 * characters; the least recently used file goes first.
 */

export interface RecentFilesLimits {
  /** Files larger than this are never read nor held (1 MiB: bytes on disk, or characters of an open document). */
  readonly maxFileBytes: number;
  readonly maxFiles: number;
  /** Characters held across all files; a request scans every window of them, so this bounds its cost too. */
  readonly maxChars: number;
  /** Edited ranges remembered across all files. */
  readonly maxEdits: number;
}

export const DEFAULT_RECENT_FILES_LIMITS: RecentFilesLimits = {
  maxFileBytes: 1_048_576,
  // Twenty open tabs (Copilot's neighbour limit: MAX_NEIGHBOR_FILES in microsoft/vscode-copilot-chat,
  // src/extension/completions-core/vscode-node/lib/src/prompt/similarFiles/neighborFiles.ts) plus as many
  // recently focused ones, and some room.
  maxFiles: 50,
  // This repository's TypeScript makes about 2,500 windows of 2,000,000 characters; a request over all of them
  // takes about half a millisecond (npm run bench:context).
  maxChars: 2_000_000,
  maxEdits: 16,
};

class HeldFile implements WindowedFile {
  family: string;
  headerChars: number;
  recency = 0;
  lines: string[] = [];
  lineTokens: (readonly number[])[] = [];
  windows: HeldWindow[] = [];
  chars = 0;
  /** Some window is dirty. */
  stale = false;

  constructor(
    public uri: string,
    public path: string,
    public folder: string | undefined,
  ) {
    this.family = languageFamily(path);
    this.headerChars = snippetCost({ path, text: "" });
  }

  setPath(path: string, folder: string | undefined): void {
    this.path = path;
    this.folder = folder;
    this.family = languageFamily(path);
    this.headerChars = snippetCost({ path, text: "" });
  }
}

const LINE_BREAK = /\r\n|\r|\n/;

export class RecentFiles implements RelatedContextSource {
  /** Insertion order is recency order: a used file is deleted and set again, so the first entry is the oldest. */
  private readonly files = new Map<string, HeldFile>();
  private readonly edits: EditedRanges;
  private readonly history: EditHistory;
  private tick = 0;
  private chars = 0;
  private readonly limits: RecentFilesLimits;
  private readonly index = new WindowIndex();
  private readonly exclusions = new Exclusions();

  constructor(
    private readonly clock: { now(): number },
    limits: Partial<RecentFilesLimits> = {},
    historyLimits: Partial<EditHistoryLimits> = {},
  ) {
    this.limits = { ...DEFAULT_RECENT_FILES_LIMITS, ...limits };
    this.edits = new EditedRanges(this.limits.maxEdits);
    this.history = new EditHistory(historyLimits);
  }

  /** Replaces the exclusion rules and drops every held file they now exclude. */
  setExcludes(settings: ExcludeSettings): void {
    this.exclusions.set(settings);
    for (const file of [...this.files.values()]) {
      if (this.excludedBy(file.path, file.folder) !== undefined) this.remove(file.uri);
    }
  }

  /**
   * Why this file would not be held, or undefined if it would. The adapter asks before reading a file from disk,
   * with its size, so an excluded or oversized file is never read at all.
   */
  check(file: FileDescriptor, bytes?: number): Rejection | undefined {
    if (file.scheme === "untitled") return "untitled";
    if (file.path === undefined) return "outside the workspace";
    const excluded = this.excludedBy(file.path, file.folder);
    if (excluded !== undefined) return excluded;
    if (bytes !== undefined && bytes > this.limits.maxFileBytes) return "over 1 MB";
    return undefined;
  }

  /**
   * A file was opened, shown or focused, with its current text: it becomes the most recent. A file already held
   * is updated in place, re-tokenising only the lines that differ.
   */
  open(file: FileDescriptor, text: string): Rejection | undefined {
    const rejection = this.check(file, text.length);
    if (rejection !== undefined) {
      this.remove(file.uri);
      return rejection;
    }
    // A NUL in the first 8 KB is how git and grep tell binary content; its "lines" are noise.
    if (text.slice(0, 8192).includes("\u0000")) {
      this.remove(file.uri);
      return "binary";
    }
    let held = this.files.get(file.uri);
    if (held === undefined) {
      held = new HeldFile(file.uri, file.path as string, file.folder);
      this.files.set(file.uri, held);
      this.replaceLines(held, 0, 0, text.split(LINE_BREAK));
    } else {
      held.setPath(file.path as string, file.folder);
      this.syncText(held, text);
    }
    this.use(held);
    this.evict();
    // A whole file arrives off the request path (a tab opened or focused), so its windows are cut now rather than
    // by the next request, which would otherwise pay for every file opened since: tens of milliseconds for a few
    // large tabs. Edits come with every keystroke and leave theirs to the next request.
    refreshWindows(held, this.index);
    return undefined;
  }

  /** Marks a held file as just used (focused again) without new text; false when it is not held. */
  touch(uri: string): boolean {
    const held = this.files.get(uri);
    if (held) this.use(held);
    return held !== undefined;
  }

  /**
   * The user edited a held file: `changes` as VS Code reports them, applied one after the other as VS Code's own
   * mirror of the document does (microsoft/vscode, src/vs/editor/common/model/mirrorTextModel.ts, onEvents).
   * The edited lines are remembered as a recent edit. If a change does not fit the text held (an event was
   * missed), the file is re-read from `currentText`. Returns false for a file that is not held.
   */
  edit(uri: string, changes: readonly TextChange[], currentText?: () => string): boolean {
    const held = this.files.get(uri);
    if (held === undefined) return false;
    for (const change of changes) {
      const { start, end } = change.range;
      const first = held.lines[start.line];
      const last = held.lines[end.line];
      if (
        first === undefined ||
        last === undefined ||
        start.line > end.line ||
        (start.line === end.line && start.character > end.character)
      ) {
        // Held text that no longer matches the document must not be sent: resync, or let the file go.
        if (currentText === undefined) {
          this.remove(uri);
          return false;
        }
        this.syncText(held, currentText());
        break;
      }
      const inserted = `${first.slice(0, start.character)}${change.text}${last.slice(end.character)}`.split(LINE_BREAK);
      const replaced = held.lines.slice(start.line, end.line + 1);
      this.replaceLines(held, start.line, end.line + 1, inserted);
      this.history.record(held, start.line, replaced, inserted, this.clock.now());
      this.edits.record(held, start.line, start.line + inserted.length - 1, this.clock.now());
    }
    this.use(held);
    this.evict();
    return true;
  }

  /**
   * Replaces a held file's text without recording an edit (a resync, or a benchmark that has only the new text).
   * Only the lines between the common start and the common end are re-tokenised.
   */
  setText(uri: string, text: string): boolean {
    const held = this.files.get(uri);
    if (held === undefined) return false;
    this.syncText(held, text);
    this.evict();
    return true;
  }

  remove(uri: string): void {
    const held = this.files.get(uri);
    if (held === undefined) return;
    this.files.delete(uri);
    this.chars -= held.chars;
    forgetWindows(held, this.index);
    this.edits.forget(held);
    this.history.forget(held);
  }

  /** Forgets every held file inside a folder that was deleted or moved away. */
  forgetFolder(folderUri: string): void {
    const prefix = folderUri.endsWith("/") ? folderUri : `${folderUri}/`;
    for (const uri of [...this.files.keys()]) if (uri.startsWith(prefix)) this.remove(uri);
  }

  /** A held file was renamed or moved: it keeps its text and edits, unless its new name is excluded. */
  rename(oldUri: string, file: FileDescriptor): void {
    const held = this.files.get(oldUri);
    if (held === undefined) return;
    if (this.check(file) !== undefined) {
      this.remove(oldUri);
      return;
    }
    this.files.delete(oldUri);
    held.uri = file.uri;
    held.setPath(file.path as string, file.folder);
    this.files.set(file.uri, held);
    this.use(held);
  }

  /**
   * The recent edits as small diffs, oldest first, for a next-edit request: only from held files, so never from
   * an excluded one.
   */
  recentEdits(): RecentEdit[] {
    return this.history.recent(this.clock.now());
  }

  /** When the newest recorded edit was made, and in which file; undefined before any. */
  lastEdit(): { readonly path: string; readonly at: number } | undefined {
    return this.history.newest();
  }

  holds(uri: string): boolean {
    return this.files.has(uri);
  }

  /** Held files' paths, most recent first. */
  paths(): string[] {
    return [...this.files.values()].reverse().map((file) => file.path);
  }

  get heldChars(): number {
    return this.chars;
  }

  /** The text held for a file (lines joined with `\n`), for inspection. */
  heldText(uri: string): string | undefined {
    return this.files.get(uri)?.lines.join("\n");
  }

  /** Whether a held file has windows to cut before a request can rank them, for inspection. */
  hasPendingWindows(uri: string): boolean {
    return this.files.get(uri)?.stale ?? false;
  }

  /** A held file's windows, brought up to date, for inspection. */
  heldWindows(uri: string): readonly Window[] {
    const held = this.files.get(uri);
    if (held === undefined) return [];
    refreshWindows(held, this.index);
    return held.windows;
  }

  relatedContext(request: RelatedContextRequest): RelatedContext {
    for (const file of this.files.values()) refreshWindows(file, this.index);
    const now = this.clock.now();
    return selectRelatedContext(
      {
        files: [...this.files.values()],
        edits: this.edits.newestFirst(),
        active: this.files.get(request.uri),
        now,
        forEachSharing: (query, visit) => this.index.forEachSharing(query, visit),
      },
      request,
    );
  }

  private excludedBy(path: string, folder: string | undefined): Rejection | undefined {
    return this.exclusions.excludedBy(path, folder);
  }

  private use(file: HeldFile): void {
    file.recency = ++this.tick;
    this.files.delete(file.uri);
    this.files.set(file.uri, file);
  }

  private evict(): void {
    for (const oldest of this.files.values()) {
      if (this.files.size <= this.limits.maxFiles && this.chars <= this.limits.maxChars) break;
      // The file just used is the last entry; it stays even when it alone is over the limit of characters.
      if (this.files.size === 1) break;
      this.remove(oldest.uri);
    }
  }

  private syncText(file: HeldFile, text: string): void {
    const lines = text.split(LINE_BREAK);
    const old = file.lines;
    let head = 0;
    while (head < lines.length && head < old.length && lines[head] === old[head]) head++;
    let tail = 0;
    while (
      tail < lines.length - head &&
      tail < old.length - head &&
      lines[lines.length - 1 - tail] === old[old.length - 1 - tail]
    )
      tail++;
    if (head === lines.length && head === old.length) return;
    this.replaceLines(file, head, old.length - tail, lines.slice(head, lines.length - tail));
  }

  /** Lines `[from, to)` become `inserted`; their tokens are computed now, the windows over them at the next request. */
  private replaceLines(file: HeldFile, from: number, to: number, inserted: readonly string[]): void {
    let removed = 0;
    for (let i = from; i < to; i++) removed += (file.lines[i] ?? "").length + 1;
    const added = inserted.reduce((sum, line) => sum + line.length + 1, 0);
    file.chars += added - removed;
    this.chars += added - removed;
    const tokens = inserted.map(lineTokens);
    if (inserted.length === 1 && to - from === 1) {
      file.lines[from] = inserted[0] as string;
      file.lineTokens[from] = tokens[0] ?? EMPTY_TOKENS;
    } else {
      // Spreading a large paste into splice() could overflow the call stack; concatenation cannot.
      file.lines = file.lines.slice(0, from).concat(inserted, file.lines.slice(to));
      file.lineTokens = file.lineTokens.slice(0, from).concat(tokens, file.lineTokens.slice(to));
    }
    moveWindows(file, from, to, inserted.length);
    this.edits.shift(file, from, to, inserted.length, file.lines.length);
  }
}

/** Where `offset` falls in `text`, as a line and a character in it. */
export function positionAt(text: string, offset: number): Position {
  let line = 0;
  let lineStart = 0;
  for (let at = text.indexOf("\n"); at !== -1 && at < offset; at = text.indexOf("\n", at + 1)) {
    line++;
    lineStart = at + 1;
  }
  return { line, character: offset - lineStart };
}

/**
 * The change that replaces `deleted` characters at `offset` of `text` with `inserted`, as VS Code reports it; for
 * benchmarks and tests that edit plain strings.
 */
export function changeAt(text: string, offset: number, deleted: number, inserted: string): TextChange {
  return { range: { start: positionAt(text, offset), end: positionAt(text, offset + deleted) }, text: inserted };
}
