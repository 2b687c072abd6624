import { loadO200kCounter } from "./o200k";
import { isHighSurrogate } from "./text";

/**
 * Special-token strings (`<|endoftext|>`, `<|im_start|>`, `<|fim_prefix|>`) count as the text they are: a
 * repository's own files hold such strings (templates, tokenizers, this relay's prompt templates), and counting must
 * never throw on a client's text. They count as gpt-tokenizer counts them with an empty `disallowedSpecial` and no
 * `allowedSpecial` (github.com/niieani/gpt-tokenizer, src/GptEncoding.ts: `processSpecialTokens` and
 * `countTokens`), by the ordinary BPE; the compact counter has no special tokens at all.
 */
const o200k = loadO200kCounter();

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
  return o200k.count(piece);
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
