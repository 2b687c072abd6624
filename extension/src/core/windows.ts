import type { TrackedFile, Window } from "./trackedFile";
import { type TokenSet, tokenSetOfLines } from "./tokens";

/**
 * Windows of WINDOW_LINES lines start every WINDOW_STEP lines, so every run of up to 21 lines lies whole inside
 * one window. Forty lines hold a typical function with its neighbourhood (Copilot uses 60, which leaves room for
 * fewer distinct snippets in the same budget); a step of half a window makes 20 times fewer windows to score than
 * Copilot's step of one line (getBasicWindowDelineations in microsoft/vscode-copilot-chat, src/extension/
 * completions-core/vscode-node/prompt/src/snippetInclusion/windowDelineations.ts), at the cost of coarser edges.
 */
export const WINDOW_LINES = 40;
export const WINDOW_STEP = 20;

/** A file as the windows see it: its lines and their tokens, and the windows cut over them. */
export interface WindowedFile extends TrackedFile {
  readonly lines: readonly string[];
  readonly lineTokens: readonly (readonly number[])[];
  windows: HeldWindow[];
  /** Some window is dirty. */
  stale: boolean;
}

export interface HeldWindow extends Window {
  start: number;
  end: number;
  tokens: TokenSet;
  readonly file: WindowedFile;
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
export class WindowIndex {
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

/**
 * Lines `[from, to)` were replaced by `count` lines: windows below move with their lines, windows over the
 * replaced lines stretch or shrink around the new ones and are marked dirty.
 */
export function moveWindows(file: WindowedFile, from: number, to: number, count: number): void {
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
export function refreshWindows(file: WindowedFile, index: WindowIndex): void {
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

/** Drops every window of a file from the index (the file is let go). */
export function forgetWindows(file: WindowedFile, index: WindowIndex): void {
  for (const window of file.windows) index.remove(window);
}

function cutWindows(file: WindowedFile, from: number, to: number, out: HeldWindow[], index: WindowIndex): void {
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
