import assert from "node:assert/strict";
import { test } from "node:test";
import { TypingThroughCache } from "./cache";
import { cursorText } from "./context";
import { inputAt, typeAt } from "./testing";

const DOC = "file:///a.ts";

function cacheWith(marked: string, suggestion: string) {
  const cache = new TypingThroughCache();
  const start = inputAt(marked);
  cache.store(DOC, cursorText(start), suggestion);
  const lookupAfter = (typed: string, doc = DOC) => cache.lookup(doc, cursorText(typeAt(start, typed)));
  return { cache, lookupAfter };
}

test("serves the rest of the suggestion while the user types along it", () => {
  const { lookupAfter } = cacheWith("const total = █\n", "items.length;");
  assert.equal(lookupAfter(""), "items.length;");
  assert.equal(lookupAfter("i"), "tems.length;");
  assert.equal(lookupAfter("items."), "length;");
});

test("backspacing over typed characters and retyping still hits", () => {
  const { lookupAfter } = cacheWith("const total = █\n", "items.length;");
  assert.equal(lookupAfter("ite\b"), "ems.length;");
  assert.equal(lookupAfter("ite\b\b\b"), "items.length;");
  assert.equal(lookupAfter("ite\b\bt"), "ems.length;");
});

test("misses when the typed text leaves the suggestion", () => {
  const { lookupAfter } = cacheWith("const total = █\n", "items.length;");
  assert.equal(lookupAfter("x"), undefined);
  assert.equal(lookupAfter("itx"), undefined);
});

test("misses once the whole suggestion is typed, so the next one can be requested", () => {
  const { lookupAfter } = cacheWith("const total = █\n", "items.length;");
  assert.equal(lookupAfter("items.length;"), undefined);
});

test("misses after deleting past where the suggestion started", () => {
  const { lookupAfter } = cacheWith("const total = █\n", "items.length;");
  assert.equal(lookupAfter("\b"), undefined);
});

test("misses in another document, or when the text after the cursor changed", () => {
  const { cache, lookupAfter } = cacheWith("call(█)\n", "a, b");
  assert.equal(lookupAfter("a", "file:///b.ts"), undefined);
  assert.equal(cache.lookup(DOC, cursorText(inputAt("call(a█])\n"))), undefined);
  assert.equal(cache.lookup(DOC, cursorText(inputAt("call(a█)\n"))), ", b");
});

test("follows a multi-line suggestion across the newline", () => {
  const { lookupAfter } = cacheWith("if (x) {█\n}", "\n  run();\n  stop();");
  assert.equal(lookupAfter("\n  run();\n"), "  stop();");
});

test("keeps only the most recently used entries", () => {
  const cache = new TypingThroughCache(2);
  for (const n of [1, 2, 3]) cache.store(DOC, cursorText(inputAt(`let v${n} = █`)), `value${n}`);
  assert.equal(cache.size, 2);
  assert.equal(cache.lookup(DOC, cursorText(inputAt("let v1 = █"))), undefined);
  assert.equal(cache.lookup(DOC, cursorText(inputAt("let v3 = █"))), "value3");
});
