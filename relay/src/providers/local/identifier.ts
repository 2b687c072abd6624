import { isWordChar } from "../../completion/text";

/** The run of word characters that ends at the cursor (the part of the word typed so far). */
export function partialWordAtEnd(text: string): string {
  let start = text.length;
  while (start > 0 && isWordChar(text[start - 1])) start--;
  return text.slice(start);
}

interface WordStats {
  score: number;
  distance: number;
}

/** Where a word is searched for: `offset + index` is an occurrence's distance from the cursor (`offset + (length - index)` when `reversed`, for text before it). */
export interface WordSource {
  readonly text: string;
  readonly offset: number;
  readonly reversed: boolean;
  /** How much an occurrence here counts, before its distance is taken into account (default 1). */
  readonly weight?: number;
}

/** An occurrence this many characters from the cursor counts half as much as one right at it. */
const HALF_WEIGHT_DISTANCE = 1_000;

/**
 * Completes `prefix` to a longer word of the context: the word starting with it whose occurrences count most,
 * each counting its source's weight over (1 + distance / HALF_WEIGHT_DISTANCE), so frequent words win but a
 * word used right here beats one used often far away; ties go to the occurrence nearest the cursor, then
 * alphabetically so the answer never depends on iteration order. Returns only the missing tail ("ret" → "urn"),
 * or "" when no word fits.
 */
export function completeWord(prefix: string, texts: readonly WordSource[]): string {
  if (prefix === "") return "";
  const stats = new Map<string, WordStats>();
  for (const { text, offset, reversed, weight = 1 } of texts) {
    for (let at = text.indexOf(prefix); at >= 0; at = text.indexOf(prefix, at + 1)) {
      if (isWordChar(text[at - 1])) continue;
      let end = at + prefix.length;
      while (isWordChar(text[end])) end++;
      if (end === at + prefix.length) continue;
      const word = text.slice(at, end);
      const distance = offset + (reversed ? text.length - at : at);
      const score = weight / (1 + distance / HALF_WEIGHT_DISTANCE);
      const seen = stats.get(word);
      if (seen) {
        seen.score += score;
        seen.distance = Math.min(seen.distance, distance);
      } else stats.set(word, { score, distance });
    }
  }

  let best: string | undefined;
  let bestStats: WordStats | undefined;
  for (const [word, entry] of stats) {
    if (
      !bestStats ||
      best === undefined ||
      entry.score > bestStats.score ||
      (entry.score === bestStats.score &&
        (entry.distance < bestStats.distance || (entry.distance === bestStats.distance && word < best)))
    ) {
      best = word;
      bestStats = entry;
    }
  }
  return best === undefined ? "" : best.slice(prefix.length);
}
