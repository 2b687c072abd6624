import { isWordChar } from "../../completion/text";

/**
 * Code repeats itself with a name changed: the block for `ZodNever` is the block for `ZodUnknown` with `Unknown`
 * read as `Never`, a test of `z.number()` is a test of `z.string()`. An analogy is an earlier place whose text
 * before it equals the text before the cursor once one identifier there is read as another, consistently
 * everywhere it occurs. What followed it, with the same renaming, is a prediction of text that appears nowhere.
 */
export interface Analogy {
  /** The identifier at the earlier place, and the one in its stead before the cursor. */
  readonly from: string;
  readonly to: string;
  /** Visible characters that agree, the renamed identifiers not counted. */
  readonly visible: number;
}

/** How far back from the cursor an analogy is checked; a dozen lines of agreement say enough. */
const MAX_ANALOGY_CHARS = 400;

/**
 * Extends an exact match backwards across a renamed identifier. `source[start - length, start)` equals the last
 * `length` chars of `before`, and the chars before those differ. If both differ inside an identifier, the
 * comparison goes on before the two identifiers, and again past every later pair of the same two identifiers,
 * until the texts differ otherwise, one of them starts, or MAX_ANALOGY_CHARS of `before` are covered.
 * `floor` is where `source` may be read from (the start of its snippet); `visibleAtEnd(k)` is how many of the
 * last k chars of `before` are not whitespace. Returns undefined when the match does
 * not end inside two identifiers, or when they are the same word.
 */
export function extendAcrossRenaming(
  source: string,
  floor: number,
  start: number,
  length: number,
  before: string,
  visibleAtEnd: (length: number) => number,
  budget: Budget,
): Analogy | undefined {
  let i = start - length - 1;
  let j = before.length - length - 1;
  if (i < floor || j < 0 || !isWordChar(source[i]) || !isWordChar(before[j])) return undefined;
  budget.chars -= TRY_COST;
  const fromStart = wordStart(source, i, floor);
  const toStart = wordStart(before, j, 0);
  // A word cut off by the start of the text is not known whole.
  if (fromStart === floor || toStart === 0) return undefined;
  // Both words end where the match's common part leaves word characters.
  let tail = 1;
  while (isWordChar(before[j + tail])) tail++;
  const from = source.slice(fromStart, i + tail);
  const to = before.slice(toStart, j + tail);
  if (from === to) return undefined;

  let rename: ((word: string) => string) | undefined;
  let visible = visibleAtEnd(length) - (j + tail - (before.length - length));
  const stop = Math.max(0, before.length - MAX_ANALOGY_CHARS, j - budget.chars);
  const first = j;
  i = fromStart - 1;
  j = toStart - 1;
  // Visible characters matched since the last one that was not a word character: the end of a word that, if
  // the texts differ inside it, is no agreement (the "a" that "alpha" and "beta" end in).
  let wordTail = 0;
  while (i >= floor && j >= stop) {
    const char = before[j];
    if (source[i] === char) {
      if (char !== " " && char !== "\n" && char !== "\t" && char !== "\r") visible++;
      wordTail = isWordChar(char) ? wordTail + 1 : 0;
      i--;
      j--;
      continue;
    }
    if (!isWordChar(source[i]) || !isWordChar(char)) {
      if (isWordChar(source[i]) || isWordChar(char)) visible -= wordTail;
      break;
    }
    // The two words around the difference; their ends are where the common part after it leaves word characters.
    const aStart = wordStart(source, i, floor);
    const bStart = wordStart(before, j, 0);
    const aWord = source.slice(aStart, i + 1 + wordTail);
    const bWord = before.slice(bStart, j + 1 + wordTail);
    // The same renaming, of the whole word or of the part in which the two names differ (ZodUnknownParams).
    if (!(aWord === from && bWord === to) && (rename ??= renamer(from, to))(aWord) !== bWord) {
      visible -= wordTail;
      break;
    }
    wordTail = 0;
    i = aStart - 1;
    j = bStart - 1;
  }
  budget.chars -= first - j;
  return { from, to, visible };
}

/** What one analogy costs the budget besides its characters: finding and comparing the two words. */
const TRY_COST = 16;

/**
 * Characters that analogies may still compare in one prediction. Text that repeats one pattern for pages (a
 * table of hex bytes) makes every place an analogy that agrees all the way back; this keeps that linear.
 */
export interface Budget {
  chars: number;
}

/** Where the run of word characters holding `at` starts, from `floor` on. */
function wordStart(text: string, at: number, floor: number): number {
  let start = at;
  while (start > floor && isWordChar(text[start - 1])) start--;
  return start;
}

