import type { ContextSnippet, TabContext } from "@tab-relay/shared";
import { commentBlock, commentStyle, contextSnippets } from "./context";

export interface ChatMessage {
  role: "system" | "user";
  content: string;
}

export interface SuffixPrompt {
  prompt: string;
  suffix: string;
  stop?: string[];
}

/** Marks the hole in the chat prompt; Continue's hole-filler uses the same double-brace style. */
export const CURSOR_MARKER = "{{CURSOR}}";

const KNOWN_SURFACES = ["code", "notes", "docs", "messages", "tasks", "calendar"] as const;
type KnownSurface = (typeof KNOWN_SURFACES)[number];

function knownSurface(surface: string): KnownSurface | undefined {
  const name = surface.trim().toLowerCase();
  return (KNOWN_SURFACES as readonly string[]).includes(name) ? (name as KnownSurface) : undefined;
}

/** Mid-line, only the rest of the line is wanted; stopping at the newline saves generation time. */
export const MID_LINE_STOP: readonly string[] = ["\n"];

/**
 * The prompt/suffix pair for `/v1/completions` with `suffix` (Ollama, DeepSeek's FIM beta, OpenAI's instruct
 * model) and for Mistral's /v1/fim/completions: the server applies the model's template, so the relay cannot use
 * its tokens; context from other files goes into a header commented in the file's own syntax, which a FIM base
 * model reads as part of the file.
 */
export function buildSuffixPrompt(
  context: TabContext,
  snippets: readonly ContextSnippet[] = contextSnippets(context),
): SuffixPrompt {
  const header = headerLines(context, snippets);
  const prefix = header.length === 0 ? "" : `${asComment(header, context)}\n`;
  const suffix = context.active_text_after_cursor ?? "";
  const out: SuffixPrompt = { prompt: prefix + context.active_text_before_cursor, suffix };
  if (isMidLine(suffix)) out.stop = [...MID_LINE_STOP];
  return out;
}

/** The system message's opening, the same for every request, up to the surface's instructions. */
const SYSTEM_RULES = `${[
  "You are an inline completion engine inside an editor. The user's text contains the marker " +
    `${CURSOR_MARKER} where the cursor is. Predict the text the user is most likely to type next at the cursor.`,
  "",
  "Rules:",
  "- Reply with only the text to insert at the cursor. No code fences, no quotes, no explanations, no preamble.",
  `- Never repeat the text before or after ${CURSOR_MARKER}; your reply is inserted between them exactly as written.`,
  "- Keep whitespace, indentation and line breaks exactly as they must appear in the result.",
  "- Be brief: complete the current line, sentence or block, not the whole document.",
  "- If nothing sensible fits, reply with nothing.",
  "",
].join("\n")}\n`;

/** System and user messages asking a chat model to fill the hole at the cursor, with instructions for the surface. */
export function buildChatMessages(
  context: TabContext,
  snippets: readonly ContextSnippet[] = contextSnippets(context),
): ChatMessage[] {
  const details = detailLines(context);
  const system = `${SYSTEM_RULES}${surfaceInstructions(context)}${details.length === 0 ? "" : `\n${details.join("\n")}`}`;
  return [
    { role: "system", content: system.trimEnd() },
    { role: "user", content: userMessage(context, snippets) },
  ];
}

/** What to write on this surface; unknown surfaces (email, issue, ...) get a generic instruction naming them. */
export function surfaceInstructions(context: TabContext): string {
  const surface = knownSurface(context.surface);
  switch (surface) {
    case "code": {
      const language = context.code_language ? ` ${context.code_language}` : "";
      const file = context.file_path ? ` in the file ${context.file_path}` : "";
      return [
        `You are completing${language} source code${file}.`,
        "Write code that is valid at the cursor and follows the file's style, naming and indentation.",
        "Do not close brackets or blocks that the text after the cursor already closes, and do not add explanatory comments.",
      ].join(" ");
    }
    case "notes":
      return [
        `You are completing a personal note${titled(context.note_title ?? context.document_title)}.`,
        "Continue the writer's thought in their own voice and format: a list stays a list, shorthand stays shorthand.",
      ].join(" ");
    case "docs":
      return [
        `You are completing a document${titled(context.document_title ?? context.note_title)}.`,
        "Write clear prose that keeps the document's tone, terminology and formatting, and finish the current sentence or paragraph.",
      ].join(" ");
    case "messages":
      return [
        "You are completing a chat message that the user is writing to colleagues.",
        "Write as the user, in their tone, short and conversational. Finish the current sentence;",
        "do not answer the message, greet on their behalf unless they started to, or write anyone else's reply.",
      ].join(" ");
    case "tasks":
      return [
        `You are completing an item on a task board${context.taskboard_file_id ? ` (board ${context.taskboard_file_id})` : ""}.`,
        "Write short, actionable task text: an imperative title, a concise description or the next checklist item.",
      ].join(" ");
    case "calendar":
      return [
        "You are completing a calendar event's title, agenda or description.",
        "Keep it short and factual, and do not invent dates, times, places or attendees that the context does not give.",
      ].join(" ");
    case undefined:
      return [
        `You are completing text on the "${context.surface}" surface (for example an email or an issue).`,
        `Write what fits a ${context.surface} text, matching the tone and format of what is already written, and finish the current sentence.`,
      ].join(" ");
  }
}

