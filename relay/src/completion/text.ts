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
