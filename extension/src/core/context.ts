import { TAB_LIMITS, formatSnippets, snippetCost, type ContextSnippet, type TabContext } from "@tab-relay/shared";
import { WINDOW_LINES } from "./windows";
import type { RelatedContextSource } from "./relatedContext";
import { DEFAULT_SURFACES, type Settings } from "./settings";
import type { CompletionInput } from "./types";

/** The document split at the cursor, as if the selected IntelliSense item had already been accepted. */
export interface CursorText {
  readonly before: string;
  readonly after: string;
}

export function cursorText(input: CompletionInput): CursorText {
  const { text, offset, selected } = input;
  if (selected === undefined) return { before: text.slice(0, offset), after: text.slice(offset) };
  return { before: text.slice(0, selected.start) + selected.text, after: text.slice(Math.max(offset, selected.end)) };
}

/** The rest of the cursor's line. Anything but whitespace there means only one line can be suggested. */
export function lineSuffix(after: string): string {
  const newline = after.search(/\r?\n/);
  return newline === -1 ? after : after.slice(0, newline);
}

export function linePrefix(before: string): string {
  return before.slice(before.lastIndexOf("\n") + 1);
}

/**
 * Closing brackets and quotes alone after the cursor, with only whitespace after them: what the editor's auto-closing
 * leaves behind (`{|}`, `("|")`). The line counts as ended there, as Cody's and Copilot's clients treat it, so a
 * block's body can still come as several lines (the closers move down after it).
 */
const ONLY_CLOSERS = /^[)\]}"'`]+$/;

/** Whether the rest of the cursor's line leaves room for more than one line: nothing, or only auto-closed closers. */
export function isEndOfLine(after: string): boolean {
  const rest = lineSuffix(after).trim();
  return rest === "" || ONLY_CLOSERS.test(rest);
}

export function isSingleLineContext(input: CompletionInput, cursor: CursorText): boolean {
  return input.selected !== undefined || !isEndOfLine(cursor.after);
}

/** The SCM commit box is a message whatever its language; otherwise the settings' map, then the defaults, then code. */
export function surfaceFor(input: Pick<CompletionInput, "scheme" | "languageId">, settings: Settings): string {
  const mapped = settings.surfaces[input.languageId] ?? DEFAULT_SURFACES[input.languageId];
  if (mapped !== undefined) return mapped;
  return input.scheme === "vscode-scm" ? "messages" : "code";
}

/**
 * The request's `tab_context`. With a source of related code (the files the user worked in), `surrounding_context`
 * is filled from it; without one, from the far parts of this document only.
 */
export function buildTabContext(
  input: CompletionInput,
  settings: Settings,
  related?: RelatedContextSource,
): TabContext {
  const cursor = cursorText(input);
  const beforeChars = Math.min(settings.contextCharsBefore, TAB_LIMITS.activeTextBeforeCursor);
  const afterChars = Math.min(settings.contextCharsAfter, TAB_LIMITS.activeTextAfterCursor);
  const before = tailFromLineStart(cursor.before, beforeChars);
  const after = head(cursor.after, afterChars);
  const surface = surfaceFor(input, settings);
  const budget = Math.min(settings.surroundingContextChars, TAB_LIMITS.surroundingContext);
  const farBefore = cursor.before.slice(0, cursor.before.length - before.length);
  const farAfter = cursor.after.slice(after.length);
  const surrounding =
    related === undefined
      ? surroundingContext(input, farBefore, farAfter, budget)
      : relatedSurroundingContext(input, { cursor, before, after, farBefore, farAfter }, budget, related);
  const context: TabContext = {
    surface,
    workspace_slug: settings.workspaceSlug,
    entity_id: (input.relativePath ?? input.uri).slice(0, 2048),
    document_type: input.languageId === "markdown" ? "markdown" : "plaintext",
    active_text_before_cursor: before,
  };
  if (after !== "") context.active_text_after_cursor = after;
  if (surrounding !== "") context.surrounding_context = surrounding;
  if (surface === "code") context.code_language = input.languageId.slice(0, 128);
  if (input.relativePath !== undefined) context.file_path = input.relativePath.slice(0, 4096);
  if (input.title !== "") context.document_title = input.title.slice(0, 1024);
  return context;
}

/** Lines before the cursor whose identifiers rank other code: as long as a window, as Copilot compares them. */
export const QUERY_LINES = WINDOW_LINES;

