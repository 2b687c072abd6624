/**
 * The simulated typist: what the next keystroke is, how long they wait before it, and whether they take the ghost
 * text on screen. Pure and seeded, so a run is reproducible and the model can be tested.
 */

export { seededRandom } from "../support/seededRandom";

export interface TypistModel {
  /** Mean time between keystrokes; 125 ms is 8 characters a second. */
  readonly keyMs: number;
  /** Each keystroke gap is `keyMs` ± up to this much, uniformly. */
  readonly jitterMs: number;
  /** A typing pause (thinking, reading) lasts between these, uniformly. */
  readonly pauseMinMs: number;
  readonly pauseMaxMs: number;
  /** After these characters the typist pauses with probability `punctuationPause`; after a line break always. */
  readonly pauseAfter: string;
  readonly punctuationPause: number;
  /** Share of letters typed wrong, then deleted with Backspace at the next keystroke and retyped. */
  readonly typoRate: number;
  /** Ghost text must have been on screen this long before the typist can judge it and press Tab. */
  readonly reactionMs: number;
}

export const DEFAULT_TYPIST: TypistModel = {
  keyMs: 125,
  jitterMs: 40,
  pauseMinMs: 400,
  pauseMaxMs: 1_500,
  pauseAfter: ",;({=.",
  punctuationPause: 0.25,
  typoRate: 0.01,
  reactionMs: 300,
};

export type GapKind = "typing" | "pause";

export interface Gap {
  readonly kind: GapKind;
  readonly ms: number;
}

/** How long the typist waits after inserting `inserted` (the text of their last keystroke or Tab). */
export function nextGap(random: () => number, model: TypistModel, inserted: string): Gap {
  const last = inserted.trimEnd().at(-1) ?? "";
  const pause =
    inserted.includes("\n") || (model.pauseAfter.includes(last) && last !== "" && random() < model.punctuationPause);
  if (pause) return { kind: "pause", ms: model.pauseMinMs + random() * (model.pauseMaxMs - model.pauseMinMs) };
  return { kind: "typing", ms: model.keyMs + (random() * 2 - 1) * model.jitterMs };
}

export type Keystroke =
  { readonly kind: "type"; readonly text: string; readonly typo: boolean } | { readonly kind: "backspace" };

/**
 * The next key the typist presses to get from `typed` towards `target` (`typed` is always `target`'s prefix, or
 * that prefix plus one wrong letter). Enter also inserts the next line's indentation, as the editor's auto-indent
 * would; brackets and quotes are typed by hand (as with `editor.autoClosingBrackets: never`).
 */
export function nextKeystroke(
  random: () => number,
  model: TypistModel,
  target: string,
  typed: string,
): Keystroke | undefined {
  if (!target.startsWith(typed)) return { kind: "backspace" };
  const next = target.charAt(typed.length);
  if (next === "") return undefined;
  if (next === "\n") {
    const indent = /^[ \t]*/.exec(target.slice(typed.length + 1))?.[0] ?? "";
    const blankLine = target.charAt(typed.length + 1 + indent.length) === "\n";
    return { kind: "type", text: blankLine ? "\n" : `\n${indent}`, typo: false };
  }
  if (/[a-z]/i.test(next) && random() < model.typoRate)
    return { kind: "type", text: wrongLetter(random, next), typo: true };
  return { kind: "type", text: next, typo: false };
}

function wrongLetter(random: () => number, intended: string): string {
  const letters = "etaoinshrdlucmfwypvbgkqjxz";
  const lower = intended.toLowerCase();
  let pick = letters.charAt(Math.floor(random() * letters.length));
  if (pick === lower) pick = lower === "e" ? "r" : "e";
  return intended === lower ? pick : pick.toUpperCase();
}

export type Acceptance = { readonly kind: "all" | "line"; readonly text: string };

/**
 * Whether the typist takes the ghost text `ghost` when the file goes on with `upcoming`:
 * - all of it (Tab) when the file goes on with exactly that text;
 * - its first line (VS Code's "Accept Line") when the suggestion has more lines and the file goes on with exactly
 *   that first line, line break included, and the line holds at least 2 visible characters;
 * - otherwise nothing: they keep typing (and typing through the matching part of it is served from the cache).
 * Partial accepts by word are left out: a typist who knows the next word types it.
 */
export function acceptance(ghost: string, upcoming: string): Acceptance | undefined {
  if (ghost === "") return undefined;
  if (upcoming.startsWith(ghost)) return { kind: "all", text: ghost };
  const newline = ghost.indexOf("\n");
  if (newline === -1) return undefined;
  const line = ghost.slice(0, newline);
  if (line.replace(/\s/g, "").length < 2 || !upcoming.startsWith(`${line}\n`)) return undefined;
  return { kind: "line", text: line };
}
