import assert from "node:assert/strict";
import { test } from "node:test";
import type { RecentEdit } from "@tab-relay/shared";
import { applyEdits, diffRegion } from "./diff";
import type { NextEditDocument } from "./document";
import { proposeLocalNextEdit } from "./localEngine";

/** A document of `lines` from line 0, the region the whole excerpt, the cursor at the end of `editedLine`. */
function after(lines: string[], editedLine: number, old: string): { doc: NextEditDocument; edits: RecentEdit[] } {
  const doc: NextEditDocument = {
    filePath: "a.ts",
    language: "typescript",
    lines,
    firstLine: 0,
    regionStart: 0,
    regionEnd: lines.length,
    cursor: { line: editedLine, character: (lines[editedLine] as string).length },
  };
  return {
    doc,
    edits: [{ file_path: "a.ts", start_line: editedLine, old_lines: [old], new_lines: [lines[editedLine] as string] }],
  };
}

function proposed(lines: string[], editedLine: number, old: string): string[] | string {
  const { doc, edits } = after(lines, editedLine, old);
  const { judgement } = proposeLocalNextEdit(doc, edits);
  return "edits" in judgement ? applyEdits(lines, 0, judgement.edits) : judgement.reason;
}

test("an argument added at one call goes to the other calls when the file defines the parameter as required", () => {
  const lines = ["function send(to, body, audit) {}", "send(a, x, audit);", "send(b, y);", "send(c);"];
  assert.deepEqual(proposed(lines, 1, "send(a, x);"), [...lines.slice(0, 2), "send(b, y, audit);", "send(c);"]);
});

test("an added argument is left alone for an optional parameter or with no definition in sight", () => {
  const optional = ["function send(to, body, audit?) {}", "send(a, x, audit);", "send(b, y);"];
  assert.equal(proposed(optional, 1, "send(a, x);"), "no_change");
  assert.equal(proposed(["resolve(value);", "resolve();"], 0, "resolve();"), "no_change");
});

test("a literal changed in the first row of a block goes to the rows below that held the old value", () => {
  const lines = ['  { name: "a", timeout: 200 },', '  { name: "b", timeout: 100 },', '  { name: "c", timeout: 100 },'];
  assert.deepEqual(proposed(lines, 0, '  { name: "a", timeout: 100 },'), [
    lines[0],
    '  { name: "b", timeout: 200 },',
    '  { name: "c", timeout: 200 },',
  ]);
});

test("a literal changed below a row that kept the old value, or in a column of different values, is declined", () => {
  const kept = ['  { name: "a", timeout: 100 },', '  { name: "b", timeout: 200 },', '  { name: "c", timeout: 100 },'];
  assert.equal(proposed(kept, 1, '  { name: "b", timeout: 100 },'), "ambiguous");
  const mixed = ['  { name: "a", timeout: 200 },', '  { name: "b", timeout: 300 },'];
  assert.equal(proposed(mixed, 0, '  { name: "a", timeout: 100 },'), "ambiguous");
});

test("renames are declined for properties, changed words and names already in use", () => {
  assert.equal(proposed(["x.total = 1;", "y.count = 2;"], 0, "x.count = 1;"), "ambiguous");
  assert.equal(proposed(["const database = 1;", "use(db);"], 0, "const db = 1;"), "ambiguous");
  assert.deepEqual(proposed(["const userName = 1;", "use(name);", "use(userName2);"], 0, "const name = 1;"), [
    "const userName = 1;",
    "use(userName);",
    "use(userName2);",
  ]);
  assert.equal(
    proposed(["let totalCount = 0;", "f(count, totalCount2);", "g(totalCount);"], 0, "let count = 0;"),
    "ambiguous",
  );
});

test("a call switched to another name is not proposed at the definition of the function it called", () => {
  const lines = ["const before = tailFromLineStart(text, 10);", "", "function tail(text, n) {", "  return text;", "}"];
  assert.equal(proposed(lines, 0, "const before = tail(text, 10);"), "ambiguous");
  const arrow = ["const before = tailFromLineStart(text, 10);", "const tail = (text, n) => text;"];
  assert.equal(proposed(arrow, 0, "const before = tail(text, 10);"), "ambiguous");
  // The same edit where the name is a value, not a call, and a definition renamed first, still go to the uses.
  assert.deepEqual(proposed(["const b = tailEnd;", "use(tail);"], 0, "const b = tail;"), [
    "const b = tailEnd;",
    "use(tailEnd);",
  ]);
  assert.deepEqual(proposed(["function tailEnd(text) {}", "tail(x);"], 0, "function tail(text) {}"), [
    "function tailEnd(text) {}",
    "tailEnd(x);",
  ]);
});

test("the diff of a rewritten region is the smallest edits, line breaks included, never past the region's last line", () => {
  assert.deepEqual(diffRegion(["a", "b"], "a", 5), [
    { range: { start: { line: 5, character: 1 }, end: { line: 6, character: 1 } }, text: "" },
  ]);
  assert.deepEqual(diffRegion(["a"], "a\nb", 5), [
    { range: { start: { line: 5, character: 1 }, end: { line: 5, character: 1 } }, text: "\nb" },
  ]);
  assert.deepEqual(diffRegion(["let sum = 0;", "x"], "let total = 0;\nx", 0), [
    { range: { start: { line: 0, character: 4 }, end: { line: 0, character: 7 } }, text: "total" },
  ]);
  for (const [old, rewrite] of [
    [["a", "b", "c"], "a\nc"],
    [["x = 1", "y = 2"], "x = 10\nz\ny = 20"],
  ] as const)
    assert.deepEqual(applyEdits(old, 0, diffRegion(old, rewrite, 0)), rewrite.split("\n"));
});
