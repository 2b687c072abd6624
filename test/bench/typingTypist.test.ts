import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_TYPIST, acceptance, nextGap, nextKeystroke, seededRandom } from "./typingTypist";

const never = { ...DEFAULT_TYPIST, typoRate: 0 };

test("the same seed gives the same numbers, all in [0, 1)", () => {
  const a = seededRandom(42);
  const b = seededRandom(42);
  const c = seededRandom(43);
  const first = Array.from({ length: 1_000 }, a);
  assert.deepEqual(first, Array.from({ length: 1_000 }, b));
  assert.notDeepEqual(first.slice(0, 10), Array.from({ length: 10 }, c));
  assert.ok(first.every((x) => x >= 0 && x < 1));
});

test("keystroke gaps average 8 characters a second within the jitter; a line break is always followed by a pause", () => {
  const random = seededRandom(1);
  const gaps = Array.from({ length: 5_000 }, () => nextGap(random, DEFAULT_TYPIST, "x"));
  assert.ok(gaps.every((g) => g.kind === "typing" && g.ms >= 85 && g.ms <= 165));
  const mean = gaps.reduce((sum, g) => sum + g.ms, 0) / gaps.length;
  assert.ok(Math.abs(mean - 125) < 2, `mean ${mean}`);
  const afterEnter = nextGap(random, DEFAULT_TYPIST, "\n    ");
  assert.equal(afterEnter.kind, "pause");
  assert.ok(afterEnter.ms >= 400 && afterEnter.ms <= 1_500);
});

test("punctuation is followed by a pause about as often as the model says", () => {
  const random = seededRandom(3);
  const pauses = Array.from({ length: 4_000 }, () => nextGap(random, DEFAULT_TYPIST, "(")).filter(
    (g) => g.kind === "pause",
  ).length;
  assert.ok(Math.abs(pauses / 4_000 - DEFAULT_TYPIST.punctuationPause) < 0.03, `${pauses} pauses`);
});

test("Enter brings the next line's indentation with it; a blank line gets none", () => {
  const random = seededRandom(1);
  assert.deepEqual(nextKeystroke(random, never, "a {\n    b;\n}\n", "a {"), {
    kind: "type",
    text: "\n    ",
    typo: false,
  });
  assert.deepEqual(nextKeystroke(random, never, "a;\n\n  b", "a;"), { kind: "type", text: "\n", typo: false });
  assert.deepEqual(nextKeystroke(random, never, "a;\n\n  b", "a;\n"), { kind: "type", text: "\n  ", typo: false });
});

test("a typo is a wrong letter, deleted by the next keystroke; the end of the text ends the typing", () => {
  const random = seededRandom(9);
  const sloppy = { ...DEFAULT_TYPIST, typoRate: 1 };
  const key = nextKeystroke(random, sloppy, "let", "");
  assert.ok(key?.kind === "type" && key.typo && key.text !== "l" && /^[a-z]$/.test(key.text), JSON.stringify(key));
  assert.deepEqual(nextKeystroke(random, sloppy, "let", key.text), { kind: "backspace" });
  assert.deepEqual(
    nextKeystroke(random, sloppy, "a;", "a"),
    { kind: "type", text: ";", typo: false },
    "only letters are mistyped",
  );
  assert.equal(nextKeystroke(random, never, "let", "let"), undefined);
});

test("the typist takes the whole suggestion only when the file goes on with exactly that", () => {
  assert.deepEqual(acceptance("count++;", "count++;\n}"), { kind: "all", text: "count++;" });
  assert.equal(acceptance("count--;", "count++;\n}"), undefined);
  assert.equal(acceptance("", "anything"), undefined);
});

test("the first line of a longer suggestion is taken when the file has that whole line", () => {
  assert.deepEqual(acceptance("a = 1;\n  b = 2;", "a = 1;\n  c = 3;"), { kind: "line", text: "a = 1;" });
  assert.equal(acceptance("a = 1;\n  b = 2;", "a = 1; // one\n"), undefined, "the file's line goes on");
  assert.equal(acceptance(" \n  b = 2;", " \n  c"), undefined, "a blank first line is not worth a key");
});
