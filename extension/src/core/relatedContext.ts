import { type ContextSnippet, formatSnippets } from "@tab-relay/shared";
import { languageFamily } from "./languageFamily";
import type { EditedRange, TrackedFile, Window } from "./trackedFile";
import { type TokenSet, TokenLookup, jaccard, tokenSetOfLines, tokenSetOfText } from "./tokens";

/** One request's question: where the cursor is, what is already sent around it, and how much room there is. */
export interface RelatedContextRequest {
  /** The active document; its own windows near the cursor are never picked. */
  readonly uri: string;
  /** Its workspace-relative path (or name), for the language family when the document is not held. */
  readonly path: string;
  /** The cursor's line in the whole document, from 0. */
  readonly cursorLine: number;
  /** Lines of the active document around the cursor that the request already carries (or ranks against). */
  readonly linesBefore: number;
  readonly linesAfter: number;
  /** The code just before the cursor; windows are ranked by how many identifiers they share with it. */
  readonly query: string;
  /** Characters `surrounding_context` may take, header lines included. */
  readonly budget: number;
}

export interface SnippetChoice {
  readonly path: string;
  /** Lines `[start, end)` of the file. */
  readonly start: number;
  readonly end: number;
  readonly kind: "edit" | "window";
  /** Jaccard similarity with the query (edits are scored too, for the record). */
  readonly score: number;
  readonly chars: number;
}

export interface RelatedContext {
  /** The snippets, formatted with formatSnippets; never longer than the budget. */
  readonly text: string;
  /** What was picked, in the order sent. */
  readonly snippets: readonly SnippetChoice[];
}

export interface RelatedContextSource {
  /** Whether the document is held, so that its own far parts are among the candidates. */
  holds(uri: string): boolean;
  relatedContext(request: RelatedContextRequest): RelatedContext;
}

/**
 * Recent edits taken, at most: the edits the user made elsewhere in the last few minutes are the strongest hint
 * of what comes next (Continue sends up to three recently edited ranges).
 */
export const MAX_EDIT_SNIPPETS = 3;
/** Older edits are history rather than the task at hand. */
export const EDIT_MAX_AGE_MS = 5 * 60_000;
/** Lines shown above and below an edited range, so that it reads as code rather than a fragment. */
export const EDIT_CONTEXT_LINES = 3;
/** An edit snippet shows at most this many lines, ending where the edit ended (a long paste is cut at its top). */
export const EDIT_MAX_LINES = 20;
/** Edits take at most this share of the budget, so ranked windows always get room. */
const EDIT_BUDGET_SHARE = 0.5;
/** Windows from one file, at most: a near copy of the current file should not crowd out every other file. */
export const MAX_WINDOWS_PER_FILE = 2;
/**
 * Windows this similar to one already picked add nothing (llama.vscode evicts ring-buffer chunks above 0.9,
 * B15 in the research notes).
 */
export const NEAR_DUPLICATE = 0.9;
/** A snippet shorter than this (header included) is not worth its header. */
const MIN_SNIPPET_CHARS = 48;

interface Candidate {
  readonly file: TrackedFile;
  readonly start: number;
  readonly end: number;
  /** The lines sent, `[from, to)`: `[start, end)` without blank lines at either end. */
  readonly from: number;
  readonly to: number;
  /** Characters of the text sent (0 when all blank). */
  readonly chars: number;
  readonly tokens: TokenSet;
  readonly score: number;
  readonly kind: "edit" | "window";
}

interface Picked extends Candidate {
  readonly snippet: ContextSnippet;
  readonly cost: number;
}

export interface SelectionInput {
  /** Oldest first. */
  readonly files: readonly TrackedFile[];
  /** Newest first. */
  readonly edits: readonly EditedRange[];
  readonly active: TrackedFile | undefined;
  readonly now: number;
  /** Calls `visit` for every window that shares at least one token with `query`, with how many it shares. */
  readonly forEachSharing: (
    query: TokenSet,
    visit: (file: TrackedFile, window: Window, shared: number) => void,
  ) => void;
}

/**
 * Fills the budget: recent edits first (newest first, at most half the budget), then windows of the held files of
 * the active document's language family, best Jaccard similarity first, ties to the more recently used file.
 * Skipped: the active document's lines around the cursor (already in the request), anything overlapping a
 * snippet already picked, near duplicates, and what no longer fits (a smaller one further down may still fit).
 * Sent least relevant first, so the best snippet sits next to the cursor's own code in a repository-level prompt.
 */
