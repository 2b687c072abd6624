import { snippetCost } from "@tab-relay/shared";
import { PathMatcher } from "./globs";
import { languageFamily } from "./languageFamily";
import { DEFAULT_EXCLUDE_GLOBS } from "./settings";
import {
  type RelatedContext,
  type RelatedContextRequest,
  type RelatedContextSource,
  selectRelatedContext,
} from "./relatedContext";
import { EMPTY_TOKENS, type TokenSet, lineTokens, tokenSetOfLines } from "./tokens";

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

/**
 * Windows of WINDOW_LINES lines start every WINDOW_STEP lines, so every run of up to 21 lines lies whole inside
 * one window. Forty lines hold a typical function with its neighbourhood (Copilot uses 60, which leaves room for
 * fewer distinct snippets in the same budget); a step of half a window makes 20 times fewer windows to score than
 * Copilot's step of one line (getBasicWindowDelineations in microsoft/vscode-copilot-chat, src/extension/
 * completions-core/vscode-node/prompt/src/snippetInclusion/windowDelineations.ts), at the cost of coarser edges.
 */
export const WINDOW_LINES = 40;
export const WINDOW_STEP = 20;

export interface FileDescriptor {
  /** Identity: the document's URI. */
  readonly uri: string;
  /** Workspace-relative path, shown in the snippet header; undefined for a file outside every workspace folder. */
  readonly path: string | undefined;
  /** URI scheme; an `untitled` buffer is never held. */
  readonly scheme: string;
  /** Key of the workspace folder, for its own `files.exclude`. */
  readonly folder?: string | undefined;
}

/** Why a file is not held, for the log and tests. */
export type Rejection =
  "untitled" | "outside the workspace" | "tabRelay.excludeGlobs" | "files.exclude" | "over 1 MB" | "binary";

export interface Position {
  readonly line: number;
  readonly character: number;
}

/** One change as VS Code reports it: the range it replaced, in the document as it was before this change. */
export interface TextChange {
  readonly range: { readonly start: Position; readonly end: Position };
  readonly text: string;
}

export interface ExcludeSettings {
  /** `tabRelay.excludeGlobs`: never sent, matched against the path and every name in it. */
  readonly excludeGlobs: readonly string[];
  /** `files.exclude` per workspace folder key: a pattern set to `true`, or to a `when` condition, hides files. */
  readonly filesExclude?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

export interface Window {
  readonly start: number;
  readonly end: number;
  readonly tokens: TokenSet;
  /** Blank lines at its start and at its end, which are not sent. */
  readonly lead: number;
  readonly trail: number;
  /** Characters of its text without those blank lines (0 when it is all blank). */
  readonly chars: number;
}

interface HeldWindow extends Window {
  start: number;
  end: number;
  tokens: TokenSet;
  readonly file: HeldFile;
  /** Its lines changed since its tokens were computed. */
  dirty: boolean;
  /** Tokens shared with the query of request `stamp`, counted by WindowIndex.forEachSharing. */
  shared: number;
  stamp: number;
}

/**
 * Which windows hold which token. A request then counts, for each of its tokens, the windows holding it, and
 * touches only windows that share something with it: about 1,500 postings for a query of 80 tokens over 240
 * windows of this repository, where comparing every window token by token makes 19,000 probes.
 */
class WindowIndex {
  private readonly postings = new Map<number, Set<HeldWindow>>();
  private stamp = 0;

  add(window: HeldWindow): void {
    for (const token of window.tokens) {
      let holders = this.postings.get(token);
      if (holders === undefined) {
        holders = new Set();
        this.postings.set(token, holders);
      }
      holders.add(window);
    }
  }

  remove(window: HeldWindow): void {
    for (const token of window.tokens) {
      const holders = this.postings.get(token);
      if (holders === undefined) continue;
      holders.delete(window);
      if (holders.size === 0) this.postings.delete(token);
    }
  }

  /** Calls `visit` once for every window sharing at least one token with `query`, with how many it shares. */
  forEachSharing(query: TokenSet, visit: (file: TrackedFile, window: Window, shared: number) => void): void {
    const stamp = ++this.stamp;
    const touched: HeldWindow[] = [];
    for (const token of query) {
      const holders = this.postings.get(token);
      if (holders === undefined) continue;
      for (const window of holders) {
        if (window.stamp !== stamp) {
          window.stamp = stamp;
          window.shared = 0;
          touched.push(window);
        }
        window.shared++;
      }
    }
    for (const window of touched) visit(window.file, window, window.shared);
  }
}

export interface EditedRange {
  readonly file: TrackedFile;
  start: number;
  end: number;
  at: number;
}

/** What the selection reads from a held file. */
export interface TrackedFile {
  readonly uri: string;
  readonly path: string;
  readonly family: string;
  /** What the snippet header line costs, from snippetCost. */
  readonly headerChars: number;
  /** Larger is more recent. */
  readonly recency: number;
  readonly lines: readonly string[];
  readonly lineTokens: readonly (readonly number[])[];
  readonly windows: readonly Window[];
}

class HeldFile implements TrackedFile {
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
  private edits: EditedRange[] = [];
  private tick = 0;
  private chars = 0;
  private readonly limits: RecentFilesLimits;
  private readonly index = new WindowIndex();
  private excludeGlobs = new PathMatcher(DEFAULT_EXCLUDE_GLOBS, { matchNames: true });
  private filesExclude = new Map<string, PathMatcher>();

  constructor(
    private readonly clock: { now(): number },
    limits: Partial<RecentFilesLimits> = {},
  ) {
    this.limits = { ...DEFAULT_RECENT_FILES_LIMITS, ...limits };
  }

