import { readFileSync } from "node:fs";

/**
 * The o200k BPE in a compact form: every token's bytes in one buffer, an offset table and an open-addressing hash
 * from bytes to rank, about 5 MB in one ArrayBuffer outside V8's heap. gpt-tokenizer's own form is an array of
 * 200,000 strings and a Map over them, 20 MB of heap and 55 to 60 MB of resident memory once loaded (with its
 * 2 MB module source and the garbage of building them), plus a merge cache of up to 100,000 entries that grows
 * with traffic (docs/benchmarks.md). The table is written at build time from gpt-tokenizer's ranks
 * (`relay/build.mjs`, into dist/o200k.bin) and read here in one synchronous read of a few milliseconds, so counting
 * needs no warm-up and the first request pays nothing.
 *
 * Counting follows gpt-tokenizer 3.4.0 step by step, so every count is the same
 * (github.com/niieani/gpt-tokenizer, src/BytePairEncodingCore.ts: `countNative`, `bytePairEncode`, `bytePairMerge`):
 * split the text with the o200k pre-tokenisation regex; a piece that is itself a token counts one; any other piece is
 * merged from its UTF-8 bytes, always merging the adjacent pair of lowest rank (the leftmost on a tie), and counts
 * the parts left. Its lookups by string and by byte array are one lookup by bytes here: a string token's bytes are
 * its UTF-8, and byte tokens are the ones that are not valid UTF-8. `o200k.test.ts` beside it compares the
 * two on real source and on generated text of every script.
 */

/**
 * o200k's pre-tokenisation pattern, as gpt-tokenizer 3.4.0 has it (src/encodingParams/constants.ts:
 * `O200K_TOKEN_SPLIT_PATTERN`, after tiktoken's `o200k_base` pat_str).
 */
const CONTRACTION = String.raw`(?:'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE]))?`;
const O200K_SPLIT = new RegExp(
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+${CONTRACTION}|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*${CONTRACTION}|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
  "gu",
);

/** A lone surrogate is not valid UTF-8: gpt-tokenizer's lookup by string misses it and merges U+FFFD's bytes. */
const LONE_SURROGATE = /\p{Cs}/u;

const MAGIC = 0x6b303032; // "200k"
/** Pieces whose counts are remembered: most of a completion's pieces (words, operators, indentation) recur. */
const COUNTED_PIECES = 8_192;
/** Above every rank: no merge there. */
const NO_MERGE = 0x7fffffff;
const HEADER_WORDS = 4;

/** Writes the table: header, offsets by rank, hash slots, then the bytes. `ranks` is gpt-tokenizer's array. */
export function buildO200kTable(ranks: readonly (string | readonly number[] | undefined)[]): Uint8Array {
  const encoder = new TextEncoder();
  const tokens = ranks.map((token) =>
    token === undefined
      ? new Uint8Array(0)
      : typeof token === "string"
        ? encoder.encode(token)
        : Uint8Array.from(token),
  );
  const byteLength = tokens.reduce((sum, t) => sum + t.length, 0);
  let slots = 1;
  while (slots < tokens.length * 2) slots *= 2;
  const words = HEADER_WORDS + tokens.length + 1 + slots;
  const out = new Uint8Array(words * 4 + byteLength);
  const header = new Uint32Array(out.buffer, 0, words);
  header[0] = MAGIC;
  header[1] = tokens.length;
  header[2] = slots;
  header[3] = byteLength;
  const offsets = header.subarray(HEADER_WORDS, HEADER_WORDS + tokens.length + 1);
  const hash = new Int32Array(out.buffer, (HEADER_WORDS + tokens.length + 1) * 4, slots).fill(-1);
  const bytes = out.subarray(words * 4);
  let at = 0;
  for (const [rank, token] of tokens.entries()) {
    offsets[rank] = at;
    bytes.set(token, at);
    at += token.length;
    if (token.length === 0) continue;
    let slot = fnv(bytes, at - token.length, at) & (slots - 1);
    while (hash[slot] !== -1) slot = (slot + 1) & (slots - 1);
    hash[slot] = rank;
  }
  offsets[tokens.length] = at;
  return out;
}

function fnv(bytes: Uint8Array, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193);
  return h >>> 0;
}

export class O200kCounter {
  private readonly offsets: Uint32Array;
  private readonly hash: Int32Array;
  private readonly bytes: Uint8Array;
  private readonly mask: number;
  private readonly encoder = new TextEncoder();
  private scratch = new Uint8Array(1024);
  private readonly counted = new Map<string, number>();
  private starts = new Int32Array(256);
  private ranks = new Int32Array(256);

