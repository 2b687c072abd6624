import {
  API_PREFIX,
  NEXT_EDIT_LIMITS,
  NextEditRequest,
  NextEditResponse,
  TAB_NEXT_EDITS_PATH,
  type NextEdit,
  type RecentEdit,
} from "@tab-relay/shared";
import { type RequestFailed, type RequestUnanswered, errorOfBody, stopOnCancelOrTimeout } from "./request";
import type { Clock, FetchLike } from "./types";

export const NEXT_EDITS_PATH = API_PREFIX + TAB_NEXT_EDITS_PATH;

/**
 * Lines of the editable region above and below the cursor's line: a few, as peers do (Copilot NES 2 above and 5
 * below, microsoft/vscode-copilot-chat src/extension/xtab/; Zeta about 350 tokens), so a model rewrites little
 * and a wrong guess stays small.
 */
export const REGION_LINES_ABOVE = 3;
export const REGION_LINES_BELOW = 8;
/** Lines of the excerpt above and below the cursor: the region plus context, inside NEXT_EDIT_LIMITS. */
export const EXCERPT_LINES_AROUND = 120;
/** An answer is a few edits of a few lines; a longer body is a misbehaving relay or proxy, not read further. */
const MAX_ANSWER_CHARS = 256 * 1024;

/** One document as the next-edit request sees it: whole lines, the cursor, and the version they were read at. */
export interface NextEditDocument {
  readonly path: string;
  readonly languageId: string;
  readonly version: number;
  /** The lines of the document (or of a part that starts at `firstLine`). */
  readonly lines: readonly string[];
  readonly firstLine?: number;
  readonly cursor: { readonly line: number; readonly character: number };
}

/**
 * The request body: an excerpt of whole lines around the cursor (within NEXT_EDIT_LIMITS' lines and characters,
 * lines further from the cursor dropped first), the editable region inside it, the recent edits and the ranked
 * snippets. Undefined when the cursor's own line is too long to send.
 */
export function buildNextEditRequest(
  doc: NextEditDocument,
  extra: { workspaceSlug: string; model: string; recentEdits: readonly RecentEdit[]; surroundingContext?: string },
): NextEditRequest | undefined {
  const first = doc.firstLine ?? 0;
  const at = doc.cursor.line - first;
  const cursorText = doc.lines[at];
  if (cursorText === undefined || cursorText.length > NEXT_EDIT_LIMITS.lineChars) return undefined;
  if (doc.cursor.character > cursorText.length) return undefined;
  let from = at;
  let to = at + 1;
  let chars = cursorText.length;
  const maxLines = Math.min(NEXT_EDIT_LIMITS.excerptLines, 2 * EXCERPT_LINES_AROUND + 1);
  // Grow one line at a time on each side while it fits, so the excerpt stays centred on the cursor.
  for (let grew = true; grew && to - from < maxLines;) {
    grew = false;
    for (const side of [-1, 1] as const) {
      const index = side < 0 ? from - 1 : to;
      const line = doc.lines[index];
      if (line === undefined || to - from >= maxLines || Math.abs(index - at) > EXCERPT_LINES_AROUND) continue;
      if (chars + line.length + 1 > NEXT_EDIT_LIMITS.excerptChars) continue;
      chars += line.length + 1;
      if (side < 0) from--;
      else to++;
      grew = true;
    }
  }
  const regionStart = Math.max(from, at - REGION_LINES_ABOVE);
  const regionEnd = Math.min(to, at + REGION_LINES_BELOW + 1);
  const body: NextEditRequest = {
    model: extra.model,
    workspace_slug: extra.workspaceSlug,
    file_path: doc.path.slice(0, NEXT_EDIT_LIMITS.filePathChars),
    code_language: doc.languageId.slice(0, 128),
    document_version: doc.version,
    excerpt: { start_line: first + from, text: doc.lines.slice(from, to).join("\n") },
    editable_region: { start_line: first + regionStart, end_line: first + regionEnd },
    cursor: { line: doc.cursor.line, character: doc.cursor.character },
    recent_edits: extra.recentEdits.slice(-NEXT_EDIT_LIMITS.recentEdits),
  };
  if (extra.surroundingContext) {
    body.surrounding_context = extra.surroundingContext.slice(0, NEXT_EDIT_LIMITS.surroundingContext);
  }
  // The shared schema is the relay's own check: what would be refused is not sent.
  return NextEditRequest.safeParse(body).success ? body : undefined;
}

