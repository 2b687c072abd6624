import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createPostprocessor } from "./index";
import { countWords, context, generator, randomSplit } from "./testing";

describe("postprocess: stop sequences", () => {
  const STOPS = ["<|file_sep|>", "<|endoftext|>", "<|fim_prefix|>"];
  const withStops = (fragments: string[], before = "const total = ", after = "") => {
    const post = createPostprocessor({
      context: context(before, after),
      maxTokens: 200,
      countTokens: countWords,
      stops: STOPS,
    });
    let text = "";
    for (const fragment of fragments) {
      text += post.push(fragment);
      if (post.done) break;
    }
    return { text: text + post.end(), done: post.done, finishReason: post.finishReason };
  };

  it("cuts the output before the first stop sequence the model wrote as text", () => {
    assert.deepEqual(withStops(["sum(items);<|file_sep|>src/other.ts\nexport const x = 1;"]), {
      text: "sum(items);",
      done: true,
      finishReason: "stop",
    });
    assert.equal(withStops(["a<|endoftext|>b<|file_sep|>c"]).text, "a");
  });

  it("cuts at the same place however the text is split, across a stop sequence too", () => {
    const output = "sum(items) + tax;<|fim_prefix|>junk<|file_sep|>more";
    for (let cut = 1; cut < output.length; cut++) {
      assert.equal(withStops([output.slice(0, cut), output.slice(cut)]).text, "sum(items) + tax;", `split at ${cut}`);
    }
    const random = generator(7);
    for (let round = 0; round < 50; round++)
      assert.equal(withStops(randomSplit(output, random)).text, "sum(items) + tax;");
  });

  it("holds back only what could still begin a stop sequence, and releases it when it does not", () => {
    const post = createPostprocessor({
      context: context("const total = "),
      maxTokens: 200,
      countTokens: countWords,
      stops: STOPS,
    });
    const first = post.push("a + b <|fi");
    assert.ok(first.startsWith("a +") && !first.includes("<"), `held the possible stop: ${JSON.stringify(first)}`);
    const rest = post.push("x|> c;") + post.end();
    assert.equal(first + rest, "a + b <|fix|> c;");
    assert.equal(post.finishReason, "stop");
  });

  it("text that ends in half a stop sequence keeps it", () => {
    assert.deepEqual(withStops(["if (a <", "|end"]), { text: "if (a <|end", done: true, finishReason: "stop" });
  });

  it("without stop sequences the output is untouched", () => {
    const post = createPostprocessor({ context: context("const total = "), maxTokens: 200, countTokens: countWords });
    assert.equal(post.push("a <|file_sep|> b"), "a <|file_sep|> b");
  });
});
