// Small text facts shared by the local engine, the postprocessor and the token counter.

/** Surfaces where a line break would send or split the entry, so a suggestion is one line at most. */
export const SINGLE_LINE_SURFACES: ReadonlySet<string> = new Set(["messages", "tasks", "calendar"]);

export const OPENERS = "([{";
export const CLOSERS = ")]}";

// Word characters are one rule for the relay and the extension (shared/src/protocol/text.ts); the local engine
// imports them from here.
export { WORD_CHAR, isWordChar } from "@tab-relay/shared";

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

/**
 * Whether one UTF-16 code unit is what `/\s/` matches: ECMAScript's WhiteSpace and LineTerminator (ECMA-262 §12.2
 * and §12.3; Unicode's Space_Separator is U+0020, U+00A0, U+1680, U+2000–U+200A, U+202F, U+205F, U+3000). A test
 * compares it with the regular expression on every code unit.
 */
export function isWhitespaceCode(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}
