// Small text facts shared by the local engine, the postprocessor and the token counter.

/** Surfaces where a line break would send or split the entry, so a suggestion is one line at most. */
export const SINGLE_LINE_SURFACES: ReadonlySet<string> = new Set(["messages", "tasks", "calendar"]);

export const OPENERS = "([{";
export const CLOSERS = ")]}";

/** One word character anywhere in a string: `WORD_CHAR.test(text)`. */
export const WORD_CHAR = /[\p{L}\p{N}_$]/u;

/** Letters, digits, `_` and `$` (identifier characters in most languages, and word characters in prose). */
export function isWordChar(char: string | undefined): boolean {
  if (char === undefined || char === "") return false;
  const code = char.charCodeAt(0);
  if (code < 128) {
    return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 48 && code <= 57) || code === 95 || code === 36;
  }
  return WORD_CHAR.test(char);
}

/** How many spaces and tabs `line` starts with. */
export function indentation(line: string): number {
  let width = 0;
  while (width < line.length && (line[width] === " " || line[width] === "\t")) width++;
  return width;
}

/** The first half of a surrogate pair: text must not be cut right after it. */
export function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
