import type { NextEdit } from "@tab-relay/shared";
import type { Position } from "./trackedFile";

/**
 * How one proposed edit is drawn. An insertion at or after the cursor on the cursor's line is ordinary ghost text
 * (as the issue asks, and as sweepai/vscode-nes falls back to without the proposed API); anything else is drawn with
 * decorations, as Continue and Amazon Q draw theirs in stable VS Code: the text it removes struck through, and the
 * line as it would read beside it.
 */
export type NextEditView =
  | { readonly kind: "ghost"; readonly at: Position; readonly text: string }
  | {
      readonly kind: "decoration";
      /** The text the edit replaces, struck through (empty for a pure insertion). */
      readonly removed: { readonly start: Position; readonly end: Position };
      /** The line the edit ends on, where the preview is drawn. */
      readonly line: number;
      /** The edited lines as they would read, shown beside `line` (at most PREVIEW_CHARS). */
      readonly preview: string;
    };

export const PREVIEW_CHARS = 160;

/** Whether an edit, against `lines` (the document), is an insertion at or after the cursor on its line. */
export function viewOfNextEdit(edit: NextEdit, cursor: Position, lineAt: (line: number) => string): NextEditView {
  const { start, end } = edit.range;
  const insertion = start.line === end.line && start.character === end.character;
  if (insertion && start.line === cursor.line && start.character >= cursor.character && !edit.text.includes("\n")) {
    const before = lineAt(start.line).slice(cursor.character, start.character);
    // Ghost text starts at the cursor: text between the cursor and the insertion point is kept as it is.
    if (!/\S/.test(before) || before === "") return { kind: "ghost", at: start, text: before + edit.text };
  }
  const after = `${lineAt(start.line).slice(0, start.character)}${edit.text}${lineAt(end.line).slice(end.character)}`;
  const preview = after
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .join(" ⏎ ");
  return {
    kind: "decoration",
    removed: { start, end },
    line: end.line,
    preview: preview.length > PREVIEW_CHARS ? `${preview.slice(0, PREVIEW_CHARS - 1)}…` : preview,
  };
}

/** The edit to show first: the first one at or after the cursor, else the last one before it. */
export function pickNextEdit(edits: readonly NextEdit[], cursor: Position): NextEdit | undefined {
  const after = edits.find(
    (edit) =>
      edit.range.start.line > cursor.line ||
      (edit.range.start.line === cursor.line && edit.range.start.character >= cursor.character),
  );
  return after ?? edits[edits.length - 1];
}

/** "Tab to jump" while the cursor is away from the edit, "Tab to apply" once it is on the edit's first line. */
export function nextEditHint(edit: NextEdit, cursor: Position): "Tab to jump" | "Tab to apply" {
  return cursor.line === edit.range.start.line ? "Tab to apply" : "Tab to jump";
}

/** An answer for a document version other than the one on screen is dropped, never drawn or applied. */
export function isStale(proposalVersion: number, documentVersion: number): boolean {
  return proposalVersion !== documentVersion;
}
