import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createPostprocessor } from "./index";
import { countWords, context, whole, ADD_BEFORE } from "./testing";

describe("postprocess: repeats of what was already typed", () => {
  it("drops a restatement of the typed part of the current line", () => {
    assert.equal(whole(context(ADD_BEFORE, "\n}"), "return a + b;").text, " + b;");
    assert.equal(whole(context(ADD_BEFORE, "\n}"), "  return a + b;").text, " + b;");
  });

  it("drops a restatement of the partial word at the cursor", () => {
    assert.equal(whole(context("const value = compu"), "compute(input);").text, "te(input);");
  });

  it("keeps output that does not restate a whole line, statement or word", () => {
    assert.equal(whole(context("const fruit = ba"), "nana;").text, "nana;");
    assert.equal(whole(context("const fruit = ba"), "anana;").text, "anana;");
    assert.equal(whole(context("first();\n"), "first();").text, "first();");
  });

  it("drops a restatement that starts at a word after a bracket or a dot, not only after a space", () => {
    assert.equal(whole(context("items.map(item => "), "item => item.id)").text, "item.id)");
    assert.equal(whole(context("  return this.cach"), "cache.get(key);").text, "e.get(key);");
  });

  it("keeps what follows the cursor's indentation, which may be the model nesting deeper", () => {
    assert.equal(whole(context("if (x) {\n    "), "    return 1;").text, "    return 1;");
  });

  it("drops a restatement made twice, so a client applying the same rule afterwards finds nothing to drop", () => {
    assert.equal(whole(context("  go"), "  go  go();").text, "();");
    assert.equal(whole(context("x = ab"), "ababc").text, "c");
  });

  it("holds the start back only while it could still be a repeat", () => {
    const post = createPostprocessor({ context: context(ADD_BEFORE), maxTokens: 100, countTokens: countWords });
    assert.equal(post.push("ret"), "");
    assert.equal(post.push("urn a + b;"), " + b;");
    const fresh = createPostprocessor({ context: context(ADD_BEFORE), maxTokens: 100, countTokens: countWords });
    assert.equal(fresh.push("x * 2 "), "x * 2");
  });
});
