/**
 * What the extension sent as `surrounding_context` before issue 12, for the repository replay's baseline: the
 * document's own far parts and the head of each other *visible* editor, shared equally in a budget of 500
 * characters (`TAB_DEFAULTS.surroundingContextChars`, the setting's default then), each under a `--- label ---`
 * line. `legacySurroundingContext` is the old core function as it was (`git show abc50c4:extension/src/core/
 * context.ts`), with the visible editors passed in rather than read through `CompletionInput.otherEditors`;
 * the adapter of that commit gave each visible editor's `visibleRanges` text (`git show abc50c4:extension/src/
 * vscode/inlineCompletionProvider.ts`, otherEditors).
 */
import { TAB_DEFAULTS } from "@tab-relay/shared";
import { allocate, head, tail } from "../../extension/src/core/context";
import type {
  RelatedContext,
  RelatedContextRequest,
  RelatedContextSource,
} from "../../extension/src/core/relatedContext";
import type { DocumentChange } from "./typingRun";

/** The old default budget of `surrounding_context`. */
export const LEGACY_BUDGET_CHARS = TAB_DEFAULTS.surroundingContextChars;

/** Lines an editor scrolled to its top shows on a 1080p screen at VS Code's default font size. */
export const VISIBLE_LINES = 50;

export interface VisibleEditor {
  readonly path: string;
  /** What the editor shows. */
  readonly text: string;
}

/** An editor opened at the top of `text`: its first VISIBLE_LINES lines. */
export function visibleHead(path: string, text: string, lines = VISIBLE_LINES): VisibleEditor {
  return { path, text: text.split("\n").slice(0, lines).join("\n") };
}

/** The old `surroundingContext` of abc50c4, verbatim but for where the visible editors come from. */
export function legacySurroundingContext(
  self: string,
  farBefore: string,
  farAfter: string,
  budget: number,
  otherEditors: readonly VisibleEditor[],
): string {
  if (budget <= 0) return "";
  const sources = [
    { label: `${self} (start)`, text: farBefore },
    { label: `${self} (further down)`, text: farAfter },
    ...otherEditors.map((editor) => ({ label: editor.path, text: editor.text })),
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

/**
 * The old extension as a context source for today's session: it follows the document through its changes and
 * answers each request with what the old core would have sent, so the request is otherwise built by today's
 * code. It says it holds the document, so today's core adds nothing of its own.
 */
export class LegacyContext implements RelatedContextSource {
  private text: string;
  private cursor: number;

  constructor(
    private readonly path: string,
    text: string,
    private readonly visible: readonly VisibleEditor[],
    private readonly window: { readonly before: number; readonly after: number },
  ) {
    this.text = text;
    this.cursor = text.length;
  }

  change(change: DocumentChange): void {
    this.text =
      change.text.slice(0, change.offset) + change.inserted + change.text.slice(change.offset + change.deleted);
    this.cursor = change.offset + change.inserted.length;
  }

  holds(): boolean {
    return true;
  }

  relatedContext(request: RelatedContextRequest): RelatedContext {
    const cursorBefore = this.text.slice(0, this.cursor);
    const cursorAfter = this.text.slice(this.cursor);
    const before = tail(cursorBefore, this.window.before);
    const after = head(cursorAfter, this.window.after);
    const farBefore = cursorBefore.slice(0, cursorBefore.length - before.length);
    const farAfter = cursorAfter.slice(after.length);
    return {
      text: legacySurroundingContext(this.path, farBefore, farAfter, request.budget, this.visible),
      snippets: [],
    };
  }
}
