import { isWordChar } from "../../completion/text";

/** One place in the context that looks like the cursor, what followed it there, and how much it counts. */
export interface Continuation {
  /** The text holding the continuation; it runs from `start` up to (not including) `end`. */
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly weight: number;
}

/** Where the weight behind the leading continuation drops: from `length` characters on, `share` stands behind it. */
export interface Step {
  readonly length: number;
  readonly share: number;
}

export interface Agreement {
  /** The continuation the text is read from: the first of those that agree longest. */
  readonly lead: Continuation;
  /**
   * How much of the weight stands behind each prefix of the lead: steps[i].share for every prefix of at least
   * steps[i].length characters (and below steps[i + 1].length). Shares only fall; the last step lasts to the
   * lead's end.
   */
  readonly steps: readonly Step[];
}

/**
 * Weighs the continuations against each other character by character. Each is one hypothesis about the text at
 * the cursor, with its weight; `doubt` is the weight of "none of them" (text nobody in the context foresaw).
 * Followed from the start, the continuations that agree with the heaviest group at each character stay in the
 * running; the share of a prefix is their weight over the weight of all, doubt included, which reads as the
 * chance that the prefix is right. On equal weight the group of the earliest continuation wins (the caller
 * orders them by preference).
 */
export function agree(continuations: readonly Continuation[], doubt: number): Agreement | undefined {
  // Indexes of the continuations still in the running, compacted in place; order is preference order.
  const alive = continuations.flatMap((option, index) => (option.weight > 0 ? [index] : []));
  const first = continuations[alive[0] ?? -1];
  if (first === undefined) return undefined;
  const codes = new Int32Array(alive.length);
  let count = alive.length;
  let aliveWeight = 0;
  for (const index of alive) aliveWeight += continuations[index]?.weight ?? 0;
  const whole = aliveWeight + doubt;
  let lead = first;
  const steps: Step[] = [{ length: 0, share: aliveWeight / whole }];
  for (let at = 0; count > 1; at++) {
    let same = true;
    for (let k = 0; k < count; k++) {
      codes[k] = nextCode(continuations[alive[k] ?? 0] ?? lead, at);
      if (codes[k] !== codes[0]) same = false;
    }
    if (same && codes[0] !== -1) continue;
    // The heaviest group of equal next characters; on equal weight, the one whose first member comes first.
    let bestCode = -1;
    let bestWeight = -1;
    for (let k = 0; k < count; k++) {
      const code = codes[k] ?? -1;
      let weight = 0;
      for (let m = 0; m < count; m++) if (codes[m] === code) weight += continuations[alive[m] ?? 0]?.weight ?? 0;
      if (weight > bestWeight) {
        bestWeight = weight;
        bestCode = code;
      }
    }
    // Every continuation of the heaviest group has ended here: nothing more is foreseen.
    if (bestCode === -1) return { lead, steps };
    let kept = 0;
    for (let k = 0; k < count; k++) if (codes[k] === bestCode) alive[kept++] = alive[k] ?? 0;
    count = kept;
    lead = continuations[alive[0] ?? 0] ?? lead;
    if (bestWeight < aliveWeight) steps.push({ length: at + 1, share: bestWeight / whole });
    aliveWeight = bestWeight;
  }
  return { lead, steps };
}

/** The share behind the first `length` characters of the lead. */
export function shareAt(steps: readonly Step[], length: number): number {
  let share = 0;
  for (const step of steps) {
    if (step.length > length) break;
    share = step.share;
  }
  return share;
}

function nextCode(option: Continuation, at: number): number {
  return option.start + at < option.end ? option.text.charCodeAt(option.start + at) : -1;
}

/** Below this share a prefix is more likely wrong than worth reading: nothing is suggested on it. */
const MIN_SHARE = 0.2;
/** Lines after the first are only suggested while this much of the weight stands behind them. */
const REST_SHARE = 0.5;

/**
 * How many characters of `text` (the lead's continuation, already cut where the surface wants it to end) to
 * suggest, given the shares behind its prefixes. On the first line the cut is where the characters one can
 * expect to be right (length times share) are most: a user takes a suggestion only as far as it is right, so
 * a long line on a doubtful guess is worth less than its certain start. Past the first line (the first that
 * holds at least MIN_LINE_CHARS visible characters), which can be taken alone, the suggestion goes on only while a clear majority agrees. Cuts fall at word
 * boundaries, as half a word is a guess at its other half; a share below MIN_SHARE suggests nothing.
 */
export function chooseLength(text: string, steps: readonly Step[]): number {
  const firstLine = firstLineEnd(text);
  // Candidate cuts: every word boundary of the first line, and its end.
  let best = 0;
  let bestValue = 0;
  for (let cut = 1; cut <= firstLine; cut++) {
    if (cut < firstLine && isWordChar(text[cut]) && isWordChar(text[cut - 1])) continue;
    const share = shareAt(steps, cut);
    const value = cut * share;
    if (cut > 0 && share >= MIN_SHARE && value > bestValue) {
      best = cut;
      bestValue = value;
    }
  }
  if (best < firstLine) return best;
  if (shareAt(steps, firstLine + 1) < REST_SHARE) return firstLine;
  for (const step of steps) {
    if (step.length - 1 >= firstLine && step.share < REST_SHARE)
      return Math.max(firstLine, backToWordStart(text, step.length - 1));
  }
  return text.length;
}

/**
 * Where the first line worth taking on its own ends: a line break alone, or a lone bracket before one, is not
 * (the suggestion "\ntest(...)" stands or falls with the line after the break).
 */
function firstLineEnd(text: string): number {
  for (let start = 0; ;) {
    const lineBreak = text.indexOf("\n", start);
    const end = lineBreak < 0 ? text.length : lineBreak;
    if (lineBreak < 0 || text.slice(start, end).replace(/\s/g, "").length >= MIN_LINE_CHARS) return end;
    start = lineBreak + 1;
  }
}

const MIN_LINE_CHARS = 2;

/** A cut inside a word moves back to where the word starts. */
export function backToWordStart(text: string, length: number): number {
  if (!isWordChar(text[length])) return length;
  let at = length;
  while (at > 0 && isWordChar(text[at - 1])) at--;
  return at;
}
