import assert from "node:assert/strict";
import { test } from "node:test";
import { formatSnippets, type TabContext } from "@tab-relay/shared";
import { explainRequest, lineAt } from "./typingExplain";

const context = (before: string, surrounding?: string): TabContext => ({
  surface: "code",
  workspace_slug: "w",
  entity_id: "main.ts",
  document_type: "plaintext",
  active_text_before_cursor: before,
  ...(surrounding === undefined ? {} : { surrounding_context: surrounding }),
});

test("the cursor's line and what is left to write of it", () => {
  const target = "first line\nconst total = sum(values);\nlast";
  const offset = target.indexOf("sum(");
  assert.deepEqual(lineAt(target, offset), { line: "const total = sum(values);", rest: "sum(values);" });
  assert.deepEqual(lineAt(target, target.length), { line: "last", rest: "" });
});

test("a line written before is found before the cursor, and the engine repeats it from there", () => {
  const before = "const total = sum(values);\nreport(total);\nconst total = ";
  const why = explainRequest(context(before), "const total = sum(values);", "sum(values);");
  assert.deepEqual(why, { line: "before the cursor", source: "from the document around the cursor", rightLine: true });
});

test("a line only another file holds is found in surrounding_context, and the suggestion is credited to it", () => {
  const surrounding = formatSnippets([
    { path: "stats.ts", text: "export function mean(values: number[]) {\n  const total = sum(values);\n}" },
  ]);
  const why = explainRequest(
    context("function twice() {\n  const total = ", surrounding),
    "  const total = sum(values);",
    "sum(values);",
  );
  assert.deepEqual(why, { line: "only in surrounding_context", source: "from surrounding_context", rightLine: true });
});

test("a new line is found nowhere, a wrong suggestion is not right, and short lines are not judged", () => {
  const why = explainRequest(context("log(first);\nlog(second);\nlog("), "log(third);", "third);");
  assert.deepEqual(why, { line: "nowhere sent", source: "from the document around the cursor", rightLine: false });
  assert.equal(explainRequest(context("x();\n"), "});", "});").line, "too short");
  assert.deepEqual(explainRequest(context("zq"), "zq(9);", "(9);"), {
    line: "nowhere sent",
    source: "none",
    rightLine: false,
  });
});
