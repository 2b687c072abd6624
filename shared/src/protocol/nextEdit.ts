import { z } from "zod";
import { TAB_LIMITS } from "./limits";

/** Where next edits are asked for, inside the API (`/api/v1`). */
export const TAB_NEXT_EDITS_PATH = "/tab/next-edits";

/**
 * The next-edit request's bounds (docs/api.md#next-edits), shared by the relay (enforcing) and the extension
 * (sizing what it sends). The excerpt is the part of the document the relay may propose edits in; the editable
 * region is the part a model may rewrite (peers use a few lines around the cursor: Copilot NES 2 above and 5 below,
 * Zeta about 350 tokens).
 */
export const NEXT_EDIT_LIMITS = {
  excerptChars: 32_768,
  excerptLines: 2_000,
  regionLines: 60,
  recentEdits: 16,
  editLines: 40,
  lineChars: 2_000,
  filePathChars: 4_096,
  surroundingContext: TAB_LIMITS.surroundingContext,
  answerEdits: 32,
} as const;

/** A place in a document: a 0-based line, and a 0-based character offset in UTF-16 code units (as VS Code and LSP). */
export const NextEditPosition = z.object({
  line: z.number().int().min(0).max(10_000_000),
  character: z.number().int().min(0).max(1_000_000),
});
export type NextEditPosition = z.infer<typeof NextEditPosition>;

export const NextEditRange = z.object({ start: NextEditPosition, end: NextEditPosition });
export type NextEditRange = z.infer<typeof NextEditRange>;

const line = z.string().max(NEXT_EDIT_LIMITS.lineChars);
const lines = z.array(line).max(NEXT_EDIT_LIMITS.editLines);

/**
 * One edit the person made recently, as whole lines: `old_lines` at `start_line` were replaced by `new_lines` (either
 * may be empty, for a pure insertion or deletion). `start_line` is the 0-based line of the first new line in the
 * file as it stood right after this edit. Sent oldest first.
 */
export const RecentEdit = z
  .object({
    file_path: z.string().min(1).max(NEXT_EDIT_LIMITS.filePathChars),
    start_line: z.number().int().min(0).max(10_000_000),
    old_lines: lines,
    new_lines: lines,
    /** How long ago the edit was made, when the client knows; lets a format group or drop stale edits. */
    age_ms: z.number().int().min(0).max(86_400_000).optional(),
  })
  .strict();
export type RecentEdit = z.infer<typeof RecentEdit>;

/**
 * Body of POST /api/v1/tab/next-edits, sent by a client after a pause that follows an edit. The document is sent as
 * an excerpt of whole lines around the cursor; edits in the answer are against exactly this text.
 */
export const NextEditRequest = z
  .object({
    model: z.string().min(1).max(128).optional(),
    workspace_slug: z.string().min(1).max(128),
    file_path: z.string().min(1).max(NEXT_EDIT_LIMITS.filePathChars),
    code_language: z.string().max(128).optional(),
    /** The client's version of the document the excerpt was taken from; echoed in the answer, never interpreted. */
    document_version: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    excerpt: z
      .object({
        /** The 0-based document line of the excerpt's first line. */
        start_line: z.number().int().min(0).max(10_000_000),
        /** Whole lines joined with `\n`, no final line break. */
        text: z.string().max(NEXT_EDIT_LIMITS.excerptChars),
      })
      .strict(),
    /** The lines a model may rewrite, as a half-open range of document lines [start_line, end_line). */
    editable_region: z
      .object({
        start_line: z.number().int().min(0).max(10_000_000),
        end_line: z.number().int().min(0).max(10_000_000),
      })
      .strict(),
    cursor: NextEditPosition,
    recent_edits: z.array(RecentEdit).max(NEXT_EDIT_LIMITS.recentEdits),
    /** Ranked snippets of other files, in the completion request's `--- file: <path> ---` form (snippets.ts). */
    surrounding_context: z.string().max(NEXT_EDIT_LIMITS.surroundingContext).optional(),
  })
  .strict()
  .superRefine((request, issues) => {
    const excerptLines = request.excerpt.text.split("\n");
    if (excerptLines.length > NEXT_EDIT_LIMITS.excerptLines) {
      issues.addIssue({
        code: "custom",
        path: ["excerpt", "text"],
        message: `excerpt.text holds ${excerptLines.length} lines; at most ${NEXT_EDIT_LIMITS.excerptLines}`,
      });
      return;
    }
    const first = request.excerpt.start_line;
    const end = first + excerptLines.length;
    const region = request.editable_region;
    if (region.start_line < first || region.end_line > end || region.end_line <= region.start_line) {
      issues.addIssue({
        code: "custom",
        path: ["editable_region"],
        message: `editable_region must be a non-empty line range inside the excerpt's lines [${first}, ${end})`,
      });
      return;
    }
    if (region.end_line - region.start_line > NEXT_EDIT_LIMITS.regionLines) {
      issues.addIssue({
        code: "custom",
        path: ["editable_region"],
        message: `editable_region spans ${region.end_line - region.start_line} lines; at most ${NEXT_EDIT_LIMITS.regionLines}`,
      });
    }
    const { line: cursorLine, character } = request.cursor;
    if (cursorLine < region.start_line || cursorLine >= region.end_line) {
      issues.addIssue({
        code: "custom",
        path: ["cursor", "line"],
        message: "cursor.line must be inside editable_region",
      });
      return;
    }
    const text = excerptLines[cursorLine - first] ?? "";
    if (character > text.length) {
      issues.addIssue({
        code: "custom",
        path: ["cursor", "character"],
        message: `cursor.character ${character} is past the end of its line (${text.length} characters)`,
      });
    }
  });
export type NextEditRequest = z.infer<typeof NextEditRequest>;

/** One proposed edit: replace `range` of the excerpt the client sent with `text`. */
export const NextEdit = z.object({ range: NextEditRange, text: z.string() });
export type NextEdit = z.infer<typeof NextEdit>;

/**
 * Why an answer holds no edit, so a client or an operator can tell "the model saw nothing to do" from "the relay
 * refused what the model wrote" (never shown to the person as text in the editor).
 */
export const NoNextEditReason = z.enum(["no_change", "ambiguous", "unparseable", "outside_region", "too_destructive"]);
export type NoNextEditReason = z.infer<typeof NoNextEditReason>;

/**
 * The answer of POST /api/v1/tab/next-edits. `edits` are sorted, do not overlap, and lie inside the excerpt, against
 * the document version the client sent; an empty list comes with `reason`.
 */
export const NextEditResponse = z.object({
  id: z.string(),
  object: z.literal("tab.next_edit"),
  created: z.number().int(),
  model: z.string(),
  document_version: z.number().int(),
  edits: z.array(NextEdit).max(NEXT_EDIT_LIMITS.answerEdits),
  reason: NoNextEditReason.optional(),
});
export type NextEditResponse = z.infer<typeof NextEditResponse>;