  constructor(table: Uint8Array) {
    // A copy aligned for the typed arrays: readFileSync's Buffer may share a pool at any offset.
    const own = table.byteOffset % 4 === 0 ? table : table.slice();
    const header = new Uint32Array(own.buffer, own.byteOffset, HEADER_WORDS);
    const [magic, count, slots, byteLength] = header as unknown as [number, number, number, number];
    const words = HEADER_WORDS + count + 1 + slots;
    if (magic !== MAGIC || own.byteLength !== words * 4 + byteLength) throw new Error("not an o200k table");
    this.offsets = new Uint32Array(own.buffer, own.byteOffset + HEADER_WORDS * 4, count + 1);
    this.hash = new Int32Array(own.buffer, own.byteOffset + (HEADER_WORDS + count + 1) * 4, slots);
    this.bytes = own.subarray(words * 4);
    this.mask = slots - 1;
  }

  /** The rank of bytes [start, end) of `piece`, or -1 when they are no token. */
  rank(piece: Uint8Array, start: number, end: number): number {
    const { offsets, hash, bytes, mask } = this;
    const length = end - start;
    let slot = fnv(piece, start, end) & mask;
    for (;;) {
      const rank = hash[slot] as number;
      if (rank === -1) return -1;
      const from = offsets[rank] as number;
      if ((offsets[rank + 1] as number) - from === length) {
        let i = 0;
        while (i < length && bytes[from + i] === piece[start + i]) i++;
        if (i === length) return rank;
      }
      slot = (slot + 1) & mask;
    }
  }

  /** How many o200k tokens `text` is, special-token strings counted as plain text. */
  count(text: string): number {
    let total = 0;
    O200K_SPLIT.lastIndex = 0;
    for (let match = O200K_SPLIT.exec(text); match !== null; match = O200K_SPLIT.exec(text)) {
      const piece = match[0];
      let count = this.counted.get(piece);
      if (count === undefined) {
        count = this.countPiece(piece);
        // Bounded: emptied when full, where gpt-tokenizer's merge cache kept up to 100,000 pieces for good.
        if (this.counted.size >= COUNTED_PIECES) this.counted.clear();
        this.counted.set(piece, count);
      }
      total += count;
    }
    return total;
  }

  private countPiece(piece: string): number {
    if (this.scratch.length < piece.length * 3) this.scratch = new Uint8Array(piece.length * 3);
    const length = this.utf8(piece);
    if (!LONE_SURROGATE.test(piece) && this.rank(this.scratch, 0, length) !== -1) return 1;
    return this.mergeCount(this.scratch, length);
  }

  /** Writes `piece` as UTF-8 into the scratch buffer; ASCII without a call into C++, as most code is. */
  private utf8(piece: string): number {
    const scratch = this.scratch;
    for (let i = 0; i < piece.length; i++) {
      const code = piece.charCodeAt(i);
      if (code >= 0x80) return this.encoder.encodeInto(piece, scratch).written;
      scratch[i] = code;
    }
    return piece.length;
  }

  /**
   * gpt-tokenizer's `bytePairMerge`, counting the parts instead of naming them: `starts` are the parts' first bytes
   * and `ranks[i]` the rank of merging parts i and i + 1, in reused typed arrays rather than arrays spliced per merge.
   */
  private mergeCount(piece: Uint8Array, length: number): number {
    if (this.starts.length < length + 1) {
      this.starts = new Int32Array(length + 1);
      this.ranks = new Int32Array(length + 1);
    }
    const { starts, ranks } = this;
    let count = length + 1;
    const pairRank = (index: number): number => {
      if (index + 2 >= count) return NO_MERGE;
      const rank = this.rank(piece, starts[index] as number, starts[index + 2] as number);
      return rank === -1 ? NO_MERGE : rank;
    };
    for (let i = 0; i < count; i++) starts[i] = i;
    for (let i = 0; i < count; i++) ranks[i] = pairRank(i);
    while (count > 1) {
      let lowest = NO_MERGE;
      let at = -1;
      for (let i = 0; i < count - 1; i++) {
        const rank = ranks[i] as number;
        if (rank < lowest) {
          lowest = rank;
          at = i;
        }
      }
      if (at === -1) break;
      starts.copyWithin(at + 1, at + 2, count);
      ranks.copyWithin(at, at + 1, count);
      count--;
      ranks[at] = pairRank(at);
      if (at > 0) ranks[at - 1] = pairRank(at - 1);
    }
    return count - 1;
  }
}

/**
 * Where the build writes the table: next to the bundle (dist/cli.js), or, for the TypeScript sources run by tsx
 * in tests, in relay/dist two folders up from this file.
 */
const TABLE_PLACES = [new URL("./o200k.bin", import.meta.url), new URL("../../dist/o200k.bin", import.meta.url)];

export function loadO200kCounter(): O200kCounter {
  for (const place of TABLE_PLACES) {
    let table: Buffer;
    try {
      table = readFileSync(place);
    } catch {
      continue;
    }
    return new O200kCounter(table);
  }
  throw new Error(`no o200k token table at ${TABLE_PLACES.map(String).join(" or ")}; run \`npm run build -w relay\``);
}
