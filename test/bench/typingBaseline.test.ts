import assert from "node:assert/strict";
import { test } from "node:test";
import { buildTabContext, tailFromLineStart } from "../../extension/src/core/context";
import { DEFAULT_SETTINGS } from "../../extension/src/core/settings";
import { LEGACY_BUDGET_CHARS, LegacyContext, legacySurroundingContext, visibleHead } from "./typingBaseline";

test("the old context shares 500 characters equally between the document's far parts and each visible editor, under their labels", () => {
  const far = "a".repeat(1_000);
  const editor = { path: "src/beside.ts", text: "b".repeat(1_000) };
  const context = legacySurroundingContext("src/main.ts", far, "", LEGACY_BUDGET_CHARS, [editor]);
  assert.equal(LEGACY_BUDGET_CHARS, 500);
  assert.ok(context.length <= 500, `${context.length}`);
  const [first, second] = context.split("--- src/beside.ts ---\n");
  assert.ok(first?.startsWith("--- src/main.ts (start) ---\naaa"));
  assert.equal(first?.length, 250);
  assert.ok(second?.startsWith("bbb"));
  assert.equal(second?.length, 250 - "--- src/beside.ts ---\n".length);
  assert.equal(legacySurroundingContext("src/main.ts", "   \n", "", 500, []), "", "blank sources are left out");
});

test("a visible editor opened at the top shows its first lines", () => {
  const text = Array.from({ length: 80 }, (_, i) => `line ${i}`).join("\n");
  assert.equal(visibleHead("x.ts", text, 3).text, "line 0\nline 1\nline 2");
  assert.equal(visibleHead("x.ts", text).text.split("\n").length, 50);
});

test("through today's core, the old source sends exactly what the old core sent, following the document's changes", () => {
  const settings = { ...DEFAULT_SETTINGS, surroundingContextChars: LEGACY_BUDGET_CHARS, workspaceSlug: "w" };
  const start = `${"const early = 1;\n".repeat(60)}function f() {\n`;
  const visible = [visibleHead("beside.ts", "export const beside = 2;\n".repeat(100))];
  const legacy = new LegacyContext("main.ts", start, visible, {
    before: settings.contextCharsBefore,
    after: settings.contextCharsAfter,
  });
  legacy.change({ text: start, offset: start.length, deleted: 0, inserted: "  retx" });
  legacy.change({ text: `${start}  retx`, offset: start.length + 5, deleted: 1, inserted: "" });
  const text = `${start}  ret`;
  const input = {
    uri: "file:///main.ts",
    relativePath: "main.ts",
    scheme: "file",
    languageId: "typescript",
    title: "main.ts",
    text,
    offset: text.length,
  };
  const context = buildTabContext(input, settings, legacy);
  // The text before the cursor starts at a line's start (tailFromLineStart); the far part is the rest.
  const before = tailFromLineStart(text, settings.contextCharsBefore);
  const farBefore = text.slice(0, text.length - before.length);
  assert.equal(context.surrounding_context, legacySurroundingContext("main.ts", farBefore, "", 500, visible));
  assert.equal(context.active_text_before_cursor, before);
});
