import { type ContextSnippet, type TabContext, parseSnippets } from "@tab-relay/shared";

/**
 * The most context from other files that goes into one upstream prompt, in characters (about 2,000 tokens of
 * code). The extension already fills `surrounding_context` to its own budget; this bound keeps a client that
 * sends the protocol's maximum (32,768) from crowding the text around the cursor out of a small model's window.
 */
export const CONTEXT_MAX_CHARS = 8_192;

/** A file snippet cut to fit keeps at least this much, or is left out: a few lines say little. */
const MIN_PARTIAL_CHARS = 200;

/** Stands in for a path in the repository-level formats, which need one for every file. */
export const UNNAMED_SNIPPET = "context";
export const UNNAMED_FILE = "untitled";

/**
 * The snippets of `surrounding_context` that fit in `budget` characters (paths count too), in the order the
 * client sent them, which is its order of relevance: the first ones are kept whole and the first that does not
 * fit is cut at a line boundary. A file snippet keeps its start (its declarations); free-form context keeps its
 * end, since it reads oldest first.
 */
export function contextSnippets(context: TabContext, budget = CONTEXT_MAX_CHARS): ContextSnippet[] {
  if (!context.surrounding_context) return [];
  const kept: ContextSnippet[] = [];
  let left = budget;
  for (const snippet of parseSnippets(context.surrounding_context)) {
    const cost = (snippet.path?.length ?? 0) + snippet.text.length + 1;
    if (cost <= left) {
      kept.push(snippet);
      left -= cost;
      continue;
    }
    const room = left - (snippet.path?.length ?? 0) - 1;
    const text =
      room < MIN_PARTIAL_CHARS
        ? ""
        : snippet.path === undefined
          ? clipStart(snippet.text, room)
          : clipEnd(snippet.text, room);
    if (text.trim() !== "") kept.push(snippet.path === undefined ? { text } : { path: snippet.path, text });
    break;
  }
  return kept;
}

/** Keeps the end, cut at a line start. */
export function clipStart(text: string, max: number): string {
  if (text.length <= max) return text;
  const tail = text.slice(text.length - max);
  const newline = tail.indexOf("\n");
  return newline === -1 || newline === tail.length - 1 ? tail : tail.slice(newline + 1);
}

/** Keeps the start, cut after a line end. */
function clipEnd(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max);
  const newline = head.lastIndexOf("\n");
  return newline <= 0 ? head : head.slice(0, newline);
}

export type CommentStyle = { line: string } | { open: string; close: string };

const LINE_COMMENTS: Record<string, string> = {
  "#": "python py ruby rb shell sh bash zsh fish perl pl r yaml yml toml dockerfile makefile powershell ps1 elixir ex exs nim julia jl coffee cmake graphql tcl",
  "--": "sql lua haskell hs elm ada vhdl",
  ";": "lisp clojure clj scheme scm asm nasm ini",
  "%": "erlang erl latex tex matlab",
  "'": "vb vba vbnet",
  "//": "c h cpp cc hpp cs java js jsx mjs cjs ts tsx mts cts go rs swift kt kts scala php dart javascript typescript rust kotlin csharp",
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

/** The comment syntax for a language name, a file extension or a file name (`Makefile`); undefined if unknown. */
function styleOf(name: string | undefined): CommentStyle | undefined {
  if (!name) return undefined;
  const block = BLOCK_COMMENTS[name];
  if (block) return { open: block[0], close: block[1] };
  for (const [token, languages] of Object.entries(LINE_COMMENTS)) {
    if (languages.split(" ").includes(name)) return { line: token };
  }
  return undefined;
}

function namesOf(path: string | undefined): (string | undefined)[] {
  const file = path?.split(/[\\/]/).pop()?.toLowerCase();
  return [file?.includes(".") ? file.split(".").pop() : undefined, file];
}

/**
 * The comment syntax of a file: from its path, else from the language and path of the file being edited,
 * else `//` (C, Java, JavaScript, TypeScript, Go, Rust, Swift, Kotlin, C#, PHP and most others).
 */
export function commentStyle(
  language: string | undefined,
  filePath: string | undefined,
  otherPath?: string,
): CommentStyle {
  for (const name of [...namesOf(otherPath), language?.toLowerCase(), ...namesOf(filePath)]) {
    const style = styleOf(name);
    if (style) return style;
  }
  return { line: "//" };
}

/** One line as a comment; a closing token inside a block comment is defused so the comment cannot end early. */
export function commentLine(text: string, style: CommentStyle): string {
  if ("line" in style) return `${style.line} ${text}`.trimEnd();
  return `${style.open} ${defuse(text, style.close)} ${style.close}`;
}

/** Lines as one comment: line comments each, or one block that the text cannot close early. */
export function commentBlock(lines: readonly string[], style: CommentStyle): string {
  if ("line" in style) return lines.map((line) => `${style.line} ${line}`.trimEnd()).join("\n");
  return `${style.open}\n${lines.map((line) => defuse(line, style.close)).join("\n")}\n${style.close}`;
}

function defuse(text: string, close: string): string {
  return text.split(close).join(`${close.slice(0, -1)} ${close.slice(-1)}`);
}

/**
 * Context from other files as plain code under a path comment, the current file's path last: DeepSeek-Coder's
 * documented repository-level form, "#utils.py⏎<code>⏎⏎⏎# model.py⏎<code>⏎⏎⏎# main.py⏎<prefix>"
 * (deepseek-ai/DeepSeek-Coder README.md §4 @ 2f9fd85927c669dae3c0fbb2d607274023af243e). Free-form context (no
 * path) is not code, so it goes in as comment lines. Empty when there are no snippets.
 */
export function pathCommentContext(snippets: readonly ContextSnippet[], context: TabContext): string {
  if (snippets.length === 0) return "";
  const own = commentStyle(context.code_language, context.file_path);
  let out = "";
  for (const snippet of snippets) {
    if (snippet.path === undefined) {
      out += `${commentBlock(snippet.text.split(/\r?\n/), own)}\n\n\n`;
      continue;
    }
    const style = commentStyle(context.code_language, context.file_path, snippet.path);
    out += `${commentLine(snippet.path, style)}\n${snippet.text}\n\n\n`;
  }
  return `${out}${commentLine(context.file_path ?? UNNAMED_FILE, own)}\n`;
}