/**
 * Related code for `surrounding_context`. The held files (the active document among them, when it is held)
 * compete for the whole budget. A document that is not held (untitled, outside the workspace, hidden by
 * `files.exclude`) still lends its own far parts, up to a third of the budget, as it did before other files
 * were sent: they are the same document whose prefix is sent anyway.
 */
function relatedSurroundingContext(
  input: CompletionInput,
  parts: { cursor: CursorText; before: string; after: string; farBefore: string; farAfter: string },
  budget: number,
  source: RelatedContextSource,
): string {
  if (budget <= 0) return "";
  const own = source.holds(input.uri)
    ? ""
    : surroundingContext(input, parts.farBefore, parts.farAfter, Math.floor(budget / 3));
  const query = lastLines(parts.cursor.before, QUERY_LINES);
  const related = source.relatedContext({
    uri: input.uri,
    path: input.relativePath ?? input.title,
    cursorLine: input.cursorLine ?? countNewlines(input.text, 0, input.offset),
    linesBefore: Math.max(countNewlines(parts.before), countNewlines(query)),
    linesAfter: countNewlines(parts.after),
    query,
    budget: budget - own.length,
  });
  return related.text + own;
}

/**
 * Fills up to `budget` characters from the parts of this document outside the cursor windows: its start, and
 * what follows the suffix window, each a snippet of this document. Each gets an equal share; one that needs less
 * leaves its share to the other.
 */
export function surroundingContext(
  input: CompletionInput,
  farBefore: string,
  farAfter: string,
  budget: number,
): string {
  if (budget <= 0) return "";
  const path = input.relativePath ?? input.title;
  const texts = [farBefore, farAfter].filter((text) => text.trim() !== "");
  const cost = (text: string) => snippetCost({ path, text });
  const shares = allocate(budget, texts.map(cost));
  const snippets: ContextSnippet[] = [];
  texts.forEach((text, i) => {
    const room = (shares[i] ?? 0) - cost("");
    if (room < 16) return;
    snippets.push({ path, text: head(text, room) });
  });
  const formatted = formatSnippets(snippets);
  // A line that reads like a header costs one more character once escaped; such rare text is sent without it.
  return formatted.length <= budget ? formatted : "";
}

/** The last `count` lines of `text` (the line the cursor is on counts as one). */
export function lastLines(text: string, count: number): string {
  let at = text.length;
  for (let i = 0; i < count && at > 0; i++) at = text.lastIndexOf("\n", at - 1);
  return at < 0 ? text : text.slice(at + 1);
}

function countNewlines(text: string, from = 0, to = text.length): number {
  let count = 0;
  for (let at = text.indexOf("\n", from); at !== -1 && at < to; at = text.indexOf("\n", at + 1)) count++;
  return count;
}

/** Splits `budget` between requests so nobody gets more than asked and the rest is shared equally. */
export function allocate(budget: number, wanted: readonly number[]): number[] {
  const shares = wanted.map(() => 0);
  let left = budget;
  let open = wanted.map((_, i) => i);
  while (left > 0 && open.length > 0) {
    const each = Math.floor(left / open.length);
    if (each === 0) break;
    for (const i of open) {
      const give = Math.min(each, (wanted[i] ?? 0) - (shares[i] ?? 0));
      shares[i] = (shares[i] ?? 0) + give;
      left -= give;
    }
    open = open.filter((i) => (shares[i] ?? 0) < (wanted[i] ?? 0));
  }
  return shares;
}

/** The last `n` characters, never starting in the middle of a surrogate pair. */
export function tail(text: string, n: number): string {
  if (text.length <= n) return text;
  let start = text.length - n;
  if (isLowSurrogate(text.charCodeAt(start))) start++;
  return text.slice(start);
}

/**
 * The last `n` characters at most, from the start of a line when one begins in their first quarter. Cut by
 * characters alone, the text's start moved on with every keystroke, so a model server that keeps the last prompt's
 * evaluated tokens (llama.cpp's `cache_prompt`, the embedded engine's sequences) found no common prefix with the
 * next one and evaluated the whole prompt again; from a line's start it stays put until the cursor has moved a line.
 */
export function tailFromLineStart(text: string, n: number): string {
  const cut = tail(text, n);
  if (cut.length === text.length) return cut;
  const newline = cut.indexOf("\n");
  return newline !== -1 && newline < n / 4 ? cut.slice(newline + 1) : cut;
}

/** The first `n` characters, never ending in the middle of a surrogate pair. */
export function head(text: string, n: number): string {
  if (text.length <= n) return text;
  let end = n;
  if (end > 0 && isLowSurrogate(text.charCodeAt(end))) end--;
  return text.slice(0, end);
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
