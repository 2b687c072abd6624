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
 *
 * Method: reverse everything, so "suffix of `before` ending at position e" becomes "prefix of reversed `before`
 * starting at a position", and compute the Z-array of reversed(before) · reversed(after) · reversed(surrounding)
 * (separated by values no char code takes). z[k] is then the length of the common suffix of `before` and the
 * text ending at the corresponding position. That is O(total length) in every case; substring searches with
 * growing patterns are faster on average but quadratic on repetitive text (long runs, generated tables).
 */
export function findLongestEarlierMatch(texts: MatchTexts, minLength: number): EarlierMatch | undefined {
  const { before, after, surrounding } = texts;
  const n = before.length;
  if (n === 0) return undefined;
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

  let best: EarlierMatch | undefined;
  let bestLength = Math.max(1, minLength) - 1;
  // In reversed `before`, position k is the occurrence ending k chars before the cursor: smaller k is nearer.
  for (let k = 1; k < n; k++) {
    const length = z[k] ?? 0;
    if (length > bestLength) {
      bestLength = length;
      best = { source: "before", length, continuationStart: n - k };
    }
  }
  // In reversed `after`, larger positions are nearer the cursor, so walk them backwards for "first wins".
  for (let k = after.length - 1; k >= 0; k--) {
    const length = z[afterStart + k] ?? 0;
    if (length > bestLength) {
      bestLength = length;
      best = { source: "after", length, continuationStart: after.length - k };
    }
  }
  for (let k = 0; k < surrounding.length; k++) {
    const length = z[surroundingStart + k] ?? 0;
    if (length > bestLength) {
      bestLength = length;
      best = { source: "surrounding", length, continuationStart: surrounding.length - k };
    }
  }
  return best;
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