export type NextEditOutcome =
  | { readonly kind: "ok"; readonly answer: NextEditResponse; readonly durationMs: number }
  | RequestUnanswered
  | RequestFailed;

/**
 * POSTs one next-edit request. Never throws. The answer is checked against the shared schema, and each edit must
 * lie inside the excerpt that was sent and not overlap the one before it; an answer that breaks this is a failure,
 * never something drawn in the editor.
 */
export async function requestNextEdit(
  deps: { fetch: FetchLike; clock: Clock },
  request: { relayUrl: string; apiKey: string; body: NextEditRequest; timeoutMs: number; signal: AbortSignal },
): Promise<NextEditOutcome> {
  const { clock } = deps;
  const started = clock.now();
  const elapsed = () => clock.now() - started;
  if (request.signal.aborted) return { kind: "aborted", durationMs: 0 };
  const stop = stopOnCancelOrTimeout(clock, request.signal, request.timeoutMs);
  let status: number | undefined;
  try {
    const response = await deps.fetch(`${request.relayUrl}${NEXT_EDITS_PATH}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${request.apiKey}` },
      body: JSON.stringify(request.body),
      signal: stop.signal,
    });
    status = response.status;
    const text = await readCapped(response, MAX_ANSWER_CHARS);
    if (!response.ok) return { kind: "failed", status, ...errorOfBody(status, text ?? ""), durationMs: elapsed() };
    if (text === undefined) return invalid(status, `answer over ${MAX_ANSWER_CHARS} characters`, elapsed());
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return invalid(status, "answer is not JSON", elapsed());
    }
    const parsed = NextEditResponse.safeParse(json);
    if (!parsed.success) return invalid(status, `answer: ${parsed.error.issues[0]?.message ?? "invalid"}`, elapsed());
    const problem = editsProblem(parsed.data.edits, request.body);
    if (problem !== undefined) return invalid(status, problem, elapsed());
    if (parsed.data.document_version !== request.body.document_version)
      return invalid(status, "answer is for another document version", elapsed());
    return { kind: "ok", answer: parsed.data, durationMs: elapsed() };
  } catch (error) {
    if (stop.stopped !== undefined)
      return { kind: stop.stopped === "cancelled" ? "aborted" : "timeout", durationMs: elapsed() };
    return {
      kind: "unreachable",
      message: error instanceof Error ? error.message : String(error),
      durationMs: elapsed(),
    };
  } finally {
    stop.release();
  }
}

/** Why these edits cannot be applied to the excerpt sent, or undefined when they can. */
export function editsProblem(edits: readonly NextEdit[], body: NextEditRequest): string | undefined {
  const lines = body.excerpt.text.split("\n");
  const first = body.excerpt.start_line;
  const inside = (p: { line: number; character: number }) =>
    p.line >= first && p.line < first + lines.length && p.character <= (lines[p.line - first] ?? "").length;
  const before = (a: { line: number; character: number }, b: { line: number; character: number }) =>
    a.line < b.line || (a.line === b.line && a.character <= b.character);
  let previousEnd: { line: number; character: number } | undefined;
  for (const [i, edit] of edits.entries()) {
    const { start, end } = edit.range;
    if (!inside(start) || !inside(end)) return `edits[${i}].range is outside the excerpt`;
    if (!before(start, end)) return `edits[${i}].range ends before it starts`;
    if (previousEnd !== undefined && !before(previousEnd, start)) return `edits[${i}] overlaps the edit before it`;
    previousEnd = end;
  }
  return undefined;
}

function invalid(status: number, message: string, durationMs: number): NextEditOutcome {
  return { kind: "failed", status, code: "INVALID_ANSWER", message, durationMs };
}

/** The body as text, or undefined when it is longer than `max` characters (the rest is not read). */
async function readCapped(response: Response, max: number): Promise<string | undefined> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    text += decoder.decode(value, { stream: true });
    if (text.length > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
  }
}
