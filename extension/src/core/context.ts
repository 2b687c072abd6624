import { TAB_LIMITS, type TabContext } from "@tab-relay/shared";
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

export function isSingleLineContext(input: CompletionInput, cursor: CursorText): boolean {
  return input.selected !== undefined || lineSuffix(cursor.after).trim() !== "";
}

/** The SCM commit box is a message whatever its language; otherwise the settings' map, then the defaults, then code. */
export function surfaceFor(input: Pick<CompletionInput, "scheme" | "languageId">, settings: Settings): string {
  const mapped = settings.surfaces[input.languageId] ?? DEFAULT_SURFACES[input.languageId];
  if (mapped !== undefined) return mapped;
  return input.scheme === "vscode-scm" ? "messages" : "code";
}

export function buildTabContext(input: CompletionInput, settings: Settings): TabContext {
  const cursor = cursorText(input);
  const beforeChars = Math.min(settings.contextCharsBefore, TAB_LIMITS.activeTextBeforeCursor);
  const afterChars = Math.min(settings.contextCharsAfter, TAB_LIMITS.activeTextAfterCursor);
  const before = tail(cursor.before, beforeChars);
  const after = head(cursor.after, afterChars);
  const surface = surfaceFor(input, settings);
  const surrounding = surroundingContext(
    input,
    cursor.before.slice(0, cursor.before.length - before.length),
    cursor.after.slice(after.length),
    Math.min(settings.surroundingContextChars, TAB_LIMITS.surroundingContext),
  );
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

interface Source {
  readonly label: string;
  readonly text: string;
}

/**
 * Fills up to `budget` characters from the parts of this document outside the cursor windows (its start, and what
 * follows the suffix window) and from the other visible editors. Each source gets an equal share; a source that
 * needs less leaves its share to the others.
 */
export function surroundingContext(input: CompletionInput, farBefore: string, farAfter: string, budget: number): string {
  if (budget <= 0) return "";
  const self = input.relativePath ?? input.title;
  const sources: Source[] = [
    { label: `${self} (start)`, text: farBefore },
    { label: `${self} (further down)`, text: farAfter },
    ...(input.otherEditors?.() ?? []).map((editor): Source => ({ label: editor.path, text: editor.text })),
  ].filter((source) => source.text.trim() !== "");
  const headers = sources.map((source) => `--- ${source.label} ---\n`);
  const wanted = sources.map((source, i) => source.text.length + (headers[i] ?? "").length + 1);
  const shares = allocate(budget, wanted);
  const parts: string[] = [];
  sources.forEach((source, i) => {
    const header = headers[i] ?? "";
    const room = (shares[i] ?? 0) - header.length - 1;
    if (room < 16) return;
    parts.push(`${header}${head(source.text, room)}\n`);
  });
  return parts.join("");
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
