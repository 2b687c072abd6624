import { countTokens as countGptTokens } from "gpt-tokenizer";
import { isHighSurrogate } from "./text";

/**
 * Special-token strings (`<|endoftext|>`, `<|im_start|>`, `<|fim_prefix|>`) count as the text they are. By default
 * gpt-tokenizer throws "Disallowed special token found" on them: its `disallowedSpecial` defaults to 'all' and every
 * counting call checks the text against that regex first. An empty `disallowedSpecial` with no `allowedSpecial` leaves
 * no regex and no special-token splitting, so the text is counted by the ordinary BPE
 * (github.com/niieani/gpt-tokenizer, src/GptEncoding.ts: `processSpecialTokens` and `countTokens`;
 * src/BytePairEncodingCore.ts: `countNative`, which only looks for special tokens among the allowed ones).
 * A repository's own files hold such strings (templates, tokenizers, this relay's prompt templates), and counting
 * must never throw on a client's text.
 */
const AS_TEXT = Object.freeze({ disallowedSpecial: new Set<string>() });

/** The BPE's cost grows with the square of a run without spaces; pieces this long keep it linear. */
const PIECE_CHARS = 256;

/**
 * Token counts use the o200k BPE (the GPT-4o family's tokenizer), a fair measure for any modern model.
 * Long texts are counted in pieces cut just before whitespace (where the tokenizer splits anyway), so 16k
 * characters of CJK or of one repeated letter cost milliseconds rather than seconds; the count stays within
 * a few per cent of counting the text whole.
 */
export function countTokens(text: string): number {
  if (text.length <= PIECE_CHARS) return text === "" ? 0 : countPiece(text);
  let total = 0;
  for (const piece of tokenPieces(text)) total += countPiece(piece);
  return total;
}

/** Counts one piece that tokenPieces gave, whole; special-token strings count as text. */
export function countPiece(piece: string): number {
  return countGptTokens(piece, AS_TEXT);
}

/** The pieces countTokens counts one by one: at most PIECE_CHARS each, cut before whitespace where there is some. */
export function* tokenPieces(text: string): Generator<string> {
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + PIECE_CHARS);
    if (end < text.length) {
      const space = lastWhitespace(text, start + PIECE_CHARS / 2, end);
      if (space > start) end = space;
      // Never cut a surrogate pair in two.
      else if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
    }
    yield text.slice(start, end);
    start = end;
  }
}

function lastWhitespace(text: string, from: number, to: number): number {
  for (let i = to; i > from; i--) {
    const ch = text.charCodeAt(i);
    if (ch === 32 || ch === 10 || ch === 9 || ch === 13) return i;
  }
  return -1;
}
