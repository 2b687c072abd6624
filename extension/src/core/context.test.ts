import assert from "node:assert/strict";
import { test } from "node:test";
import { TabContext, parseSnippets } from "@tab-relay/shared";
import {
  allocate,
  buildTabContext,
  cursorText,
  head,
  isSingleLineContext,
  lastLines,
  surfaceFor,
  tail,
} from "./context";
import { RecentFiles } from "./recentFiles";
import { DEFAULT_SETTINGS } from "./settings";
import { FakeClock, inputAt } from "./testing";

const settings = { ...DEFAULT_SETTINGS, workspaceSlug: "acme" };

test("sends about 600 characters before and 80 after the cursor by default", () => {
  const before = "b".repeat(1000);
  const after = "a".repeat(200);
  const context = buildTabContext(inputAt(`${before}█${after}`), settings);
  assert.equal(context.active_text_before_cursor, before.slice(-600));
  assert.equal(context.active_text_after_cursor, after.slice(0, 80));
  assert.equal(TabContext.safeParse(context).success, true);
});

test("window sizes come from the settings", () => {
  const context = buildTabContext(inputAt("0123456789█abcdef"), {
    ...settings,
    contextCharsBefore: 4,
    contextCharsAfter: 2,
  });
  assert.equal(context.active_text_before_cursor, "6789");
  assert.equal(context.active_text_after_cursor, "ab");
});

test("fills the editor fields: entity, path, title, language, workspace", () => {
  const context = buildTabContext(inputAt("let a = █"), settings);
  assert.equal(context.surface, "code");
  assert.equal(context.workspace_slug, "acme");
  assert.equal(context.entity_id, "src/app.ts");
  assert.equal(context.file_path, "src/app.ts");
  assert.equal(context.document_title, "app.ts");
  assert.equal(context.code_language, "typescript");
  assert.equal(context.document_type, "plaintext");
  assert.equal(context.active_text_after_cursor, undefined);
});

test("an untitled document is identified by its URI and has no file path", () => {
  const context = buildTabContext(
    inputAt("hello █", {
      uri: "untitled:Untitled-1",
      relativePath: undefined,
      scheme: "untitled",
      languageId: "plaintext",
      title: "Untitled-1",
    }),
    settings,
  );
  assert.equal(context.entity_id, "untitled:Untitled-1");
  assert.equal(context.file_path, undefined);
  assert.equal(context.surface, "notes");
  assert.equal(context.code_language, undefined);
});

test("maps markdown to docs, plain text to notes, the commit box to messages, and the rest to code", () => {
  assert.equal(surfaceFor({ scheme: "file", languageId: "markdown" }, settings), "docs");
  assert.equal(surfaceFor({ scheme: "file", languageId: "plaintext" }, settings), "notes");
  assert.equal(surfaceFor({ scheme: "vscode-scm", languageId: "scminput" }, settings), "messages");
  assert.equal(surfaceFor({ scheme: "file", languageId: "git-commit" }, settings), "messages");
  assert.equal(surfaceFor({ scheme: "vscode-scm", languageId: "unknown" }, settings), "messages");
  assert.equal(surfaceFor({ scheme: "file", languageId: "rust" }, settings), "code");
  const markdown = buildTabContext(inputAt("# Title\n█", { languageId: "markdown" }), settings);
  assert.equal(markdown.document_type, "markdown");
  assert.equal(markdown.surface, "docs");
});

test("the surface setting maps language ids to any surface name, over the defaults", () => {
  const custom = { ...settings, surfaces: { markdown: "email", yaml: "issue" } };
  assert.equal(surfaceFor({ scheme: "file", languageId: "markdown" }, custom), "email");
  assert.equal(surfaceFor({ scheme: "file", languageId: "yaml" }, custom), "issue");
});

test("without files to draw on, surrounding context is the rest of this document, within budget", () => {
  const top = `import { helper } from "./helper";\n${"// filler\n".repeat(100)}`;
  const bottom = `${"\n".repeat(5)}${"// more\n".repeat(20)}export function last() {}\n`;
  const input = inputAt(`${top}function f() {\n  return █\n}${bottom}`);
  const context = buildTabContext(input, {
    ...settings,
    contextCharsBefore: 100,
    contextCharsAfter: 10,
    surroundingContextChars: 500,
  });
  const surrounding = context.surrounding_context ?? "";
  assert.ok(surrounding.length <= 500, `${surrounding.length} chars`);
  const snippets = parseSnippets(surrounding);
  assert.deepEqual(
    snippets.map((snippet) => snippet.path),
    ["src/app.ts", "src/app.ts"],
  );
  assert.match(snippets[0]?.text ?? "", /^import \{ helper \} from/);
  assert.match(snippets[1]?.text ?? "", /\/\/ more/);
  assert.equal(surrounding.includes("return █"), false);
});

test("with the files the user worked in, surrounding context is their related code", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(
    { uri: "file:///work/project/src/helper.ts", path: "src/helper.ts", scheme: "file" },
    "export function helperTotal(items: Item[]): number {\n  return items.reduce((sum, item) => sum + item.price, 0);\n}",
  );
  files.open(
    { uri: "file:///work/project/src/colors.ts", path: "src/colors.ts", scheme: "file" },
    "export const palette = ['red', 'green'];",
  );
  const doc = `import { helperTotal } from "./helper";\n${"// filler\n".repeat(100)}const total = helperTotal(items█);\n`;
  const context = buildTabContext(inputAt(doc), { ...settings, surroundingContextChars: 900 }, files);
  const snippets = parseSnippets(context.surrounding_context ?? "");
  assert.deepEqual(snippets[0], { path: "src/helper.ts", text: files.heldText("file:///work/project/src/helper.ts") });
  assert.equal(
    snippets.some((snippet) => snippet.path === "src/colors.ts"),
    false,
  );
  // This document is not held, so its own start still comes along, after the related code.
  assert.equal(snippets[1]?.path, "src/app.ts");
  assert.match(snippets[1]?.text ?? "", /^import \{ helperTotal \}/);
  assert.ok((context.surrounding_context ?? "").length <= 900);
});

