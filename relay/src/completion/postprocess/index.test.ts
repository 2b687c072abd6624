import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encode } from "gpt-tokenizer";
import type { TabContext } from "@tab-relay/shared";
import { createPostprocessor } from "./index";
import { countWords, context, run, whole, generator, randomSplit, ADD_BEFORE } from "./testing";

describe("postprocess: streaming", () => {
  const fixtures: Array<{ name: string; ctx: TabContext; output: string; maxTokens?: number }> = [
    { name: "typed repeat", ctx: context(ADD_BEFORE, "\n}"), output: "  return a + b;\n}" },
    { name: "closing bracket", ctx: context("draw(", ");\nnext();"), output: "canvas, f(10), [1, 2]);\nnext();" },
    {
      name: "next line",
      ctx: context("if (ok) {\n  start();", "\n\n  finish();\n}"),
      output: "\n  report();\n\n  finish();\n}",
    },
    { name: "rest of line", ctx: context("const total = ", "price * qty;"), output: "base + price * qty;" },
    {
      name: "chatter and fences",
      ctx: context("function add(a, b) {\n  "),
      output: "Sure!\n\nHere is the completion:\n```typescript\nreturn a + b;\n}\n```\nThis code returns the sum.",
    },
    { name: "crlf fence", ctx: context("x = "), output: "```js\r\n1 +\r\n2\r\n```\r\nDone." },
    {
      name: "single line",
      ctx: context("Hi Bob, ", "", { surface: "messages" }),
      output: "\nsee you at noon.\r\nBest,\nAnn",
    },
    {
      name: "token limit",
      ctx: context("Notes: ", "", { surface: "notes" }),
      output: "one two  three\n\nfour five six seven",
      maxTokens: 5,
    },
    { name: "long whitespace", ctx: context("a(", ")"), output: `x${" ".repeat(600)}y${"\n".repeat(300)})` },
    {
      name: "unicode",
      ctx: context("名前 = ", "", { surface: "docs" }),
      output: "「こんにちは」😀 and more words 😀😀 here",
      maxTokens: 4,
    },
  ];

  for (const fixture of fixtures) {
    it(`emits the same text however the output is split: ${fixture.name}`, () => {
      const expected = whole(fixture.ctx, fixture.output, fixture.maxTokens);
      assert.deepEqual(run(fixture.ctx, [...fixture.output], fixture.maxTokens), expected, "one char at a time");
      const random = generator(fixture.output.length);
      for (let round = 0; round < 25; round++) {
        const pieces = randomSplit(fixture.output, random);
        assert.deepEqual(run(fixture.ctx, pieces, fixture.maxTokens), expected, JSON.stringify(pieces));
      }
    });
  }

  it("emits the same text however it is split when counting GPT tokens", () => {
    const countTokens = (text: string) => encode(text).length;
    const output = "```ts\nconst greeting = `Hello, ${name}!`;\nconsole.log(greeting.toUpperCase());\n```";
    const ctx = context("const greeting = ");
    const expected = whole(ctx, output, 9, countTokens);
    const random = generator(3);
    for (let round = 0; round < 20; round++) {
      const pieces = randomSplit(output, random);
      assert.deepEqual(run(ctx, pieces, 9, countTokens), expected, JSON.stringify(pieces));
    }
  });

  it("emits the same text however it is split, for random outputs and cursor contexts", () => {
    const random = generator(11);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const pieces = [
      "Sure!",
      "Here is the completion:",
      "```ts",
      "```",
      "\n",
      "\r\n",
      "  ",
      "return",
      " a",
      " + b;",
      "}",
      ")",
      "(",
      "{",
      "finish();",
      "😀",
      "ret",
      "ba",
      "price * qty;",
      "\n\n",
    ];
    const befores = ["function add(a, b) {\n  return a", "draw(", "x = ba", "", "if (ok) {\n  start();\n", "Hi "];
    const afters = ["", ")", ");\nnext();", "\n  finish();\n}", "  }", "price * qty;", "\n\n}"];
    for (let round = 0; round < 300; round++) {
      const output = Array.from({ length: 1 + Math.floor(random() * 25) }, () => pick(pieces)).join("");
      const ctx = context(pick(befores), pick(afters), {
        surface: pick(["code", "notes", "messages"]),
        document_type: pick(["plaintext", "markdown"] as const),
      });
      const maxTokens = 1 + Math.floor(random() * 20);
      const countTokens = random() < 0.5 ? countWords : (text: string) => encode(text).length;
      const expected = whole(ctx, output, maxTokens, countTokens);
      const pieces1 = randomSplit(output, random);
      assert.deepEqual(
        run(ctx, pieces1, maxTokens, countTokens),
        expected,
        JSON.stringify({ ctx, output, pieces1, maxTokens }),
      );
    }
  });

  it("holds back no more than a few hundred characters of a long stream", () => {
    const line = "  value = compute(value, step) + offset;   ";
    const output = Array.from({ length: 80 }, () => line).join("\n") + " ".repeat(1000) + "end";
    const post = createPostprocessor({
      context: context("let value = 0;\n", "\n}"),
      maxTokens: 500,
      countTokens: countWords,
    });
    let pushed = 0;
    let emitted = 0;
    let maxHeld = 0;
    for (const char of output) {
      pushed += char.length;
      emitted += post.push(char).length;
      maxHeld = Math.max(maxHeld, pushed - emitted);
    }
    emitted += post.end().length;
    assert.equal(emitted, output.length);
    assert.ok(maxHeld <= 400, `held ${maxHeld}`);
  });

  it("returns nothing more once done", () => {
    const post = createPostprocessor({
      context: context("Hi ", "", { surface: "messages" }),
      maxTokens: 50,
      countTokens: countWords,
    });
    assert.equal(post.push("there\nsecond line"), "there");
    assert.equal(post.done, true);
    assert.equal(post.push(" more"), "");
    assert.equal(post.end(), "");
  });
});

describe("postprocess: a fill-in-the-middle model's output", () => {
  it("is released from its first fragment, where a chat model's could still become a lead-in", () => {
    const ctx = context("const greeting = ");
    const chat = createPostprocessor({ context: ctx, maxTokens: 50, countTokens: countWords });
    const fim = createPostprocessor({ context: ctx, maxTokens: 50, countTokens: countWords, chatWrapping: false });
    assert.equal(chat.push("he"), "", "held: it may be the start of 'Here is'");
    assert.equal(fim.push("he"), "he");
  });

  it("keeps text a chat filter would take for wrapping", () => {
    const ctx = context("// ");
    const output = "Here is the code:\n```\nx\n```";
    const fim = createPostprocessor({ context: ctx, maxTokens: 50, countTokens: countWords, chatWrapping: false });
    assert.equal(fim.push(output) + fim.end(), output);
  });
});
