import type { TabContext } from "@tab-relay/shared";

export interface ChatMessage {
  role: "system" | "user";
  content: string;
}

export interface CompletionsPrompt {
  prompt: string;
  suffix: string;
  stop?: string[];
}

/** Marks the hole in the chat prompt; Continue's hole-filler uses the same double-brace style. */
export const CURSOR_MARKER = "{{CURSOR}}";

/**
 * A FIM base model treats the prompt as the file itself, so the header must read like part of it; it is
 * capped so surrounding context can't crowd out the text around the cursor.
 */
export const HEADER_CONTEXT_MAX_CHARS = 2_000;

const KNOWN_SURFACES = ["code", "notes", "docs", "messages", "tasks", "calendar"] as const;
type KnownSurface = (typeof KNOWN_SURFACES)[number];

function knownSurface(surface: string): KnownSurface | undefined {
  const name = surface.trim().toLowerCase();
  return (KNOWN_SURFACES as readonly string[]).includes(name) ? (name as KnownSurface) : undefined;
}

/** The prompt/suffix pair for `/v1/completions`, which llama.cpp, vLLM and Ollama turn into the model's FIM template. */
export function buildCompletionsPrompt(context: TabContext): CompletionsPrompt {
  const header = headerLines(context);
  const prefix = header.length === 0 ? "" : `${asComment(header, context)}\n`;
  const suffix = context.active_text_after_cursor ?? "";
  const out: CompletionsPrompt = { prompt: prefix + context.active_text_before_cursor, suffix };
  // Mid-line, only the rest of the line is wanted; stopping at the newline saves generation time.
  if (isMidLine(suffix)) out.stop = ["\n"];
  return out;
}

/** System and user messages asking a chat model to fill the hole at the cursor, with instructions for the surface. */
export function buildChatMessages(context: TabContext): ChatMessage[] {
  const system = [
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
    surfaceInstructions(context),
    ...detailLines(context),
  ];
  return [
    { role: "system", content: system.join("\n").trimEnd() },
    { role: "user", content: userMessage(context) },
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
    if (context.document_title && knownSurface(context.surface) !== "docs" && knownSurface(context.surface) !== "notes") {
      lines.push(`The document is titled "${context.document_title}".`);
    }
  }
  if (context.block_kind) lines.push(`The cursor is in a "${context.block_kind}" block; write what belongs in such a block.`);
  if (isMidLine(context.active_text_after_cursor ?? "")) {
    lines.push("The cursor is in the middle of a line: complete only up to the text that follows it on that line.");
  }
  return lines.length === 0 ? [] : ["", ...lines];
}

function userMessage(context: TabContext): string {
  const parts: string[] = [];
  if (context.surrounding_context) {
    parts.push(`<context>\n${context.surrounding_context}\n</context>`);
  }
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

function headerLines(context: TabContext): string[] {
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
  if (context.surrounding_context) {
    lines.push("Context:", ...clipStart(context.surrounding_context, HEADER_CONTEXT_MAX_CHARS).split(/\r?\n/));
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
  if (knownSurface(context.surface) === "code") {
    const style = commentStyle(context.code_language, context.file_path);
    if ("line" in style) return lines.map((line) => `${style.line} ${line}`.trimEnd()).join("\n");
    return block(lines, style.open, style.close);
  }
  if (context.document_type === "markdown") return block(lines, "<!--", "-->");
  return `${lines.join("\n")}\n`;
}

/** A closing token inside the context would end the comment early and leak the rest into the file. */
function block(lines: string[], open: string, close: string): string {
  const defused = `${close.slice(0, -1)} ${close.slice(-1)}`;
  return `${open}\n${lines.map((line) => line.split(close).join(defused)).join("\n")}\n${close}`;
}

type CommentStyle = { line: string } | { open: string; close: string };

const LINE_COMMENTS: Record<string, string> = {
  "#": "python py ruby rb shell sh bash zsh fish perl pl r yaml yml toml dockerfile makefile powershell ps1 elixir ex exs nim julia jl coffee cmake graphql tcl",
  "--": "sql lua haskell hs elm ada vhdl",
  ";": "lisp clojure clj scheme scm asm nasm ini",
  "%": "erlang erl latex tex matlab",
  "'": "vb vba vbnet",
};
const BLOCK_COMMENTS: Record<string, [string, string]> = {
  html: ["<!--", "-->"],
  xml: ["<!--", "-->"],
  svg: ["<!--", "-->"],
  vue: ["<!--", "-->"],
  markdown: ["<!--", "-->"],
  md: ["<!--", "-->"],
  css: ["/*", "*/"],
  scss: ["/*", "*/"],
  less: ["/*", "*/"],
  ocaml: ["(*", "*)"],
  ml: ["(*", "*)"],
};

function commentStyle(language: string | undefined, filePath: string | undefined): CommentStyle {
  const names = [language?.toLowerCase(), filePath?.split(/[\\/]/).pop()?.split(".").pop()?.toLowerCase(), filePath?.split(/[\\/]/).pop()?.toLowerCase()];
  for (const name of names) {
    if (!name) continue;
    const block = BLOCK_COMMENTS[name];
    if (block) return { open: block[0], close: block[1] };
    for (const [token, languages] of Object.entries(LINE_COMMENTS)) {
      if (languages.split(" ").includes(name)) return { line: token };
    }
  }
  // C, Java, JavaScript, TypeScript, Go, Rust, Swift, Kotlin, C#, PHP and most others.
  return { line: "//" };
}

function isMidLine(textAfterCursor: string): boolean {
  const restOfLine = textAfterCursor.split(/\r?\n/, 1)[0] ?? "";
  return restOfLine.trim() !== "";
}

function titled(title: string | undefined): string {
  return title ? ` titled "${title}"` : "";
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/** Keeps the end, cut at a line start: context is usually oldest first, so the latest part matters most. */
function clipStart(text: string, max: number): string {
  if (text.length <= max) return text;
  const tail = text.slice(text.length - max);
  const newline = tail.indexOf("\n");
  return newline === -1 || newline === tail.length - 1 ? tail : tail.slice(newline + 1);
}