export function selectRelatedContext(input: SelectionInput, request: RelatedContextRequest): RelatedContext {
  if (request.budget < MIN_SNIPPET_CHARS) return { text: "", snippets: [] };
  const query = tokenSetOfText(request.query);
  const lookup = new TokenLookup(query);
  const zone = { from: request.cursorLine - request.linesBefore, to: request.cursorLine + request.linesAfter + 1 };
  const inZone = (file: TrackedFile, start: number, end: number) =>
    file === input.active && start < zone.to && end > zone.from;
  const picked: Picked[] = [];
  let used = 0;

  // Cheap tests first: a request passes over hundreds of windows, and only a few are joined into text.
  const take = (candidate: Candidate, limit: number): boolean => {
    const { file } = candidate;
    if (candidate.chars === 0) return false;
    // Exactly snippetCost of the snippet below, without building its text.
    const cost = file.headerChars + candidate.chars;
    if (cost < MIN_SNIPPET_CHARS || used + cost > limit) return false;
    if (picked.some((other) => other.file === file && other.start < candidate.end && other.end > candidate.start))
      return false;
    if (picked.some((other) => jaccard(other.tokens, candidate.tokens) >= NEAR_DUPLICATE)) return false;
    picked.push({
      ...candidate,
      snippet: { path: file.path, text: file.lines.slice(candidate.from, candidate.to).join("\n") },
      cost,
    });
    used += cost;
    return true;
  };

  let edits = 0;
  const editLimit = Math.floor(request.budget * EDIT_BUDGET_SHARE);
  for (const edit of input.edits) {
    if (edits >= MAX_EDIT_SNIPPETS) break;
    if (input.now - edit.at > EDIT_MAX_AGE_MS) continue;
    const end = Math.min(edit.file.lines.length, edit.end + 1 + EDIT_CONTEXT_LINES);
    const start = Math.max(0, edit.start - EDIT_CONTEXT_LINES, end - EDIT_MAX_LINES);
    if (inZone(edit.file, start, end)) continue;
    const tokens = tokenSetOfLines(edit.file.lineTokens, start, end);
    const sent = trimmedLines(edit.file, start, end);
    if (
      take(
        { file: edit.file, start, end, ...sent, tokens, score: lookup.jaccard(tokens), kind: "edit" },
        Math.min(request.budget, editLimit),
      )
    )
      edits++;
  }

  // Only windows sharing a token are visited. Each gets one key (score, then how recently its file was used, then
  // its place in the visit) in a typed array, so ranking allocates no object per window.
  const family = input.active?.family ?? languageFamily(request.path);
  const recencyRank = new Map(input.files.map((file, i) => [file, Math.min(i, RECENCY_SLOTS - 1)]));
  let count = 0;
  input.forEachSharing(query, (file, window, shared) => {
    if (file.family !== family || inZone(file, window.start, window.end)) return;
    if (count === keys.length) keys = grow(keys);
    const score = shared / (query.length + window.tokens.length - shared);
    keys[count] = (Math.round(score * SCORE_STEPS) * RECENCY_SLOTS + (recencyRank.get(file) ?? 0)) * RANK_SLOTS + count;
    rankedFiles[count] = file;
    rankedWindows[count] = window;
    count++;
  });
  const sorted = keys.subarray(0, count).sort();
  const perFile = new Map<TrackedFile, number>();
  for (let k = count - 1; k >= 0 && request.budget - used >= MIN_SNIPPET_CHARS; k--) {
    const key = sorted[k] as number;
    const rank = key % RANK_SLOTS;
    const file = rankedFiles[rank] as TrackedFile;
    const taken = perFile.get(file) ?? 0;
    if (taken >= MAX_WINDOWS_PER_FILE) continue;
    const window = rankedWindows[rank] as Window;
    const score = Math.floor(key / RANK_SLOTS / RECENCY_SLOTS) / SCORE_STEPS;
    if (take(windowCandidate(file, window, score), request.budget)) perFile.set(file, taken + 1);
  }
  rankedFiles.length = 0;
  rankedWindows.length = 0;

  // Edits go last (the newest last of all), after windows in rising order of similarity.
  const order = (p: Picked) => (p.kind === "edit" ? 2 : 1);
  const sent = [...picked].sort(
    (a, b) => order(a) - order(b) || (a.kind === "edit" ? picked.indexOf(b) - picked.indexOf(a) : a.score - b.score),
  );
  let text = formatSnippets(sent.map((p) => p.snippet));
  // formatSnippets puts a space before a line that reads like a header; in the rare text with such lines that can
  // go past what snippetCost counted, so the least relevant snippets go until it fits.
  while (text.length > request.budget && sent.length > 0) {
    sent.shift();
    text = formatSnippets(sent.map((p) => p.snippet));
  }
  return {
    text,
    snippets: sent.map((p) => ({
      path: p.file.path,
      start: p.start,
      end: p.end,
      kind: p.kind,
      score: p.score,
      chars: p.cost,
    })),
  };
}

/**
 * A ranking key packs, from the top, the score to five decimals (17 bits), the file's place in recency order
 * (12 bits) and the window's place in the visit (22 bits): 51 bits, exact in a double.
 */
const SCORE_STEPS = 100_000;
const RECENCY_SLOTS = 4_096;
/** More windows than RecentFiles can hold (2,000,000 characters make at most 100,000 windows of 20 new lines). */
const RANK_SLOTS = 4_194_304;
let keys = new Float64Array(4_096);
const rankedFiles: TrackedFile[] = [];
const rankedWindows: Window[] = [];

function grow(array: Float64Array) {
  const grown = new Float64Array(array.length * 2);
  grown.set(array);
  return grown;
}

function windowCandidate(file: TrackedFile, window: Window, score: number): Candidate {
  const { start, end, tokens, chars } = window;
  return { file, start, end, from: start + window.lead, to: end - window.trail, chars, tokens, score, kind: "window" };
}

/** Lines `[start, end)` without the blank lines at either end, and their characters joined. */
function trimmedLines(file: TrackedFile, start: number, end: number): { from: number; to: number; chars: number } {
  let from = start;
  let to = Math.min(end, file.lines.length);
  while (from < to && BLANK.test(file.lines[from] ?? "")) from++;
  while (to > from && BLANK.test(file.lines[to - 1] ?? "")) to--;
  let chars = Math.max(0, to - from - 1);
  for (let i = from; i < to; i++) chars += (file.lines[i] ?? "").length;
  return { from, to, chars };
}

const BLANK = /^\s*$/;
