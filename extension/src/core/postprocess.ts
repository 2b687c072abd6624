import { typedRepeatLength } from "@tab-relay/shared";
import { lineSuffix, linePrefix } from "./context";

export interface PostprocessContext {
  /** Text before the cursor (with the selected IntelliSense item applied). */
  readonly before: string;
  /** Text after the cursor. */
  readonly after: string;
  /** Text follows the cursor on its line, so at most one line can be shown. */
  readonly singleLine: boolean;
  readonly minVisibleChars: number;
}

const OPENERS: Readonly<Record<string, string>> = { ")": "(", "]": "[", "}": "{" };
/** The longest repeat of the text after the cursor looked for; the request never sends more than this anyway. */
const MAX_OVERLAP = 16_384;

/** Turns the relay's raw text into what is shown, or undefined when nothing worth showing is left. */
export function postprocess(raw: string, ctx: PostprocessContext): string | undefined {
  let text = raw.replace(/\r\n?/g, "\n");
  text = stripTypedPrefix(text, ctx.before);
  if (ctx.singleLine) text = text.split("\n", 1)[0] ?? "";
  text = stripSuffixOverlap(text, ctx.after);
  text = trimSpaces(text, ctx.before, ctx.after);
  if (visibleLength(text) < ctx.minVisibleChars) return undefined;
  if (ctx.after.startsWith(text)) return undefined;
  return text;
}

/**
 * Models often restart the current line or repeat the word at the cursor. Removes that repeat by the relay's rule
 * (`typedRepeatLength` in shared/src/protocol/text.ts): the relay has already applied it to its answer, and since
 * the rule is idempotent this removes nothing more of it, but a server that passes the model's text through gets
 * the same result.
 */
export function stripTypedPrefix(text: string, before: string): string {
  return text.slice(typedRepeatLength(before, text));
}

/**
 * Removes the end of `text` that the text after the cursor already starts with (`foo)` before an existing `)`).
 * A closing bracket in that end counts as a repeat only when the suggestion has no opening bracket for it, so
 * `foo()` before `)` keeps its own pair. Without such a bracket, the overlap must be the rest of the line or at
 * least 3 non-blank characters.
 */
export function stripSuffixOverlap(text: string, after: string): string {
  if (after === "" || text === "") return text;
  const openerOf = pairBrackets(text);
  const restOfLine = lineSuffix(after).trimEnd();
  for (let k = Math.min(text.length, after.length, MAX_OVERLAP); k > 0; k--) {
    const start = text.length - k;
    const overlap = text.slice(start);
    if (!after.startsWith(overlap)) continue;
    let unmatched = 0;
    let pairedOutside = false;
    for (let i = start; i < text.length; i++) {
      const opener = openerOf.get(i);
      if (opener === undefined) continue;
      if (opener === -1) unmatched++;
      else if (opener < start) pairedOutside = true;
    }
    if (pairedOutside) continue;
    if (unmatched > 0 || overlap === restOfLine || (k >= 3 && overlap.trim() !== "")) return text.slice(0, start);
  }
  return text;
}

/** For each closing bracket in `text`, the index of its opening bracket, or -1 when `text` has none. */
function pairBrackets(text: string): Map<number, number> {
  const stack: { ch: string; at: number }[] = [];
  const openerOf = new Map<number, number>();
  for (let i = 0; i < text.length; i++) {
    const ch = text.charAt(i);
    if (ch === "(" || ch === "[" || ch === "{") stack.push({ ch, at: i });
    const opener = OPENERS[ch];
    if (opener === undefined) continue;
    const top = stack.at(-1);
    if (top?.ch === opener) {
      stack.pop();
      openerOf.set(i, top.at);
    } else openerOf.set(i, -1);
  }
  return openerOf;
}

/** No doubled space after a typed space, and no trailing blanks unless the line goes on right after the cursor. */
function trimSpaces(text: string, before: string, after: string): string {
  let out = text;
  const line = linePrefix(before);
  if (line.trim() !== "" && /[ \t]$/.test(line)) out = out.replace(/^[ \t]+/, "");
  const rest = lineSuffix(after);
  if (rest === "" || /^\s/.test(rest)) out = out.trimEnd();
  return out;
}

export function visibleLength(text: string): number {
  return text.replace(/\s/g, "").length;
}
