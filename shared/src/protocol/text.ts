/**
 * The text rules a suggestion passes through, kept once for the relay and its clients.
 *
 * Who owns what:
 * - The relay is the authority on what a suggestion says. Every suggestion, from any provider and from its cache,
 *   passes its postprocessor (`relay/src/completion/postprocess/`): stop sequences, chat-model wrapping, a repeat
 *   of what was typed (the rule below), the stop where the output reaches text after the cursor, one line on
 *   single-line surfaces, and the token limit.
 * - The extension only adjusts the relay's answer to the editor (`extension/src/core/postprocess.ts`): line
 *   endings, one line where text follows the cursor on its line, the end of the suggestion that the text after
 *   the cursor already starts with, blanks at its edges, the minimum visible length; then serves the rest of it from
 *   its typing-through cache while the user types it. It applies the typed-repeat rule below too (a client of
 *   another server may get the model's raw text), and since the rule is idempotent, that removes nothing more
 *   from what the relay sent.
 * - Both sides use the word characters below: the relay for whole-word matches and its local engine's
 *   identifiers, the extension to skip a cursor in the middle of a word.
 */

/**
 * One word character anywhere in a string: letters with their combining marks, digits, `_` and `$`. That is what
 * continues an identifier in JavaScript (ECMAScript's IdentifierPart: ID_Continue, which takes in letters, marks,
 * decimal digits and connector punctuation, plus `$`), PHP and shell variables, and words in prose, where a mark is
 * part of its letter ("e" + U+0301 is "é").
 */
export const WORD_CHAR = /[\p{L}\p{M}\p{N}_$]/u;

/** Whether `char` (one UTF-16 unit) is a word character; ASCII is decided without the regex (a hot path). */
export function isWordChar(char: string | undefined): boolean {
  if (char === undefined || char === "") return false;
  const code = char.charCodeAt(0);
  if (code < 128) {
    return (
      (code >= 97 && code <= 122) ||
      (code >= 65 && code <= 90) ||
      (code >= 48 && code <= 57) ||
      code === 95 ||
      code === 36
    );
  }
  return WORD_CHAR.test(char);
}

/** Only this much of the cursor line is compared, which bounds how long the relay holds the start of a stream. */
export const TYPED_REPEAT_WINDOW = 256;
/** A shorter restatement is as likely the real continuation (`"` after `"`). */
export const MIN_TYPED_REPEAT = 2;

/**
 * What a suggestion may restate of the typed part of the cursor line: each end of it that starts at the line's
 * start, at text right after a space, or at the start of a word, is at least {@link MIN_TYPED_REPEAT} characters
 * long and not all blank. A model restates a line, a statement or a word (`  return a` → `return a + b;`,
 * `items.map(item => ` → `item => item.id)`, `compu` → `compute(x)`), not an arbitrary tail, which keeps `ba` +
 * `anana` its `a` and `1, 2, 3` + `, 1, 2, 3` whole. Lines above the cursor line do not count: output that
 * repeats them is as often real code (`x++;` twice, the next list item). Indentation alone does not count either:
 * a model that indents after the cursor's indentation may be nesting deeper.
 */
export function typedRepeatCandidates(before: string): string[] {
  const line = before.slice(before.lastIndexOf("\n") + 1);
  const candidates: string[] = [];
  for (let start = Math.max(0, line.length - TYPED_REPEAT_WINDOW); start < line.length; start++) {
    if (!isRepeatStart(line, start) || line.length - start < MIN_TYPED_REPEAT) continue;
    const candidate = line.slice(start);
    if (/\S/.test(candidate)) candidates.push(candidate);
  }
  return candidates;
}

function isRepeatStart(line: string, start: number): boolean {
  if (start === 0) return true;
  const previous = line[start - 1] ?? "";
  const char = line[start] ?? "";
  if (/\s/.test(previous)) return !/\s/.test(char);
  return isWordChar(char) && !isWordChar(previous);
}

/** The length of the longest candidate `text` starts with, or 0. */
export function longestTypedRepeat(candidates: readonly string[], text: string): number {
  let repeat = 0;
  for (const candidate of candidates)
    if (candidate.length > repeat && text.startsWith(candidate)) repeat = candidate.length;
  return repeat;
}

/** Whether more text could still make `text` a longer candidate, so a streaming caller must wait to decide. */
export function mayGrowIntoTypedRepeat(candidates: readonly string[], text: string): boolean {
  return candidates.some((candidate) => candidate.length > text.length && candidate.startsWith(text));
}

/**
 * How much of the start of `text` repeats what was typed on the cursor line: the longest candidate it starts
 * with, then the longest one the rest starts with, and so on. Taking the repeats one after another makes the rule
 * idempotent (what is left never starts with a repeat), so a client that applies it to the relay's answer removes
 * nothing more.
 */
export function typedRepeatLength(before: string, text: string): number {
  const candidates = typedRepeatCandidates(before);
  let length = 0;
  for (
    let next = longestTypedRepeat(candidates, text);
    next > 0;
    next = longestTypedRepeat(candidates, text.slice(length))
  )
    length += next;
  return length;
}
