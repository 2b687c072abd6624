import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createPostprocessor } from "./index";
import { countWords, context, whole } from "./testing";

describe("postprocess: text already after the cursor", () => {
  it("stops before a closing bracket that is already there, and reports done", () => {
    const post = createPostprocessor({
      context: context("draw(", ");\nnext();"),
      maxTokens: 100,
      countTokens: countWords,
    });
    assert.equal(post.push("canvas, 10"), "canvas, 10");
    assert.equal(post.done, false);
    assert.equal(post.push(");\nnext();"), "");
    assert.equal(post.done, true);
    assert.equal(post.end(), "");
    assert.equal(post.finishReason, "stop");
  });

  it("does not mistake a bracket the output opened itself for the one after the cursor", () => {
    assert.equal(whole(context("call(", ")"), "f(x), g(y));").text, "f(x), g(y)");
  });

  it("stops before a line equal to the first non-blank line after the cursor, without doubling the line break", () => {
    const ctx = context("if (ok) {\n  start();", "\n\n  finish();\n}");
    assert.equal(whole(ctx, "\n  report();\n  finish();\n}").text, "\n  report();");
  });

  it("stops where the output reaches the rest of the cursor line, matching whole words only", () => {
    assert.equal(whole(context("const total = ", "price * qty;"), "base + price * qty;").text, "base + ");
    assert.equal(whole(context("const total = ", "count;"), "discount;").text, "discount;");
  });

  it("leaves the indentation of the repeated line to the text after the cursor", () => {
    assert.equal(whole(context("{\n", "  }\n"), "  return 1;\n  }\n").text, "  return 1;\n");
  });

  it("does not double whitespace the text after the cursor already starts with", () => {
    assert.equal(whole(context("call(a,", " b)"), " b)").text, "");
    assert.equal(whole(context("{\n", "  }"), "  }").text, "");
    assert.equal(whole(context("const total = ", "price * qty;"), "base + price * qty;").text, "base + ");
  });

  it("emits nothing when the output is exactly what follows the cursor", () => {
    const result = whole(context("foo(a", ")"), ")");
    assert.equal(result.text, "");
  });
});
