import assert from "node:assert/strict";
import { test } from "node:test";
import { cursorText, isSingleLineContext } from "./context";
import { postprocess, stripSuffixOverlap, stripTypedPrefix } from "./postprocess";
import { inputAt } from "./testing";

/** Postprocesses `raw` at the `█` in `marked`. */
function at(marked: string, raw: string): string | undefined {
  const input = inputAt(marked);
  const cursor = cursorText(input);
  return postprocess(raw, { ...cursor, singleLine: isSingleLineContext(input, cursor), minVisibleChars: 2 });
}

test("strips a restart of the current line", () => {
  assert.equal(at("function f() {\n  const tot█", "  const total = 0;"), "al = 0;");
  assert.equal(at("function f() {\n  const tot█", "const total = 0;"), "al = 0;");
});

test("keeps indentation after the cursor's indentation, which may be the model nesting deeper (the relay's rule)", () => {
  assert.equal(at("if (x) {\n    █", "    return 1;"), "    return 1;");
});

test("strips a restatement that starts at a word after a bracket", () => {
  assert.equal(at("items.map(item => █", "item => item.id)"), "item.id)");
});

test("strips a 2-character restatement of the word at the cursor (the relay's minimum)", () => {
  assert.equal(at("const fruit = ba█", "banana;"), "nana;");
});

test("keeps text that repeats lines above the cursor line, which is as often real code (the relay's rule)", () => {
  assert.equal(at("def f():\n    █", "def f():\n    return 1"), "def f():\n    return 1");
  assert.equal(at("x++;\n█", "x++;\ny++;"), "x++;\ny++;");
});

test("keeps the continuation of repetitive text that merely ends like what was typed", () => {
  assert.equal(at("const xs = [1, 2, 3, 1, 2, 3█\n", ", 1, 2, 3"), ", 1, 2, 3");
  assert.equal(at("foo();\nfoo();\nfoo();\nfoo█", "();\nfoo"), "();\nfoo");
  assert.equal(at("ok ok ok ok█", " ok"), " ok");
  assert.equal(at("- [ ] buy eggs\n- [ ] █", "buy eggs\n- [ ] "), "buy eggs\n- [ ]");
});

test("keeps a short overlap that is more likely a real continuation", () => {
  assert.equal(stripTypedPrefix('"hi"', 'const s = "'), '"hi"');
  assert.equal(stripTypedPrefix("ab", "x = a"), "ab");
});

test("hides suggestions with fewer than 2 visible characters", () => {
  assert.equal(at("let x = █", "1"), undefined);
  assert.equal(at("let x = █", "  \n "), undefined);
  assert.equal(at("let x = █", "42"), "42");
});

test("does not repeat a closing bracket already after the cursor", () => {
  assert.equal(at("call(█)", "a, b)"), "a, b");
  assert.equal(at("call(█);", "a, b);"), "a, b");
});

test("keeps a bracket pair the suggestion opens itself", () => {
  assert.equal(at("outer(█)", "inner()"), "inner()");
  assert.equal(stripSuffixOverlap("foo()", ")"), "foo()");
});

test("does not repeat the lines that already follow the cursor", () => {
  assert.equal(at("function f() {\n  █\n}\n", "return 1;\n}"), "return 1;");
  assert.equal(at("a();\n█\nlast();", "middle();\nlast();"), "middle();");
});

test("drops a suggestion that only repeats what follows the cursor", () => {
  assert.equal(at("x = █value + 1", "value + 1"), undefined);
});

test("shows only the first line when text follows the cursor on its line", () => {
  assert.equal(at("const v = █;", "compute(1)\nmore()"), "compute(1)");
});

test("keeps multiple lines at the end of a line", () => {
  assert.equal(at("function f() {█\n}", "\n  return 1;\n  // done"), "\n  return 1;\n  // done");
});

test("does not double a space the user already typed, and drops trailing blanks", () => {
  assert.equal(at("const x = █", " 42;\n\n"), "42;");
});

test("keeps a trailing space when the line goes on right after the cursor", () => {
  assert.equal(at("const █= 1", "value "), "value ");
});

test("normalises CRLF from the model to LF", () => {
  assert.equal(at("f() {█", "\r\n  a();\r\n}"), "\n  a();\n}");
});

test("a block's body comes as several lines inside an auto-closed pair, and the model's own closer is not repeated", () => {
  assert.equal(at("function greet(name) {█}", '\n  return "Hello, " + name;\n}'), '\n  return "Hello, " + name;\n');
});
