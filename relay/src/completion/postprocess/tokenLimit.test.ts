import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encode } from "gpt-tokenizer";
import { isWhitespaceCode } from "../text";
import { TokenLimit } from "./tokenLimit";
import { countWords, context, generator, randomSplit, run, whole } from "./testing";

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

  it("emits what the former character-at-a-time loop emitted, push by push", () => {
    // The loop `push` had before it grew its unit by slices, over the same private state.
    type Internals = { unit: string; unitBytes: number; unitEmitted: number; stopped: boolean };
    const former = (limit: TokenLimit, text: string): string => {
      const self = limit as unknown as Internals & {
        completeUnit(): string;
        withinBound(bytes: number): boolean;
      };
      let out = "";
      for (let index = 0; index < text.length; index++) {
        const char = text[index] ?? "";
        const boundary =
          self.unit.length >= 64 || (/\s/.test(char) && self.unit !== "" && !/\s/.test(self.unit.at(-1) ?? ""));
        if (boundary) {
          out += self.completeUnit();
          if (self.stopped) return out;
        }
        self.unit += char;
        self.unitBytes += Buffer.byteLength(
          char.charCodeAt(0) >= 0xd800 && char.charCodeAt(0) <= 0xdfff ? "\u00e9" : char,
        );
      }
      if (self.withinBound(self.unitBytes)) {
        let end = self.unit.length;
        while (end > self.unitEmitted && /[\s\ud800-\udbff]/.test(self.unit[end - 1] ?? "")) end--;
        out += self.unit.slice(self.unitEmitted, end);
        self.unitEmitted = end;
      }
      return out;
    };
    const alphabet = [
      "a",
      "b",
      "é",
      "字",
      "\u{1f600}",
      " ",
      "\t",
      "\n",
      "\u00a0",
      "\u2028",
      "\u3000",
      "\ufeff",
      "\u200b",
    ];
    const random = generator(23);
    const counters = [countWords, (text: string) => text.length, (text: string) => Buffer.byteLength(text)];
    for (let round = 0; round < 3000; round++) {
      let text = "";
      const length = Math.floor(random() * 200);
      while (text.length < length) {
        const run = random() < 0.1 ? 70 : 1 + Math.floor(random() * 6);
        const piece = alphabet[Math.floor(random() * alphabet.length)] ?? "a";
        text += piece.repeat(run);
      }
      const maxTokens = Math.floor(random() * 60);
      const count = counters[round % counters.length] ?? countWords;
      const now = new TokenLimit(maxTokens, count);
      const before = new TokenLimit(maxTokens, count);
      for (const fragment of randomSplit(text, random)) {
        assert.equal(now.push(fragment), former(before, fragment), `round ${round}: ${JSON.stringify(text)}`);
        assert.equal(now.stopped, before.stopped);
        if (now.stopped) break;
      }
      assert.equal(now.end(), before.end(), `round ${round}: ${JSON.stringify(text)}`);
    }
  });

  it("tells whitespace as /\\s/ does, on every UTF-16 code unit", () => {
    for (let code = 0; code <= 0xffff; code++)
      assert.equal(isWhitespaceCode(code), /\s/.test(String.fromCharCode(code)), code.toString(16));
  });
});
