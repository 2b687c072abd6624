import { isWordChar } from "../../completion/text";

/** The run of word characters that ends at the cursor (the part of the word typed so far). */
export function partialWordAtEnd(text: string): string {
  let start = text.length;
  while (start > 0 && isWordChar(text[start - 1])) start--;
  return text.slice(start);
}

interface WordStats {
  count: number;
  distance: number;
}

/**
 * Completes `prefix` to a longer word of the document: the most frequent word starting with it, ties broken by
 * the occurrence nearest the cursor, then alphabetically so the answer never depends on iteration order.
 * Returns only the missing tail ("ret" → "urn"), or "" when no word fits.
 *
 * `texts` are searched with their distance from the cursor: `offset + index` for text after the cursor,
 * `offset + (length - index)` for text before it (`reversed`).
 */
export function completeWord(prefix: string, texts: ReadonlyArray<{ text: string; offset: number; reversed: boolean }>): string {
  if (prefix === "") return "";
  const stats = new Map<string, WordStats>();
  for (const { text, offset, reversed } of texts) {
    for (let at = text.indexOf(prefix); at >= 0; at = text.indexOf(prefix, at + 1)) {
      if (isWordChar(text[at - 1])) continue;
      let end = at + prefix.length;
      while (isWordChar(text[end])) end++;
      if (end === at + prefix.length) continue;
      const word = text.slice(at, end);
      const distance = offset + (reversed ? text.length - at : at);
      const seen = stats.get(word);
      if (seen) {
        seen.count++;
        seen.distance = Math.min(seen.distance, distance);
      } else stats.set(word, { count: 1, distance });
    }
  }

  let best: string | undefined;
  let bestStats: WordStats | undefined;
  for (const [word, entry] of stats) {
    if (
      !bestStats ||
      best === undefined ||
      entry.count > bestStats.count ||
      (entry.count === bestStats.count && (entry.distance < bestStats.distance || (entry.distance === bestStats.distance && word < best)))
    ) {
      best = word;
      bestStats = entry;
    }
  }
  return best === undefined ? "" : best.slice(prefix.length);
}
