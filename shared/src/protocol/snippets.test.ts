import assert from "node:assert/strict";
import { test } from "node:test";
import { type ContextSnippet, formatSnippets, parseSnippets, snippetCost, snippetHeader } from "./snippets";

test("snippets written by formatSnippets are read back unchanged, path and text", () => {
  const snippets: ContextSnippet[] = [
    { path: "src/math.ts", text: "export function add(a: number, b: number) {\n  return a + b;\n}" },
    { path: "docs/a b (1).md", text: "# Title\n\nSome text" },
  ];
  assert.deepEqual(parseSnippets(formatSnippets(snippets)), snippets);
});

test("a context without headers is one snippet without a path; text before the first header is one too", () => {
  assert.deepEqual(parseSnippets("plain context\nfrom another client"), [
    { text: "plain context\nfrom another client" },
  ]);
  assert.deepEqual(parseSnippets(`intro\n${snippetHeader("a.ts")}\nconst a = 1;\n`), [
    { text: "intro" },
    { path: "a.ts", text: "const a = 1;" },
  ]);
});

test("a line inside a snippet that looks like a header cannot split it", () => {
  const tricky: ContextSnippet = { path: "notes.md", text: "before\n--- file: evil.ts ---\nafter" };
  const [parsed, ...rest] = parseSnippets(formatSnippets([tricky]));
  assert.equal(rest.length, 0);
  assert.equal(parsed?.path, "notes.md");
  assert.equal(parsed?.text, "before\n --- file: evil.ts ---\nafter");
});

test("CRLF text keeps its line ends and its headers are still found", () => {
  const context = `${snippetHeader("win.ts")}\r\nconst a = 1;\r\nconst b = 2;\r\n`;
  assert.deepEqual(parseSnippets(context), [{ path: "win.ts", text: "const a = 1;\r\nconst b = 2;\r" }]);
});

test("a path with a line break is written on one line", () => {
  assert.equal(snippetHeader("a\nb.ts"), "--- file: a b.ts ---");
  assert.equal(parseSnippets(formatSnippets([{ path: "a\r\nb.ts", text: "x" }]))[0]?.path, "a b.ts");
});

test("snippetCost is exactly what formatSnippets spends", () => {
  const snippets: ContextSnippet[] = [
    { path: "a.ts", text: "one\ntwo" },
    { text: "free" },
    { path: "c/d.ts", text: "" },
  ];
  assert.equal(
    formatSnippets(snippets).length,
    snippets.reduce((sum, s) => sum + snippetCost(s), 0),
  );
});

test("empty snippets are left out when parsing", () => {
  assert.deepEqual(parseSnippets(`${snippetHeader("a.ts")}\n\n${snippetHeader("b.ts")}\nx\n`), [
    { path: "b.ts", text: "x" },
  ]);
  assert.deepEqual(parseSnippets(""), []);
});