function detailLines(context: TabContext): string[] {
  const lines: string[] = [];
  if (knownSurface(context.surface) !== "code") {
    lines.push(
      context.document_type === "markdown"
        ? "The text is Markdown; keep its Markdown syntax consistent."
        : "The text is plain text; do not add Markdown formatting.",
    );
    if (
      context.document_title &&
      knownSurface(context.surface) !== "docs" &&
      knownSurface(context.surface) !== "notes"
    ) {
      lines.push(`The document is titled "${context.document_title}".`);
    }
  }
  if (context.block_kind)
    lines.push(`The cursor is in a "${context.block_kind}" block; write what belongs in such a block.`);
  if (isMidLine(context.active_text_after_cursor ?? "")) {
    lines.push("The cursor is in the middle of a line: complete only up to the text that follows it on that line.");
  }
  return lines.length === 0 ? [] : ["", ...lines];
}

/**
 * Context from other files comes first, in a "Related code" section with each file's path; free-form context
 * (no path) in a <context> block. The text with the cursor marker comes last, nearest the instruction.
 */
function userMessage(context: TabContext, snippets: readonly ContextSnippet[]): string {
  const parts: string[] = [];
  const files = snippets.filter((snippet) => snippet.path !== undefined);
  const loose = snippets.filter((snippet) => snippet.path === undefined);
  if (files.length > 0) {
    parts.push(
      [
        "Related code from other files (for reference; do not repeat it):",
        ...files.map((snippet) => `<file path="${snippet.path ?? ""}">\n${snippet.text}\n</file>`),
      ].join("\n"),
    );
  }
  for (const snippet of loose) parts.push(`<context>\n${snippet.text}\n</context>`);
  const attributes = [
    context.file_path ? ` path="${context.file_path}"` : "",
    context.code_language ? ` language="${context.code_language}"` : "",
  ].join("");
  parts.push(
    `<text${attributes}>\n${context.active_text_before_cursor}${CURSOR_MARKER}${context.active_text_after_cursor ?? ""}\n</text>`,
  );
  parts.push(`Reply with only the text to insert at ${CURSOR_MARKER}.`);
  return parts.join("\n\n");
}

function headerLines(context: TabContext, snippets: readonly ContextSnippet[]): string[] {
  const surface = knownSurface(context.surface);
  const lines: string[] = [];
  if (surface === "code") {
    if (context.file_path) lines.push(`Path: ${context.file_path}`);
    else if (context.code_language) lines.push(`Language: ${context.code_language}`);
  } else {
    const title = context.document_title ?? context.note_title;
    const kind = surface === undefined ? capitalise(context.surface) : SURFACE_NOUNS[surface];
    lines.push(title ? `${kind}: ${title}` : kind);
  }
  for (const snippet of snippets) {
    lines.push(
      snippet.path === undefined ? "Context:" : `Related code from ${snippet.path}:`,
      ...snippet.text.split(/\r?\n/),
    );
  }
  return lines;
}

const SURFACE_NOUNS: Record<Exclude<KnownSurface, "code">, string> = {
  notes: "Note",
  docs: "Document",
  messages: "Chat message",
  tasks: "Task",
  calendar: "Calendar event",
};

/** Comments the header in the language's own syntax, so a code model reads it as part of the file. */
function asComment(lines: string[], context: TabContext): string {
  if (knownSurface(context.surface) === "code")
    return commentBlock(lines, commentStyle(context.code_language, context.file_path));
  if (context.document_type === "markdown") return commentBlock(lines, { open: "<!--", close: "-->" });
  return `${lines.join("\n")}\n`;
}

/** Whether text follows the cursor on its line. */
export function isMidLine(textAfterCursor: string): boolean {
  // Up to the first LF; a CR before it is whitespace to `trim` either way.
  const lineBreak = textAfterCursor.indexOf("\n");
  return (lineBreak < 0 ? textAfterCursor : textAfterCursor.slice(0, lineBreak)).trim() !== "";
}

function titled(title: string | undefined): string {
  return title ? ` titled "${title}"` : "";
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}
