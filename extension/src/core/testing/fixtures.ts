import type { CompletionInput } from "../types";

export const CURSOR = "█";

/** A CompletionInput for `marked`, a document with `█` where the cursor is. */
export function inputAt(marked: string, overrides: Partial<CompletionInput> = {}): CompletionInput {
  const offset = marked.indexOf(CURSOR);
  if (offset === -1) throw new Error(`no ${CURSOR} in ${JSON.stringify(marked)}`);
  return {
    uri: "file:///work/project/src/app.ts",
    relativePath: "src/app.ts",
    scheme: "file",
    languageId: "typescript",
    title: "app.ts",
    text: marked.slice(0, offset) + marked.slice(offset + CURSOR.length),
    offset,
    ...overrides,
  };
}

/** The same document after typing `typed` at the cursor (backspaces as `\b`). */
export function typeAt(input: CompletionInput, typed: string): CompletionInput {
  let { text, offset } = input;
  for (const ch of typed) {
    if (ch === "\b") {
      text = text.slice(0, offset - 1) + text.slice(offset);
      offset--;
    } else {
      text = text.slice(0, offset) + ch + text.slice(offset);
      offset++;
    }
  }
  return { ...input, text, offset };
}
