import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type TabContext, formatSnippets } from "@tab-relay/shared";
import { CONTEXT_MAX_CHARS } from "./context";
import { buildChatMessages, buildSuffixPrompt, CURSOR_MARKER, surfaceInstructions } from "./prompts";

function context(overrides: Partial<TabContext> = {}): TabContext {
  return {
    surface: "code",
    workspace_slug: "acme",
    entity_id: "src/math.ts",
    document_type: "plaintext",
    active_text_before_cursor: "function add(a, b) {\n  return ",
    active_text_after_cursor: "\n}\n",
    ...overrides,
  };
}

function chat(overrides: Partial<TabContext> = {}): { system: string; user: string } {
  const messages = buildChatMessages(context(overrides));
  assert.deepEqual(
    messages.map((message) => message.role),
    ["system", "user"],
  );
  return { system: messages[0]?.content ?? "", user: messages[1]?.content ?? "" };
}

describe("buildSuffixPrompt", () => {
  test("the prompt ends with the text before the cursor and the suffix is the text after it", () => {
    const { prompt, suffix } = buildSuffixPrompt(context());
    assert.ok(prompt.endsWith("function add(a, b) {\n  return "));
    assert.equal(suffix, "\n}\n");
  });

  test("with no metadata and no context, code gets no header at all", () => {
    assert.equal(buildSuffixPrompt(context()).prompt, "function add(a, b) {\n  return ");
  });

  test("a missing text after the cursor becomes an empty suffix", () => {
    const { suffix } = buildSuffixPrompt(context({ active_text_after_cursor: undefined }));
    assert.equal(suffix, "");
  });

  test("code gets a path header in the language's line-comment syntax", () => {
    assert.ok(
      buildSuffixPrompt(context({ file_path: "src/math.ts", code_language: "typescript" })).prompt.startsWith(
        "// Path: src/math.ts\nfunction add",
      ),
    );
    assert.ok(buildSuffixPrompt(context({ file_path: "app/main.py" })).prompt.startsWith("# Path: app/main.py\n"));
    assert.ok(buildSuffixPrompt(context({ code_language: "sql" })).prompt.startsWith("-- Language: sql\n"));
  });

  test("languages without line comments get a block comment that the context cannot close early", () => {
    const { prompt } = buildSuffixPrompt(context({ code_language: "html", surrounding_context: "a --> b" }));
    assert.ok(prompt.startsWith("<!--\nLanguage: html\nContext:\na -- > b\n-->\n"), prompt);
  });

  test("surrounding context goes into the header, one commented line per context line", () => {
    const { prompt } = buildSuffixPrompt(
      context({ code_language: "typescript", surrounding_context: "import { sum } from './sum';\nconst x = 1;" }),
    );
    assert.ok(
      prompt.startsWith(
        "// Language: typescript\n// Context:\n// import { sum } from './sum';\n// const x = 1;\nfunction add",
      ),
      prompt,
    );
  });

  test("long free-form surrounding context is cut to its most recent lines", () => {
    const lines = Array.from({ length: 2_000 }, (_, i) => `line ${i}`);
    const { prompt } = buildSuffixPrompt(context({ surrounding_context: lines.join("\n") }));
    const header = prompt.slice(0, prompt.indexOf("function add"));
    const kept = header
      .split("\n")
      .filter((line) => line.startsWith("// line "))
      .map((line) => line.slice(3));
    assert.ok(kept.join("\n").length <= CONTEXT_MAX_CHARS, `kept ${kept.join("\n").length} chars`);
    assert.ok(kept.length > 100, "a useful amount is kept");
    assert.equal(kept.at(-1), "line 1999");
    assert.equal(kept[0], `line ${2_000 - kept.length}`, "the cut falls on a line boundary");
  });

  test("snippets from other files go into the commented header, each under its path", () => {
    const surrounding_context = formatSnippets([
      { path: "src/types.ts", text: "export interface Item {\n  price: number;\n}" },
      { path: "src/tax.ts", text: "export const RATE = 0.2;" },
    ]);
    const { prompt } = buildSuffixPrompt(context({ file_path: "src/math.ts", surrounding_context }));
    assert.equal(
      prompt,
      "// Path: src/math.ts\n// Related code from src/types.ts:\n// export interface Item {\n//   price: number;\n// }\n" +
        "// Related code from src/tax.ts:\n// export const RATE = 0.2;\nfunction add(a, b) {\n  return ",
    );
  });

  test("prose surfaces get a plain title header separated by a blank line", () => {
    const { prompt } = buildSuffixPrompt(
      context({ surface: "notes", note_title: "Groceries", active_text_before_cursor: "- eggs\n- " }),
    );
    assert.equal(prompt, "Note: Groceries\n\n- eggs\n- ");
  });

  test("markdown prose surfaces get an HTML comment header", () => {
    const { prompt } = buildSuffixPrompt(
      context({
        surface: "docs",
        document_type: "markdown",
        document_title: "Design",
        active_text_before_cursor: "# Goals\n",
      }),
    );
    assert.equal(prompt, "<!--\nDocument: Design\n-->\n# Goals\n");
  });

  test("custom surfaces are named in the header", () => {
    const { prompt } = buildSuffixPrompt(context({ surface: "email", active_text_before_cursor: "Hi Sam," }));
    assert.equal(prompt, "Email\n\nHi Sam,");
  });

  test("mid-line requests stop at the newline; end-of-line requests don't", () => {
    assert.deepEqual(buildSuffixPrompt(context({ active_text_after_cursor: "b);\nnext()" })).stop, ["\n"]);
    assert.equal(buildSuffixPrompt(context({ active_text_after_cursor: "   \nnext()" })).stop, undefined);
    assert.equal(buildSuffixPrompt(context()).stop, undefined);
  });
});

