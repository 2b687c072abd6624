import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encode } from "gpt-tokenizer";
import { countWords, context, run, whole } from "./testing";

describe("postprocess: token limit", () => {
  it("cuts at maxTokens and reports length", () => {
    const result = whole(context("Notes: ", "", { surface: "notes" }), "one two three four five", 3);
    assert.deepEqual(result, { text: "one two three", finishReason: "length" });
  });

  it("reports stop when the output fits exactly", () => {
    assert.deepEqual(whole(context("Notes: ", "", { surface: "notes" }), "one two three", 3), {
      text: "one two three",
      finishReason: "stop",
    });
  });

  it("cuts exactly at the limit of the GPT tokenizer", () => {
    const output =
      "The relay streams each suggestion through the postprocessor, which keeps only what the editor can show.";
    const countTokens = (text: string) => encode(text).length;
    const result = whole(context("Summary: ", "", { surface: "docs" }), output, 7, countTokens);
    assert.equal(result.finishReason, "length");
    assert.ok(output.startsWith(result.text));
    assert.ok(countTokens(result.text) <= 7, result.text);
    assert.ok(countTokens(output.slice(0, result.text.length + 1)) > 7, "the cut is as late as the budget allows");
  });

  it("does not end a cut output on whitespace, however the text was split", () => {
    const countChars = (text: string) => text.length;
    const ctx = context("Notes: ", "", { surface: "notes" });
    const expected = { text: "abcd", finishReason: "length" };
    assert.deepEqual(whole(ctx, "abcd efg", 5, countChars), expected);
    assert.deepEqual(run(ctx, [..."abcd efg"], 5, countChars), expected);
  });

  it("does not tokenize while the output is obviously within budget, and rarely once it is near", () => {
    let calls = 0;
    const counting = (text: string) => {
      calls++;
      return countWords(text);
    };
    whole(context("x"), "short output well under the limit", 500, counting);
    assert.equal(calls, 0);
    const long = Array.from({ length: 400 }, (_, index) => `word${index}`).join(" ");
    const result = whole(context("x"), long, 300, counting);
    assert.equal(countWords(result.text), 300);
    assert.ok(calls < 40, `${calls} calls`);
  });
});