/**
 * `text` with the renaming applied: `from` becomes `to` as a whole word, and where the two differ in one part
 * of the name (`ZodUnknown` → `ZodNever`: `Unknown` → `Never`), that part becomes the other inside longer names
 * too (`$ZodUnknown`, `unknownProcessor`, `UNKNOWN_TYPE`), matched at the boundaries of the parts of a name
 * (camelCase humps, `_`, `$`) and in the same case. Parts of fewer than MIN_PART_CHARS are only renamed as whole words.
 */
export function applyRenaming(text: string, from: string, to: string): string {
  return renameWith(renamingTargets(from, to), text);
}

/** The renaming of one word (see applyRenaming), for checking many words against one renaming. */
function renamer(from: string, to: string): (word: string) => string {
  const targets = renamingTargets(from, to);
  return (word) => renameWith(targets, word);
}

/** What to replace with what: the whole name (`whole`: only as a whole word), and its differing part in each case. */
type Target = readonly [from: string, to: string, whole: boolean];

/** Targets of recent renamings: the same pairs come up again and again within one prediction and the next. */
const recentTargets = new Map<string, readonly Target[]>();
const RECENT_TARGETS = 256;

function renamingTargets(from: string, to: string): readonly Target[] {
  const key = `${from}\u0000${to}`;
  const known = recentTargets.get(key);
  if (known) return known;
  if (recentTargets.size >= RECENT_TARGETS) recentTargets.clear();
  const targets = newTargets(from, to);
  recentTargets.set(key, targets);
  return targets;
}

function newTargets(from: string, to: string): Target[] {
  const targets: Target[] = [[from, to, true]];
  const part = differingPart(from, to);
  if (part && part.from.length >= MIN_PART_CHARS) {
    const { from: a, to: b } = part;
    for (const [x, y] of [
      [a, b],
      [upperFirst(a), upperFirst(b)],
      [lowerFirst(a), lowerFirst(b)],
      [a.toUpperCase(), b.toUpperCase()],
    ] as const) {
      if (!targets.some(([other, , whole]) => other === x && !whole)) targets.push([x, y, false]);
    }
  }
  return targets;
}

/** Finds every occurrence with indexOf (no pass over every word), then replaces from the left, longest first. */
function renameWith(targets: readonly Target[], text: string): string {
  const found: Array<{ at: number; target: Target }> = [];
  for (const target of targets) {
    const [from, , whole] = target;
    for (let at = text.indexOf(from); at >= 0; at = text.indexOf(from, at + 1)) {
      const end = at + from.length;
      const fits = whole
        ? !isWordChar(text[at - 1]) && !isWordChar(text[end])
        : partBoundary(text, at) && partBoundary(text, end);
      if (fits) found.push({ at, target });
    }
  }
  if (found.length === 0) return text;
  found.sort((x, y) => x.at - y.at || y.target[0].length - x.target[0].length);
  let out = "";
  let copied = 0;
  for (const { at, target } of found) {
    if (at < copied) continue;
    out += text.slice(copied, at) + target[1];
    copied = at + target[0].length;
  }
  return out + text.slice(copied);
}

const MIN_PART_CHARS = 3;

/** The part in which two names differ, with what they share before and after it cut at part boundaries. */
function differingPart(from: string, to: string): { from: string; to: string } | undefined {
  let head = 0;
  while (head < from.length && head < to.length && from[head] === to[head]) head++;
  while (head > 0 && !(partBoundary(from, head) && partBoundary(to, head))) head--;
  let tail = 0;
  while (
    tail < from.length - head &&
    tail < to.length - head &&
    from[from.length - 1 - tail] === to[to.length - 1 - tail]
  )
    tail++;
  while (tail > 0 && !(partBoundary(from, from.length - tail) && partBoundary(to, to.length - tail))) tail--;
  const a = from.slice(head, from.length - tail);
  const b = to.slice(head, to.length - tail);
  return a === "" || b === "" ? undefined : { from: a, to: b };
}

/**
 * Whether a part of a name starts (or ends) at `at` in `text`: at the edge of a word, next to `_` or `$`, or at
 * a hump (`aB`).
 */
function partBoundary(text: string, at: number): boolean {
  const previous = text[at - 1];
  const current = text[at];
  if (!isWordChar(previous) || !isWordChar(current)) return true;
  if (previous === "_" || previous === "$" || current === "_" || current === "$") return true;
  return isUpper(current ?? "") && !isUpper(previous ?? "");
}

function isUpper(char: string): boolean {
  return char !== char.toLowerCase() && char === char.toUpperCase();
}

function upperFirst(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}