  /** Replaces the exclusion rules and drops every held file they now exclude. */
  setExcludes(settings: ExcludeSettings): void {
    this.excludeGlobs = new PathMatcher(settings.excludeGlobs, { matchNames: true });
    this.filesExclude = new Map(
      Object.entries(settings.filesExclude ?? {}).map(([folder, patterns]) => [
        folder,
        new PathMatcher(hidingPatterns(patterns), { matchNames: false }),
      ]),
    );
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
      this.replaceLines(held, start.line, end.line + 1, inserted);
      this.recordEdit(held, start.line, start.line + inserted.length - 1);
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
    for (const window of held.windows) this.index.remove(window);
    this.edits = this.edits.filter((edit) => edit.file !== held);
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
        edits: [...this.edits].reverse(),
        active: this.files.get(request.uri),
        now,
        forEachSharing: (query, visit) => this.index.forEachSharing(query, visit),
      },
      request,
    );
  }

  private excludedBy(path: string, folder: string | undefined): Rejection | undefined {
    if (this.excludeGlobs.match(path) !== undefined) return "tabRelay.excludeGlobs";
    if (this.filesExclude.get(folder ?? "")?.match(path) !== undefined) return "files.exclude";
    return undefined;
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
    this.shiftEdits(file, from, to, inserted.length);
  }

  /** Keeps remembered edits on the lines they were made on when lines above them come or go. */
  private shiftEdits(file: HeldFile, from: number, to: number, count: number): void {
    const delta = count - (to - from);
    const lastLine = Math.max(0, file.lines.length - 1);
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

  /**
   * Remembers lines `[start, end]` as edited now. Typing on, next to the last edit of the same file, grows that
   * edit rather than starting a new one, so one function being written is one edit.
   */
  private recordEdit(file: HeldFile, start: number, end: number): void {
    const at = this.clock.now();
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
    if (this.edits.length > this.limits.maxEdits) this.edits.shift();
  }
}

/** Edits this close together (in lines) are one edit. */
const EDIT_MERGE_LINES = 3;

/**
 * The patterns of one `files.exclude` object that hide files. A pattern with a `when` condition (hide `x.js` when
 * `x.ts` exists) counts as hiding whatever the condition says: checking it would take a file system call per file,
 * and leaving such a file out costs only context.
 */
function hidingPatterns(patterns: Readonly<Record<string, unknown>>): string[] {
  return Object.entries(patterns)
    .filter(
      ([, value]) =>
        value === true ||
        (typeof value === "object" && value !== null && typeof (value as { when?: unknown }).when === "string"),
    )
    .map(([pattern]) => pattern);
}

/**
 * Lines `[from, to)` were replaced by `count` lines: windows below move with their lines, windows over the
 * replaced lines stretch or shrink around the new ones and are marked dirty.
 */
function moveWindows(file: HeldFile, from: number, to: number, count: number): void {
  const delta = count - (to - from);
  // Lines inserted between two lines (from a resync) touch the windows on both sides, so that at the top or
  // the end of the file some window still covers them.
  const insertion = from === to;
  for (const window of file.windows) {
    if (insertion ? window.end < from : window.end <= from) continue;
    if (insertion ? window.start > from : window.start >= to) {
      window.start += delta;
      window.end += delta;
      continue;
    }
    window.start = Math.min(window.start, from);
    window.end = window.end > to ? window.end + delta : from + count;
    window.dirty = true;
    file.stale = true;
  }
  if (file.windows.length === 0) file.stale = true;
}

/**
 * Brings the windows up to date: each run of dirty windows is cut again into windows of WINDOW_LINES lines every
 * WINDOW_STEP lines over the lines it spans, and tokenised; clean windows are kept as they are.
 */
function refreshWindows(file: HeldFile, index: WindowIndex): void {
  if (!file.stale) return;
  const windows: HeldWindow[] = [];
  if (file.windows.length === 0) cutWindows(file, 0, file.lines.length, windows, index);
  for (let i = 0; i < file.windows.length;) {
    const window = file.windows[i] as HeldWindow;
    if (!window.dirty) {
      windows.push(window);
      i++;
      continue;
    }
    let start = window.start;
    let end = window.end;
    for (; i < file.windows.length && file.windows[i]?.dirty; i++) {
      const dirty = file.windows[i] as HeldWindow;
      start = Math.min(start, dirty.start);
      end = Math.max(end, dirty.end);
      index.remove(dirty);
    }
    cutWindows(file, start, Math.min(end, file.lines.length), windows, index);
  }
  file.windows = windows;
  file.stale = false;
}

function cutWindows(file: HeldFile, from: number, to: number, out: HeldWindow[], index: WindowIndex): void {
  if (to <= from) return;
  for (let start = from; ; start += WINDOW_STEP) {
    const end = Math.min(to, start + WINDOW_LINES);
    let first = start;
    let last = end;
    while (first < last && BLANK.test(file.lines[first] ?? "")) first++;
    while (last > first && BLANK.test(file.lines[last - 1] ?? "")) last--;
    let chars = Math.max(0, last - first - 1);
    for (let i = first; i < last; i++) chars += (file.lines[i] ?? "").length;
    const window: HeldWindow = {
      start,
      end,
      tokens: tokenSetOfLines(file.lineTokens, start, end),
      lead: first - start,
      trail: end - last,
      chars,
      file,
      dirty: false,
      shared: 0,
      stamp: 0,
    };
    index.add(window);
    out.push(window);
    if (end >= to) return;
  }
}

const BLANK = /^\s*$/;

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
