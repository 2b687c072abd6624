import { strict as assert } from "node:assert";
import { describe, it } from "node:test";
import { NEXT_EDIT_LIMITS, NextEditRequest } from "./nextEdit";

const valid = {
  workspace_slug: "acme",
  file_path: "src/a.ts",
  document_version: 3,
  excerpt: { start_line: 10, text: "const a = 1;\nconst b = a;\nconsole.log(a);" },
  editable_region: { start_line: 10, end_line: 13 },
  cursor: { line: 11, character: 5 },
  recent_edits: [{ file_path: "src/a.ts", start_line: 10, old_lines: ["const x = 1;"], new_lines: ["const a = 1;"] }],
};

function issuePaths(body: unknown): string[] {
  const result = NextEditRequest.safeParse(body);
  return result.success ? [] : result.error.issues.map((issue) => issue.path.join("."));
}

describe("NextEditRequest", () => {
  it("accepts a region inside the excerpt with the cursor inside the region", () => {
    assert.deepEqual(issuePaths(valid), []);
  });

  it("refuses a region that reaches past the excerpt, naming editable_region", () => {
    assert.deepEqual(issuePaths({ ...valid, editable_region: { start_line: 10, end_line: 14 } }), ["editable_region"]);
    assert.deepEqual(issuePaths({ ...valid, editable_region: { start_line: 9, end_line: 12 } }), ["editable_region"]);
    assert.deepEqual(issuePaths({ ...valid, editable_region: { start_line: 11, end_line: 11 } }), ["editable_region"]);
  });

  it("refuses a cursor outside the region or past the end of its line", () => {
    assert.deepEqual(issuePaths({ ...valid, editable_region: { start_line: 12, end_line: 13 } }), ["cursor.line"]);
    assert.deepEqual(issuePaths({ ...valid, cursor: { line: 11, character: 13 } }), ["cursor.character"]);
    assert.deepEqual(issuePaths({ ...valid, cursor: { line: 11, character: 12 } }), []);
  });

  it("refuses a region longer than the limit", () => {
    const text = Array.from({ length: NEXT_EDIT_LIMITS.regionLines + 1 }, (_, i) => `line ${i}`).join("\n");
    const body = {
      ...valid,
      excerpt: { start_line: 0, text },
      editable_region: { start_line: 0, end_line: NEXT_EDIT_LIMITS.regionLines + 1 },
      cursor: { line: 0, character: 0 },
    };
    assert.deepEqual(issuePaths(body), ["editable_region"]);
  });

  it("refuses unknown fields, so code text cannot ride along unvalidated", () => {
    assert.deepEqual(issuePaths({ ...valid, whole_file: "secret" }), [""]);
    assert.deepEqual(issuePaths({ ...valid, recent_edits: [{ ...valid.recent_edits[0], diff: "x" }] }), [
      "recent_edits.0",
    ]);
  });
});
