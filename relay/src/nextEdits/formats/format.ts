import type { RecentEdit } from "@tab-relay/shared";
import type { NextEditDocument } from "../document";

/** The formats the relay speaks to a team's model for next edits (TAB_RELAY_NEXT_EDIT_FORMAT). */
export const NEXT_EDIT_FORMATS = ["zeta", "zeta2", "instinct", "chat"] as const;
export type NextEditFormatName = (typeof NEXT_EDIT_FORMATS)[number];

/** What a format builds its prompt from; every piece of the person's text has had its control tokens neutralised. */
export interface FormatInput {
  doc: NextEditDocument;
  /** Oldest first, as the request sends them. */
  recentEdits: readonly RecentEdit[];
  /** Ranked snippets of other files, in the `--- file: <path> ---` form. */
  context: string | undefined;
  model: string;
  maxTokens: number;
}

/** What a model's reply says: the editable region rewritten, nothing to change, or something the relay cannot read. */
export type ParsedReply =
  { kind: "rewrite"; text: string } | { kind: "no_change" } | { kind: "unparseable"; why: string };

export interface NextEditFormat {
  readonly name: NextEditFormatName;
  /** The request to send: a URL built from the upstream's base URL, and the JSON body. */
  request(input: FormatInput, baseUrl: string): { url: string; body: Record<string, unknown> };
  /** The model's text in the server's (not streamed) JSON answer. */
  text(json: unknown): string | undefined;
  parse(reply: string): ParsedReply;
  /**
   * What else of the person's text the format's model would read as its prompt's structure, broken the way control
   * tokens are; applied after the control tokens every format breaks.
   */
  neutralise?(text: string): string;
}

/**
 * A recent edit as a unified diff hunk, the form Zeta's "User edited" events (zed crates/zeta_prompt), Instinct's
 * "User Edits" (continuedev/continue core/nextEdit/templating/instinct.ts) and Copilot's edit history all carry.
 */
export function unifiedHunk(edit: RecentEdit): string {
  const line = edit.start_line + 1;
  const lines = [
    `@@ -${line},${edit.old_lines.length} +${line},${edit.new_lines.length} @@`,
    ...edit.old_lines.map((text) => `-${text}`),
    ...edit.new_lines.map((text) => `+${text}`),
  ];
  return lines.join("\n");
}

/** The newest edits whose rendered text fits in `budget` characters, oldest first. */
export function newestWithin<T>(items: readonly T[], render: (item: T) => string, budget: number): string[] {
  const out: string[] = [];
  let used = 0;
  for (let i = items.length - 1; i >= 0; i--) {
    const text = render(items[i] as T);
    if (used + text.length > budget) break;
    used += text.length;
    out.unshift(text);
  }
  return out;
}

/**
 * The snippets of `--- file: <path> ---` sections (formatSnippets in shared/src/protocol/snippets.ts writes them);
 * text before the first header belongs to no file and is left out.
 */
export function snippetsOf(context: string | undefined): { path: string; text: string }[] {
  if (!context) return [];
  // Split with a capture group alternates [before, path, text, path, text, …].
  const pieces = context.split(/^--- file: (.+) ---\r?\n?/m);
  const out: { path: string; text: string }[] = [];
  for (let i = 1; i + 1 < pieces.length; i += 2)
    out.push({ path: pieces[i] as string, text: (pieces[i + 1] as string).replace(/\n+$/, "") });
  return out;
}

/** Removes one code fence wrapping the whole text (```lang … ```), which chat models add unasked. */
export function unfence(text: string): string {
  const match = /^```[^\n`]*\n([\s\S]*?)\n?```\s*$/.exec(text);
  return match ? (match[1] as string) : text;
}

export function count(text: string, token: string): number {
  let n = 0;
  for (let at = text.indexOf(token); at >= 0; at = text.indexOf(token, at + token.length)) n++;
  return n;
}
