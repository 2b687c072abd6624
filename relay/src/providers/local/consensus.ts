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
  let alive = continuations.filter((option) => option.weight > 0);
  const first = alive[0];
  if (first === undefined) return undefined;
  const whole = sum(alive) + doubt;
  let lead = first;
  let aliveWeight = sum(alive);
  const steps: Step[] = [{ length: 0, share: aliveWeight / whole }];
  for (let at = 0; alive.length > 1; at++) {
    const code = nextCode(lead, at);
    if (code !== -1 && alive.every((option) => nextCode(option, at) === code)) continue;
    const weights = new Map<number, number>();
    for (const option of alive) {
      const code = nextCode(option, at);
      weights.set(code, (weights.get(code) ?? 0) + option.weight);
    }
    let bestCode = -1;
    let bestWeight = -1;
    for (const option of alive) {
      const code = nextCode(option, at);
      const weight = weights.get(code) ?? 0;
      if (weight > bestWeight) {
        bestWeight = weight;
        bestCode = code;
      }
    }
    // Every continuation still in the running has ended here: nothing more is foreseen.
    if (bestCode === -1) return { lead, steps };
    alive = alive.filter((option) => nextCode(option, at) === bestCode);
    lead = alive[0] ?? lead;
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

function sum(options: readonly Continuation[]): number {
  let total = 0;
  for (const option of options) total += option.weight;
  return total;
}

/** Below this share a prefix is more likely wrong than worth reading: nothing is suggested on it. */
const MIN_SHARE = 0.2;
/** Lines after the first are only suggested while this much of the weight stands behind them. */
const REST_SHARE = 0.5;

/**
 * How many characters of `text` (the lead's continuation, already cut where the surface wants it to end) to
 * suggest, given the shares behind its prefixes. On the first line the cut is where the characters one can
 * expect to be right (length times share) are most: a user takes a suggestion only as far as it is right, so
 * a long line on a doubtful guess is worth less than its certain start. Past the first line, where the first
 * line alone can be taken, the suggestion goes on only while a clear majority agrees. Cuts fall at word
 * boundaries, as half a word is a guess at its other half; a share below MIN_SHARE suggests nothing.
 */
export function chooseLength(text: string, steps: readonly Step[]): number {
  const lineBreak = text.indexOf("\n");
  const firstLine = lineBreak < 0 ? text.length : lineBreak;
  // Candidate cuts: the end of the first line, and the last character before each fall in the share.
  const cuts = new Set<number>([firstLine]);
  for (const step of steps) if (step.length > 0 && step.length - 1 < firstLine) cuts.add(backToWordStart(text, step.length - 1));
  let best = 0;
  let bestValue = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    const share = shareAt(steps, cut);
    const value = cut * share;
    if (cut > 0 && share >= MIN_SHARE && value > bestValue) {
      best = cut;
      bestValue = value;
    }
  }
  if (best < firstLine) return best;
  for (const step of steps) {
    if (step.length - 1 >= firstLine && step.share < REST_SHARE) return Math.max(firstLine, backToWordStart(text, step.length - 1));
  }
  return text.length;
}

/** A cut inside a word moves back to where the word starts. */
export function backToWordStart(text: string, length: number): number {
  if (!isWordChar(text[length])) return length;
  let at = length;
  while (at > 0 && isWordChar(text[at - 1])) at--;
  return at;
}
