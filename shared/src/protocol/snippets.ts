/**
 * Code from other files travels in `tab_context.surrounding_context` as snippets, each introduced by one header
 * line that names its file: `--- file: <path> ---`. The extension writes them; the relay reads them back and
 * renders each model's own repository-level format (Qwen's `<|file_sep|>`, llama.cpp's `input_extra`, ...).
 * Text before the first header (or a context with no header at all, from another client) is one snippet with no
 * path.
 */
export interface ContextSnippet {
  /** The file's path, relative to the workspace where possible; absent for free-form context. */
  readonly path?: string | undefined;
  readonly text: string;
}

const HEADER = /^--- file: (.+) ---$/;

/** The header line of a snippet from `path` (a path never holds a line break, so one is made a space). */
export function snippetHeader(path: string): string {
  return `--- file: ${path.replace(/[\r\n]+/g, " ")} ---`;
}

/**
 * Characters `formatSnippets` spends on one snippet: its header, the line break after it, its text and the line
 * break that ends it. Budgets are counted with this, so a client never sends more than it planned.
 */
export function snippetCost(snippet: ContextSnippet): number {
  return (snippet.path === undefined ? 0 : snippetHeader(snippet.path).length + 1) + snippet.text.length + 1;
}

/**
 * Joins snippets into one `surrounding_context`. A line of a snippet's text that reads like a header gets a
 * leading space, so it cannot split the snippet when the relay parses it back.
 */
export function formatSnippets(snippets: readonly ContextSnippet[]): string {
  let out = "";
  for (const snippet of snippets) {
    if (snippet.path !== undefined) out += `${snippetHeader(snippet.path)}\n`;
    out += `${escapeHeaders(snippet.text)}\n`;
  }
  return out;
}

/** The snippets of a `surrounding_context`, in order; empty snippets are left out. */
export function parseSnippets(context: string): ContextSnippet[] {
  const snippets: ContextSnippet[] = [];
  let path: string | undefined;
  let lines: string[] = [];
  const flush = () => {
    const text = lines.join("\n").replace(/\n$/, "");
    if (text.trim() !== "") snippets.push(path === undefined ? { text } : { path, text });
  };
  for (const line of context.split("\n")) {
    const header = HEADER.exec(line.endsWith("\r") ? line.slice(0, -1) : line);
    if (header) {
      flush();
      path = header[1];
      lines = [];
    } else {
      lines.push(line);
    }
  }
  flush();
  return snippets;
}

function escapeHeaders(text: string): string {
  return text.includes("--- file: ") ? text.replace(/^(--- file: .+ ---)(\r?)$/gm, " $1$2") : text;
}