test("a held document's far parts compete like any other code, and its lines near the cursor are not repeated", () => {
  const files = new RecentFiles(new FakeClock());
  const lines = Array.from({ length: 200 }, (_, i) => `export const rate${i} = computeRate(baseRate, ${i});`);
  const doc = `${lines.join("\n")}\nconst next = computeRate(baseRate, █`;
  files.open({ uri: "file:///work/project/src/app.ts", path: "src/app.ts", scheme: "file" }, doc.replace("█", ""));
  const input = inputAt(doc);
  const context = buildTabContext(input, settings, files);
  const snippets = parseSnippets(context.surrounding_context ?? "");
  assert.ok(snippets.length > 0);
  for (const snippet of snippets) {
    assert.equal(snippet.path, "src/app.ts");
    assert.equal(snippet.text.includes("rate199 "), false, "the lines just before the cursor are the prefix already");
    assert.equal(snippet.text.includes("rate170 "), false, "the lines the ranking was done against are not repeated");
  }
});

test("no surrounding context when its budget is zero or there is nothing else", () => {
  assert.equal(buildTabContext(inputAt("a█b"), settings).surrounding_context, undefined);
  const files = new RecentFiles(new FakeClock());
  files.open(
    { uri: "file:///work/project/src/b.ts", path: "src/b.ts", scheme: "file" },
    "export const other = compute(other);",
  );
  const input = inputAt(`${"x".repeat(2000)} other = █`);
  assert.equal(
    buildTabContext(input, { ...settings, surroundingContextChars: 0 }, files).surrounding_context,
    undefined,
  );
  assert.notEqual(buildTabContext(input, settings, files).surrounding_context, undefined);
});

test("a selected IntelliSense item is treated as already typed, and forces a single line", () => {
  const input = inputAt("console.l█", { selected: { start: 8, end: 9, text: "log" } });
  assert.deepEqual(cursorText(input), { before: "console.log", after: "" });
  assert.equal(buildTabContext(input, settings).active_text_before_cursor, "console.log");
  assert.equal(isSingleLineContext(input, cursorText(input)), true);
});

test("a context is single-line when non-blank text follows the cursor on its line", () => {
  const single = inputAt("foo(█).bar\nbaz");
  const multi = inputAt("foo() {█  \n}");
  assert.equal(isSingleLineContext(single, cursorText(single)), true);
  assert.equal(isSingleLineContext(multi, cursorText(multi)), false);
});

test("closers alone after the cursor, as auto-closing leaves them, count as the end of the line", () => {
  for (const marked of ["function f() {█}", "function f() {█}  ", 'print("█")', "call([█])\nnext", "const s = `█`"]) {
    const input = inputAt(marked);
    assert.equal(isSingleLineContext(input, cursorText(input)), false, marked);
  }
  for (const marked of ["foo(█) + 1", "if (█) {", "f(█), g()", "{█} else"]) {
    const input = inputAt(marked);
    assert.equal(isSingleLineContext(input, cursorText(input)), true, marked);
  }
});

test("allocate shares a budget equally and passes on what a source does not need", () => {
  assert.deepEqual(allocate(100, [10, 200, 200]), [10, 45, 45]);
  assert.deepEqual(allocate(100, [0, 0]), [0, 0]);
  assert.deepEqual(allocate(30, [100]), [30]);
});

test("the text before the cursor starts at a line's start, and keeps that start while the person types on", () => {
  const lines = Array.from({ length: 40 }, (_, i) => `const value${i} = ${i};\n`).join("");
  const narrow = { ...settings, contextCharsBefore: 100 };
  const starts = new Set<string>();
  let typed = "";
  for (const char of "return total") {
    typed += char;
    const before = buildTabContext(inputAt(`${lines}${typed}█`), narrow).active_text_before_cursor;
    assert.ok(before.length <= 100, `${before.length} chars`);
    assert.ok(before.startsWith("const value"), JSON.stringify(before.slice(0, 20)));
    assert.ok(before.endsWith(typed));
    starts.add(before.slice(0, before.indexOf("\n")));
  }
  // Twelve keystrokes moved the character cut twelve times; the line start moved at most once.
  assert.ok(starts.size <= 2, [...starts].join(" | "));
  // A line longer than a quarter of the window keeps the cut by characters, so the window is not emptied.
  const long = `${"x".repeat(300)}\nlet a = █`;
  assert.equal(buildTabContext(inputAt(long), narrow).active_text_before_cursor.length, 100);
});

test("windows never split a surrogate pair", () => {
  assert.equal(tail("a😀b", 3), "😀b");
  assert.equal(tail("a😀b", 2), "b");
  assert.equal(head("a😀b", 2), "a");
});

test("lastLines takes the cursor's line and the lines before it", () => {
  assert.equal(lastLines("a\nb\nc\nd", 2), "c\nd");
  assert.equal(lastLines("a\nb", 5), "a\nb");
  assert.equal(lastLines("a\nb\n", 1), "");
  assert.equal(lastLines("\nb", 1), "b");
});
