import { CLOSERS, OPENERS, SINGLE_LINE_SURFACES, WORD_CHAR, indentation, isHighSurrogate } from "../../completion/text";

/** A continuation sharing this much of its start with the text after the cursor is a near-copy of it. */
const NEAR_REPEAT_CHARS = 8;

/**
 * Cuts a predicted continuation where a suggestion on this surface should end. With words after the cursor on
 * its line the cursor is mid-text, where a multi-line insertion would split that line: one line only then
 * (closing brackets and punctuation alone after the cursor do not count, so `f(|)` can still get a block).
 */
export function stopForSurface(text: string, surface: string, before: string, after = ""): string {
  if (SINGLE_LINE_SURFACES.has(surface) || WORD_CHAR.test(firstLine(after))) return firstLine(text);
  if (surface === "code") return dropTrailingBlankLines(stopAtBlockEnd(text, before));
  return dropTrailingBlankLines(stopAtParagraphEnd(text));
}

function firstLine(text: string): string {
  const end = text.search(/\r?\n/);
  return end < 0 ? text : text.slice(0, end);
}

function stopAtParagraphEnd(text: string): string {
  const blank = text.search(/\r?\n[ \t]*\r?\n/);
  return blank < 0 ? text : text.slice(0, blank);
}

function dropTrailingBlankLines(text: string): string {
  const trimmed = text.trimEnd();
  // Trailing spaces on the last line may be intended (the next word follows); trailing line breaks are not.
  return /[\r\n]/.test(text.slice(trimmed.length)) ? trimmed : text;
}

/**
 * The end of the current code block, judged by indentation and brackets (no parser, so it works for any
 * language that indents its blocks):
 * - the rest of the cursor line is always kept;
 * - a later non-blank line indented less than the cursor line leaves the block: stop before it;
 * - a blank line followed by a line at or below the cursor line's indentation ends the block (a new paragraph
 *   of statements), unless a bracket opened in the continuation is still open: stop before the blank line;
 * - a closing bracket that closes something opened before the cursor (`function f() {` + `…}`) completes the
 *   enclosing construct: keep the rest of that line, then stop.
 * Brackets inside strings and comments are counted too; the rules stay conservative enough that this only
 * shortens a suggestion.
 */
function stopAtBlockEnd(text: string, before: string): string {
  const cursorLine = before.slice(before.lastIndexOf("\n") + 1);
  const firstEnd = text.indexOf("\n");
  const baseIndent = indentation(cursorLine + (firstEnd < 0 ? text : text.slice(0, firstEnd)));

  let depth = 0;
  let lineStart = 0;
  let lastContentEnd = 0;
  let blankSinceContent = false;
  for (let lineIndex = 0; lineStart <= text.length; lineIndex++) {
    const newline = text.indexOf("\n", lineStart);
    const lineEnd = newline < 0 ? text.length : newline;
    const line = text.slice(lineStart, lineEnd);
    const blank = line.trim() === "";

    if (lineIndex > 0 && !blank) {
      const indent = indentation(line);
      if (indent < baseIndent) return text.slice(0, lastContentEnd);
      if (blankSinceContent && indent <= baseIndent && depth <= 0) return text.slice(0, lastContentEnd);
    }
    for (const char of line) {
      if (OPENERS.includes(char)) depth++;
      else if (CLOSERS.includes(char) && --depth < 0) return text.slice(0, lineEnd);
    }
    if (blank) blankSinceContent = lineIndex > 0 || blankSinceContent;
    else {
      blankSinceContent = false;
      lastContentEnd = lineEnd;
    }
    if (newline < 0) break;
    lineStart = newline + 1;
  }
  return text;
}

/**
 * Never propose what is already right after the cursor. Cuts the continuation where it starts repeating that
 * text: where it contains the rest of the cursor line (or, when that rest begins with a closing bracket, at the
 * first closing bracket the continuation itself did not open), or where one of its lines equals the first
 * non-blank line after the cursor. Returns "" when the whole continuation is already there.
 */
export function stopBeforeExistingText(text: string, after: string): string {
  if (text === "" || after === "") return text;
  if (after.startsWith(text)) return "";

  const lineBreak = after.indexOf("\n");
  const restOfLine = (lineBreak < 0 ? after : after.slice(0, lineBreak)).trim();
  if (restOfLine !== "") {
    // "|apples and pears" + "apples and bananas": a variant of what is there, inserted in front of it.
    if (commonPrefixLength(text, after) >= Math.min(NEAR_REPEAT_CHARS, restOfLine.length)) return "";
    const cut = CLOSERS.includes(restOfLine[0] ?? "") ? firstUnopenedCloser(text) : text.indexOf(restOfLine);
    return cut < 0 ? text : text.slice(0, cut);
  }

  const nextLine = firstNonBlankLine(after);
  if (nextLine === "") return text;
  let lineStart = text.indexOf("\n") + 1;
  while (lineStart > 0) {
    const newline = text.indexOf("\n", lineStart);
    const line = text.slice(lineStart, newline < 0 ? text.length : newline);
    // The text after the cursor supplies its own line break, so the one before the repeated line goes too.
    if (line.trim() === nextLine) return text.slice(0, lineStart).trimEnd();
    lineStart = newline + 1;
  }
  return text;
}

function commonPrefixLength(a: string, b: string): number {
  const limit = Math.min(a.length, b.length);
  let length = 0;
  while (length < limit && a.charCodeAt(length) === b.charCodeAt(length)) length++;
  return length;
}

function firstNonBlankLine(text: string): string {
  for (let start = 0; start < text.length;) {
    const newline = text.indexOf("\n", start);
    const line = text.slice(start, newline < 0 ? text.length : newline).trim();
    if (line !== "" || newline < 0) return line;
    start = newline + 1;
  }
  return "";
}

function firstUnopenedCloser(text: string): number {
  let depth = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text[index] ?? "";
    if (OPENERS.includes(char)) depth++;
    else if (CLOSERS.includes(char) && --depth < 0) return index;
  }
  return -1;
}

/** Keeps the continuation within about `maxTokens` tokens (four characters each), cut at a word end if one is near. */
export function limitLength(text: string, maxTokens: number): string {
  const maxChars = Math.max(0, Math.floor(maxTokens * 4));
  if (text.length <= maxChars) return text;
  let end = maxChars;
  const space = text.slice(0, end).search(/\s\S*$/);
  if (space > maxChars / 2) end = space;
  if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
  return text.slice(0, end);
}
