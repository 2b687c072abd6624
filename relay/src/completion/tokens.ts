import { countTokens as countGptTokens } from "gpt-tokenizer";
import { isHighSurrogate } from "./text";

/** The BPE's cost grows with the square of a run without spaces; pieces this long keep it linear. */
const PIECE_CHARS = 256;

/**
 * Token counts use the o200k BPE (the GPT-4o family's tokenizer), a fair measure for any modern model.
 * Long texts are counted in pieces cut just before whitespace (where the tokenizer splits anyway), so 16k
 * characters of CJK or of one repeated letter cost milliseconds rather than seconds; the count stays within
 * a few per cent of counting the text whole.
 */
export function countTokens(text: string): number {
  if (text === "") return 0;
  if (text.length <= PIECE_CHARS) return countGptTokens(text);
  let total = 0;
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + PIECE_CHARS);
    if (end < text.length) {
      const space = lastWhitespace(text, start + PIECE_CHARS / 2, end);
      if (space > start) end = space;
      // Never cut a surrogate pair in two.
      else if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
    }
    total += countGptTokens(text.slice(start, end));
    start = end;
  }
  return total;
}

function lastWhitespace(text: string, from: number, to: number): number {
  for (let i = to; i > from; i--) {
    const ch = text.charCodeAt(i);
    if (ch === 32 || ch === 10 || ch === 9 || ch === 13) return i;
  }
  return -1;
}
