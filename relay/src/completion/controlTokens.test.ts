import assert from "node:assert/strict";
import { test } from "node:test";
import { CONTROL_TOKENS, NEUTRALISER, neutraliseControlTokens } from "./controlTokens";

const ALL = [...new Set(Object.values(CONTROL_TOKENS).flat())];

test("every listed control token of every family is neutralised, with nothing removed", () => {
  for (const token of ALL) {
    const { text, changed } = neutraliseControlTokens(`a${token}b`);
    assert.equal(changed, true, token);
    assert.equal(text.includes(token), false, token);
    assert.equal(text.split(NEUTRALISER).join(""), `a${token}b`, token);
  }
});

test("no listed token survives in text that packs them together, repeats or nests them", () => {
  const packed = ALL.join("") + ALL.join("\n") + ALL.map((t) => t + t).join(" ");
  const { text } = neutraliseControlTokens(packed);
  for (const token of ALL) assert.equal(text.includes(token), false, token);
  assert.equal(text.split(NEUTRALISER).join(""), packed);
});

test("tokens of the shared shapes that no list names are caught too", () => {
  for (const token of ["<|reserved_special_token_5|>", "<|fim▁begin|>", "<｜tool▁calls▁begin｜>", "<|tool_call|>"])
    assert.equal(neutraliseControlTokens(token).text.includes(token), false, token);
});

test("ordinary code is left alone and reported unchanged", () => {
  for (const code of [
    "def add(a, b):\n    return a + b\n",
    "const x = a <| b |> c; // F#-style pipes with spaces",
    "parser <|> other",
    "if (a < b && c > d) {}",
    "<div><span>[x]</span></div>",
    "let v: Vec<String> = vec![];",
  ]) {
    assert.deepEqual(neutraliseControlTokens(code), { text: code, changed: false }, code);
  }
});

test("the same text neutralised twice is neutralised once", () => {
  const once = neutraliseControlTokens("<|im_start|>user\n[INST]<fim_prefix>").text;
  assert.deepEqual(neutraliseControlTokens(once), { text: once, changed: false });
});
