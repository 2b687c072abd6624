import assert from "node:assert/strict";
import { test } from "node:test";
import { WORD_CHAR, isWordChar, typedRepeatCandidates, typedRepeatLength } from "./text";

test("word characters are what continues a JavaScript identifier: letters, marks, digits, _ and $", () => {
  const words = ["a", "Z", "0", "9", "_", "$", "é", "ß", "名", "Я", "\u0301", "\u093f", "٣"];
  const others = [
    " ",
    "\t",
    "\n",
    ".",
    "(",
    ")",
    "-",
    "@",
    "#",
    "'",
    '"',
    "`",
    "\u00a0",
    "\u2028",
    "€",
    "😀".charAt(0),
    "",
  ];
  for (const char of words) {
    assert.equal(isWordChar(char), true, JSON.stringify(char));
    assert.equal(WORD_CHAR.test(char), true, JSON.stringify(char));
  }
  for (const char of others) {
    assert.equal(isWordChar(char), false, JSON.stringify(char));
    assert.equal(WORD_CHAR.test(char), false, JSON.stringify(char));
  }
  assert.equal(isWordChar(undefined), false);
});

test("the ASCII shortcut of isWordChar agrees with the class for every ASCII character", () => {
  for (let code = 0; code < 128; code++) {
    const char = String.fromCharCode(code);
    assert.equal(isWordChar(char), WORD_CHAR.test(char), `U+${code.toString(16)}`);
  }
});

test("a repeat of the cursor line starts at the line's start, after a space or at a word, and is 2 or more characters", () => {
  const cases: Array<[before: string, candidates: string[]]> = [
    ["function add(a, b) {\n  return a", ["  return a", "return a"]],
    ["const value = compu", ["const value = compu", "value = compu", "= compu", "compu"]],
    ["items.map(item => ", ["items.map(item => ", "map(item => ", "item => ", "=> "]],
    ['const s = "', ['const s = "', 's = "', '= "']],
    ["f((", ["f(("]],
    ["x", []],
    ["first();\n", []],
    ["if (x) {\n    ", []],
    ["a.$el", ["a.$el", "$el"]],
  ];
  for (const [before, candidates] of cases)
    assert.deepEqual(typedRepeatCandidates(before), candidates, JSON.stringify(before));
});

test("only the last 256 characters of the cursor line are compared, and a cut there is no line start", () => {
  const line = `${"x".repeat(300)} tail`;
  assert.deepEqual(typedRepeatCandidates(line), ["tail"]);
  assert.deepEqual(typedRepeatCandidates("y".repeat(256)), ["y".repeat(256)]);
  assert.deepEqual(typedRepeatCandidates("y".repeat(257)), []);
});

test("the repeat is the longest candidate, then the longest one after it, so applying the rule twice drops nothing more", () => {
  const cases: Array<[before: string, text: string, repeat: string]> = [
    ["function add(a, b) {\n  return a", "  return a + b;", "  return a"],
    ["function add(a, b) {\n  return a", "return a + b;", "return a"],
    ["const fruit = ba", "banana;", "ba"],
    ["const fruit = ba", "anana;", ""],
    ["const xs = [1, 2, 3, 1, 2, 3", ", 1, 2, 3", ""],
    ["ok ok ok ok", " ok", ""],
    ["  go", "  go  go();", "  go  go"],
    ["x = ab", "ababc", "abab"],
    ["x = ab", "ab", "ab"],
  ];
  for (const [before, text, repeat] of cases) {
    const length = typedRepeatLength(before, text);
    assert.equal(text.slice(0, length), repeat, JSON.stringify([before, text]));
    assert.equal(typedRepeatLength(before, text.slice(length)), 0, JSON.stringify([before, text]));
  }
});
