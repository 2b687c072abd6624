import assert from "node:assert/strict";
import { test } from "node:test";
import { buildInfillTokens, buildTemplateTokens, cutFromStart, templateMarkers, templatePieces } from "./prompt";

const tokens = { prefix: -1, suffix: -2, middle: -3, fileSeparator: undefined, repoName: undefined };
/** One token per character, numbered by position in the text. */
const tokenize = (text: string) => [...text].map((c) => c.charCodeAt(0));

test("a prefix that fits is not cut", () => {
  assert.equal(cutFromStart(100, 100), 0);
  assert.equal(cutFromStart(0, 10), 0);
});

test("a prefix too long loses its start in steps of a quarter of the room, so it fits", () => {
  assert.equal(cutFromStart(101, 100), 25);
  assert.equal(cutFromStart(125, 100), 25);
  assert.equal(cutFromStart(126, 100), 50);
  for (const length of [101, 150, 333, 1000]) assert.ok(length - cutFromStart(length, 100) <= 100);
});

test("keystrokes on a prefix longer than its room keep the prompt's start, so a sequence can reuse it", () => {
  const start = "x".repeat(200);
  const budget = { maxTokens: 103 };
  const a = buildInfillTokens(
    { prefix: `${start}ab`, suffix: "", files: [], path: "a", repoName: "r", contextText: "" },
    tokens,
    tokenize,
    budget,
  );
  const b = buildInfillTokens(
    { prefix: `${start}abc`, suffix: "", files: [], path: "a", repoName: "r", contextText: "" },
    tokens,
    tokenize,
    budget,
  );
  assert.ok(a.length <= 103 && b.length <= 103);
  assert.equal(a[0], tokens.prefix);
  // Up to the FIM suffix token, the second prompt is the first one's text plus the new character.
  assert.deepEqual(b.slice(0, a.length - 2), a.slice(0, -2), "the second prompt extends the first");
});

test("a configured template puts the user's text in its slots, between its own marker tokens", () => {
  const parts = [{ tokens: [-5] }, { slot: "suffix" as const }, { tokens: [-6] }, { slot: "prefix" as const }];
  const input = { prefix: "ab", suffix: "c", files: [], path: "a", repoName: "r", contextText: "" };
  assert.deepEqual(buildTemplateTokens(input, parts, tokenize, { maxTokens: 100 }), [-5, 99, -6, 97, 98]);
});

test("a template's pieces and markers", () => {
  assert.deepEqual(templatePieces("<PRE> {context}{prefix} <SUF>{suffix} <MID>"), [
    { text: "<PRE> " },
    { slot: "context" },
    { slot: "prefix" },
    { text: " <SUF>" },
    { slot: "suffix" },
    { text: " <MID>" },
  ]);
  assert.deepEqual(templateMarkers(" <SUF>"), ["<SUF>"]);
  assert.deepEqual(templateMarkers("[SUFFIX]"), ["[SUFFIX]"]);
  assert.deepEqual(templateMarkers("// "), []);
});