describe("buildChatMessages", () => {
  test("the user message holds the text with the cursor marker between before and after", () => {
    const { user } = chat();
    assert.ok(user.includes(`function add(a, b) {\n  return ${CURSOR_MARKER}\n}\n`));
    assert.equal(
      user.split(CURSOR_MARKER).length - 1,
      2,
      "the text and the closing instruction each name the marker once",
    );
  });

  test("the system message is the rules, the surface's instructions and the details, line by line", () => {
    const { system } = chat({
      surface: "notes",
      document_type: "markdown",
      active_text_before_cursor: "- milk\n- ",
      active_text_after_cursor: "eggs\n",
      note_title: "Shopping",
      block_kind: "list",
    });
    assert.equal(
      system,
      [
        `You are an inline completion engine inside an editor. The user's text contains the marker ${CURSOR_MARKER} where the cursor is. Predict the text the user is most likely to type next at the cursor.`,
        "",
        "Rules:",
        "- Reply with only the text to insert at the cursor. No code fences, no quotes, no explanations, no preamble.",
        `- Never repeat the text before or after ${CURSOR_MARKER}; your reply is inserted between them exactly as written.`,
        "- Keep whitespace, indentation and line breaks exactly as they must appear in the result.",
        "- Be brief: complete the current line, sentence or block, not the whole document.",
        "- If nothing sensible fits, reply with nothing.",
        "",
        `You are completing a personal note titled "Shopping". Continue the writer's thought in their own voice and format: a list stays a list, shorthand stays shorthand.`,
        "",
        "The text is Markdown; keep its Markdown syntax consistent.",
        `The cursor is in a "list" block; write what belongs in such a block.`,
        "The cursor is in the middle of a line: complete only up to the text that follows it on that line.",
      ].join("\n"),
    );
  });

  test("the system message asks for only the inserted text: no fences, no explanation", () => {
    const { system } = chat();
    assert.match(system, /only the text to insert at the cursor/i);
    assert.match(system, /no code fences/i);
    assert.match(system, /no explanations/i);
    assert.ok(system.includes(CURSOR_MARKER));
  });

  test("code instructions name the language and the file, and the text tag carries them", () => {
    const { system, user } = chat({ code_language: "typescript", file_path: "src/math.ts" });
    assert.match(system, /completing typescript source code in the file src\/math\.ts/);
    assert.match(user, /<text path="src\/math\.ts" language="typescript">/);
    assert.doesNotMatch(system, /Markdown/, "document_type says nothing about code");
  });

  test("each known surface gets its own instructions", () => {
    const expectations: Array<[Partial<TabContext>, RegExp]> = [
      [{ surface: "code" }, /source code/],
      [{ surface: "notes", note_title: "Trip" }, /personal note titled "Trip"/],
      [{ surface: "docs", document_title: "RFC 12" }, /document titled "RFC 12"/],
      [{ surface: "messages" }, /chat message .* colleagues/],
      [{ surface: "tasks", taskboard_file_id: "board-7" }, /task board \(board board-7\)/],
      [{ surface: "calendar" }, /calendar event/],
    ];
    const seen = new Set<string>();
    for (const [overrides, pattern] of expectations) {
      const text = surfaceInstructions(context(overrides));
      assert.match(text, pattern);
      seen.add(text);
    }
    assert.equal(seen.size, expectations.length);
  });

  test("surface names are matched without regard to case", () => {
    assert.equal(
      surfaceInstructions(context({ surface: "Notes" })),
      surfaceInstructions(context({ surface: "notes" })),
    );
  });

  test("custom surfaces get generic instructions that name them", () => {
    const email = surfaceInstructions(context({ surface: "email" }));
    const issue = surfaceInstructions(context({ surface: "issue" }));
    assert.match(email, /"email" surface/);
    assert.match(issue, /"issue" surface/);
    assert.doesNotMatch(email, /source code|personal note|task board/);
  });

  test("document type, title and block kind reach the instructions of prose surfaces", () => {
    const markdown = chat({
      surface: "email",
      document_type: "markdown",
      document_title: "Offer",
      block_kind: "bulleted-list",
    }).system;
    assert.match(markdown, /Markdown; keep its Markdown syntax/);
    assert.match(markdown, /titled "Offer"/);
    assert.match(markdown, /"bulleted-list" block/);
    assert.match(chat({ surface: "messages" }).system, /plain text; do not add Markdown/);
  });

  test("the cursor in the middle of a line asks for the rest of that line only", () => {
    assert.match(chat({ active_text_after_cursor: ");" }).system, /middle of a line/);
    assert.doesNotMatch(chat().system, /middle of a line/);
  });

  test("free-form surrounding context goes inside its own tag before the text", () => {
    const surrounding = "Ada: can you review?\n".repeat(200);
    const { user } = chat({ surface: "messages", surrounding_context: surrounding });
    assert.ok(user.startsWith(`<context>\n${surrounding.trimEnd()}\n</context>`));
    assert.ok(user.indexOf("<context>") < user.indexOf("<text"));
  });

  test("snippets from other files go into a Related code section, each with its path, before the text", () => {
    const surrounding_context = formatSnippets([
      { path: "src/types.ts", text: "export interface Item {}" },
      { path: "lib/tax.ts", text: "export const RATE = 0.2;" },
    ]);
    const { user } = chat({ surrounding_context });
    assert.ok(
      user.startsWith(
        "Related code from other files (for reference; do not repeat it):\n" +
          '<file path="src/types.ts">\nexport interface Item {}\n</file>\n<file path="lib/tax.ts">\nexport const RATE = 0.2;\n</file>\n\n<text>',
      ),
      user,
    );
  });
});
