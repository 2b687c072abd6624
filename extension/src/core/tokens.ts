/**
 * Identifier sets for ranking code by similarity. A token is an identifier (letters, digits, `_`, `$`, not
 * starting with a digit) of two characters or more that is not a keyword every language shares; it is kept as a
 * 30-bit hash, so sets are sorted Int32Arrays: compact, cheap to compare, and never a heap number.
 *
 * Dropping keywords and one-letter names follows Copilot's neighbouring-tab matcher, which removes words common to
 * all programs before comparing (microsoft/vscode-copilot-chat, src/extension/completions-core/vscode-node/prompt/
 * src/snippetInclusion/selectRelevance.ts, GENERIC_STOPS): `return` or `i` in both texts says nothing about
 * whether one helps complete the other.
 */

/** One set of token hashes, sorted ascending, without repeats. */
export type TokenSet = Int32Array;

export const EMPTY_TOKENS: readonly number[] = Object.freeze([]);

const IDENTIFIER = /[A-Za-z_$\u00C0-\uD7FF\uE000-\uFFFF][\w$\u00C0-\uD7FF\uE000-\uFFFF]*/g;

/** Keywords and glue words shared by most languages and by English comments; they match everything equally. */
const STOP_WORDS = new Set(
  (
    "if then else elif for foreach while do switch case default break continue return yield goto " +
    "function func fn def lambda const let var val mut static final public private protected internal pub " +
    "class struct enum interface trait impl type typeof instanceof extends implements abstract override virtual " +
    "import export from as use using include require package module namespace " +
    "new delete this self super null nil none undefined true false void " +
    "try catch except finally throw throws raise assert async await with in of is not and or " +
    "the to it be on at by an we you this that with todo"
  )
    .split(" ")
    .flatMap((word) => [word, word.charAt(0).toUpperCase() + word.slice(1)]),
);

/** FNV-1a over UTF-16 code units, cut to 30 bits so it stays a small integer in V8. */
function hashToken(token: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < token.length; i++) hash = Math.imul(hash ^ token.charCodeAt(i), 0x01000193);
  return hash & 0x3fffffff;
}

/** The token hashes of one line, in order of appearance, repeats included. */
export function lineTokens(line: string): readonly number[] {
  let out: number[] | undefined;
  IDENTIFIER.lastIndex = 0;
  for (let match = IDENTIFIER.exec(line); match !== null; match = IDENTIFIER.exec(line)) {
    const word = match[0];
    if (word.length < 2 || STOP_WORDS.has(word)) continue;
    (out ??= []).push(hashToken(word));
  }
  return out ?? EMPTY_TOKENS;
}

let scratch = new Int32Array(4096);

/** The set of tokens on lines `[from, to)`. */
export function tokenSetOfLines(lines: readonly (readonly number[])[], from: number, to: number): TokenSet {
  let n = 0;
  for (let i = from; i < to; i++) {
    const tokens = lines[i] ?? EMPTY_TOKENS;
    if (n + tokens.length > scratch.length) {
      const grown = new Int32Array(Math.max(scratch.length * 2, n + tokens.length));
      grown.set(scratch.subarray(0, n));
      scratch = grown;
    }
    for (const hash of tokens) scratch[n++] = hash;
  }
  return sortedUnique(scratch.subarray(0, n));
}

/** The set of tokens in a text. */
export function tokenSetOfText(text: string): TokenSet {
  const lines = text.split("\n").map(lineTokens);
  return tokenSetOfLines(lines, 0, lines.length);
}

function sortedUnique(values: Int32Array): TokenSet {
  values.sort();
  let kept = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i] as number;
    if (kept === 0 || values[kept - 1] !== value) values[kept++] = value;
  }
  return values.slice(0, kept);
}

/** |a ∩ b| / |a ∪ b| of two sorted sets, by one merge pass; 0 when either is empty. */
export function jaccard(a: TokenSet, b: TokenSet): number {
  if (a.length === 0 || b.length === 0) return 0;
  let i = 0;
  let j = 0;
  let shared = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as number;
    const y = b[j] as number;
    if (x === y) {
      shared++;
      i++;
      j++;
    } else if (x < y) i++;
    else j++;
  }
  return shared / (a.length + b.length - shared);
}

/**
 * A set held in an open-addressing table, for one request's query: a window's similarity then costs one probe
 * per window token instead of a merge over both sets.
 */
export class TokenLookup {
  readonly size: number;
  private readonly table: Int32Array;
  private readonly mask: number;

  constructor(tokens: TokenSet) {
    let capacity = 64;
    while (capacity < tokens.length * 4) capacity *= 2;
    // Hashes are 30-bit and never negative, so -1 marks an empty slot.
    this.table = new Int32Array(capacity).fill(-1);
    this.mask = capacity - 1;
    this.size = tokens.length;
    for (const token of tokens) {
      let slot = token & this.mask;
      while (this.table[slot] !== -1) slot = (slot + 1) & this.mask;
      this.table[slot] = token;
    }
  }

  has(token: number): boolean {
    for (let slot = token & this.mask; ; slot = (slot + 1) & this.mask) {
      const held = this.table[slot];
      if (held === token) return true;
      if (held === -1) return false;
    }
  }

  /** The same value as `jaccard(query, set)`. */
  jaccard(set: TokenSet): number {
    if (this.size === 0 || set.length === 0) return 0;
    let shared = 0;
    for (let i = 0; i < set.length; i++) if (this.has(set[i] as number)) shared++;
    return shared / (this.size + set.length - shared);
  }
}
