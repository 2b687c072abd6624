/** Where the text after the cursor is predicted from: the source text and the index its continuation starts at. */
export interface EarlierMatch {
  source: "before" | "after" | "surrounding";
  /** Length of the suffix of the text before the cursor that was found again. */
  length: number;
  /** Index in the source text right after the earlier occurrence. */
  continuationStart: number;
}

export interface MatchTexts {
  before: string;
  after: string;
  surrounding: string;
}

/** Two different values no char code takes, so a match never runs across a boundary into the next text. */
const AFTER_END = -1;
const BEFORE_END = -2;

/** Scratch buffers reused across calls: the search is synchronous, and allocating ~0.5 MB per keystroke is waste. */
let codes = new Int32Array(0);
let z = new Int32Array(0);

/**
 * Finds the longest suffix of `before` (at least `minLength` chars) that occurs earlier: inside `before` itself
 * (ending before the cursor), in `after`, or in `surrounding`. Ties go to the text before the cursor, then the
 * text after it, then the surrounding context; within each, the occurrence nearest the cursor wins (the last one
 * in `before`, the first in `after`, the last in `surrounding`).
 */
export function findLongestEarlierMatch(texts: MatchTexts, minLength: number): EarlierMatch | undefined {
  return findEarlierMatches(texts, minLength, 1)[0];
}

/**
 * The `limit` longest earlier occurrences of suffixes of `before` (each at least `minLength` chars, at most one per
 * position), longest first; among equally long ones in the order `findLongestEarlierMatch` breaks ties. Several
 * occurrences let the caller see whether the places that look like the cursor's agree on what comes next.
 *
 * Method: reverse everything, so "suffix of `before` ending at position e" becomes "prefix of reversed `before`
 * starting at a position", and compute the Z-array of reversed(before) · reversed(after) · reversed(surrounding)
 * (separated by values no char code takes). z[k] is then the length of the common suffix of `before` and the
 * text ending at the corresponding position. That is O(total length) in every case; substring searches with
 * growing patterns are faster on average but quadratic on repetitive text (long runs, generated tables).
 */
export function findEarlierMatches(texts: MatchTexts, minLength: number, limit: number): EarlierMatch[] {
  if (limit <= 0) return [];
  const best = new TopScored<EarlierMatch>(limit);
  forEachEarlierMatch(texts, minLength, (source, length, continuationStart) =>
    best.offer(length, { source, length, continuationStart }),
  );
  return best.items;
}

/**
 * Calls `visit` for every earlier occurrence of a suffix of `before` at least `minLength` (at least 1) chars long,
 * with the longest such suffix at that place: first in `before` from the cursor back, then in `after` from the
 * cursor on, then in `surrounding` from its end back (the order in which ties are broken). With `minBetweenWords`,
 * also for shorter occurrences of at least that many chars where the two texts differ next in a word character
 * on both sides (where an identifier may have been renamed; see analogy.ts).
 */
export function forEachEarlierMatch(
  texts: MatchTexts,
  minLength: number,
  visit: (source: EarlierMatch["source"], length: number, continuationStart: number) => void,
  minBetweenWords = Number.POSITIVE_INFINITY,
): void {
  const { before, after, surrounding } = texts;
  const n = before.length;
  if (n === 0) return;
  const afterStart = n + 1;
  const surroundingStart = afterStart + after.length + 1;
  const total = surroundingStart + surrounding.length;
  if (codes.length < total) {
    codes = new Int32Array(total);
    z = new Int32Array(total);
  }
  fillReversed(codes, 0, before);
  codes[n] = BEFORE_END;
  fillReversed(codes, afterStart, after);
  codes[afterStart + after.length] = AFTER_END;
  fillReversed(codes, surroundingStart, surrounding);
  computeZ(codes, z, total);

  const least = Math.max(1, minLength);
  const fewest = Math.max(1, minBetweenWords);
  // A shorter match is wanted where both texts go on (backwards) with a word character: in reversed text the
  // char before a match of `length` at k is at k + length; in reversed `before`, at length. Inlined in the
  // loops below, which run over every position of the context.
  // In reversed `before`, position k is the occurrence ending k chars before the cursor: smaller k is nearer.
  for (let k = 1; k < n; k++) {
    const length = z[k] ?? 0;
    if (
      length >= least ||
      (length >= fewest && k + length < n && isWordCode(codes[length] ?? 0) && isWordCode(codes[k + length] ?? 0))
    ) {
      visit("before", length, n - k);
    }
  }
  // In reversed `after`, larger positions are nearer the cursor, so walk them backwards.
  const afterEnd = afterStart + after.length;
  for (let k = after.length - 1; k >= 0; k--) {
    const at = afterStart + k;
    const length = z[at] ?? 0;
    if (
      length >= least ||
      (length >= fewest &&
        at + length < afterEnd &&
        isWordCode(codes[length] ?? 0) &&
        isWordCode(codes[at + length] ?? 0))
    ) {
      visit("after", length, after.length - k);
    }
  }
  for (let k = 0; k < surrounding.length; k++) {
    const at = surroundingStart + k;
    const length = z[at] ?? 0;
    if (
      length >= least ||
      (length >= fewest && at + length < total && isWordCode(codes[length] ?? 0) && isWordCode(codes[at + length] ?? 0))
    ) {
      visit("surrounding", length, surrounding.length - k);
    }
  }
}

/** Letters, digits, `_`, `$`, and any code beyond ASCII (checked exactly where it matters, in analogy.ts). */
function isWordCode(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    (code >= 48 && code <= 57) ||
    code === 95 ||
    code === 36 ||
    code > 127
  );
}

/** The `limit` items offered with the highest scores, highest first; an equal later offer never displaces an earlier one. */
export class TopScored<T> {
  private readonly scored: Array<{ score: number; item: T }> = [];
  constructor(private readonly limit: number) {}

  /** Whether an item of this score would be kept: check before building it. */
  admits(score: number): boolean {
    return this.scored.length < this.limit || score > (this.scored[this.scored.length - 1]?.score ?? 0);
  }

  offer(score: number, item: T): void {
    const { scored } = this;
    if (!this.admits(score)) return;
    let at = scored.length;
    while (at > 0 && (scored[at - 1]?.score ?? 0) < score) at--;
    scored.splice(at, 0, { score, item });
    if (scored.length > this.limit) scored.pop();
  }

  get items(): T[] {
    return this.scored.map((entry) => entry.item);
  }
}

function fillReversed(target: Int32Array, offset: number, text: string): void {
  const last = text.length - 1;
  for (let index = 0; index <= last; index++) target[offset + index] = text.charCodeAt(last - index);
}

/** z[i] = length of the longest common prefix of s and s[i..]; z[0] is left 0 (the whole string is no "earlier" match). */
function computeZ(s: Int32Array, z: Int32Array, length: number): void {
  z[0] = 0;
  let left = 0;
  let right = 0;
  for (let i = 1; i < length; i++) {
    let k = i < right ? Math.min(right - i, z[i - left] ?? 0) : 0;
    while (i + k < length && s[k] === s[i + k]) k++;
    z[i] = k;
    if (i + k > right) {
      left = i;
      right = i + k;
    }
  }
}
