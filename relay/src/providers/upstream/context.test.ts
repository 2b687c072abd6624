import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type TabContext, formatSnippets } from "@tab-relay/shared";
import { CONTEXT_MAX_CHARS, contextSnippets } from "./context";

function context(surrounding_context: string | undefined): TabContext {
  return {
    surface: "code",
    workspace_slug: "acme",
    entity_id: "e",
    document_type: "plaintext",
    active_text_before_cursor: "x",
    ...(surrounding_context === undefined ? {} : { surrounding_context }),
  };
}

const lines = (name: string, count: number) => Array.from({ length: count }, (_, i) => `${name} line ${i}`).join("\n");

describe("context from other files, bounded", () => {
  test("no surrounding context, no snippets", () => {
    assert.deepEqual(contextSnippets(context(undefined)), []);
    assert.deepEqual(contextSnippets(context("")), []);
  });

  test("snippets that fit are kept whole, in the order sent", () => {
    const snippets = [
      { path: "a.ts", text: "const a = 1;" },
      { path: "b.ts", text: "const b = 2;" },
    ];
    assert.deepEqual(contextSnippets(context(formatSnippets(snippets))), snippets);
  });

  test("the first snippet that does not fit is cut after a whole line, keeping its start; later ones are left out", () => {
    const snippets = [
      { path: "a.ts", text: lines("a", 10) },
      { path: "b.ts", text: lines("b", 1_000) },
      { path: "c.ts", text: "const c = 3;" },
    ];
    const kept = contextSnippets(context(formatSnippets(snippets)));
    assert.equal(kept.length, 2);
    assert.deepEqual(kept[0], snippets[0]);
    assert.equal(kept[1]?.path, "b.ts");
    assert.ok(snippets[1]?.text.startsWith(`${kept[1]?.text}\n`), "a whole-line start of b.ts");
    const used = kept.reduce((sum, snippet) => sum + (snippet.path?.length ?? 0) + snippet.text.length + 1, 0);
    assert.ok(used <= CONTEXT_MAX_CHARS && used > CONTEXT_MAX_CHARS - 40, `used ${used}`);
  });

  test("free-form context that does not fit keeps its end", () => {
    const kept = contextSnippets(context(lines("free", 2_000)));
    assert.equal(kept.length, 1);
    assert.equal(kept[0]?.path, undefined);
    assert.ok(kept[0]?.text.endsWith("free line 1999"));
    assert.ok(kept[0]?.text.startsWith("free line "), "cut at a line start");
    assert.ok((kept[0]?.text.length ?? 0) <= CONTEXT_MAX_CHARS);
  });

  test("a snippet with too little room left is dropped rather than cut to a few lines", () => {
    const first = { path: "a.ts", text: "a".repeat(CONTEXT_MAX_CHARS - 100) };
    const kept = contextSnippets(context(formatSnippets([first, { path: "b.ts", text: lines("b", 100) }])));
    assert.deepEqual(kept, [first]);
  });

  test("the budget can be set per call", () => {
    const kept = contextSnippets(context(formatSnippets([{ path: "a.ts", text: lines("a", 100) }])), 300);
    assert.ok((kept[0]?.text.length ?? 0) <= 300 - "a.ts".length - 1);
  });
});
