import type { NextEditPosition, NextEditRequest } from "@tab-relay/shared";

/**
 * The document a next-edit request describes, as lines: the excerpt the client sent, the editable region inside
 * it and the cursor. Lines are document lines (0-based), characters UTF-16 code units, as in the request.
 */
export interface NextEditDocument {
  readonly filePath: string;
  readonly language: string | undefined;
  /** The excerpt's lines; `lines[0]` is document line `firstLine`. */
  readonly lines: readonly string[];
  readonly firstLine: number;
  /** The editable region, half-open document lines. */
  readonly regionStart: number;
  readonly regionEnd: number;
  readonly cursor: NextEditPosition;
}

/** The document of a request the schema has validated (region inside the excerpt, cursor inside the region). */
export function documentOf(request: NextEditRequest): NextEditDocument {
  return {
    filePath: request.file_path,
    language: request.code_language,
    lines: request.excerpt.text.split("\n"),
    firstLine: request.excerpt.start_line,
    regionStart: request.editable_region.start_line,
    regionEnd: request.editable_region.end_line,
    cursor: request.cursor,
  };
}

/** The text of document line `line`, or undefined outside the excerpt. */
export function lineAt(doc: NextEditDocument, line: number): string | undefined {
  return doc.lines[line - doc.firstLine];
}

export function regionLines(doc: NextEditDocument): string[] {
  return doc.lines.slice(doc.regionStart - doc.firstLine, doc.regionEnd - doc.firstLine);
}

/** The excerpt's lines before the region (up to `max`, nearest last) and after it (up to `max`, nearest first). */
export function contextLines(
  doc: NextEditDocument,
  max: number,
): { before: string[]; after: string[]; startsFile: boolean } {
  const regionAt = doc.regionStart - doc.firstLine;
  const endAt = doc.regionEnd - doc.firstLine;
  const from = Math.max(0, regionAt - max);
  return {
    before: doc.lines.slice(from, regionAt),
    after: doc.lines.slice(endAt, endAt + max),
    startsFile: doc.firstLine + from === 0,
  };
}

/**
 * The region's text with `cursor` written where the person's cursor is, and the region's lines wrapped as the
 * formats want them: `before` the cursor and `after` it, both inside the region.
 */
export function splitAtCursor(doc: NextEditDocument): { before: string; after: string } {
  const lines = regionLines(doc);
  const at = doc.cursor.line - doc.regionStart;
  const line = lines[at] ?? "";
  const before = [...lines.slice(0, at), line.slice(0, doc.cursor.character)].join("\n");
  const after = [line.slice(doc.cursor.character), ...lines.slice(at + 1)].join("\n");
  return { before, after };
}

/** The same document with each line passed through `map` (control tokens neutralised, for a prompt). */
export function mapLines(doc: NextEditDocument, map: (line: string) => string): NextEditDocument {
  return { ...doc, lines: doc.lines.map(map) };
}
