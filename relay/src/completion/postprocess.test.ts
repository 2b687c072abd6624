import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encode } from "gpt-tokenizer";
import type { FinishReason, TabContext } from "@tab-relay/shared";
import { createPostprocessor } from "./postprocess";

const countWords = (text: string) => text.split(/\s+/).filter((word) => word !== "").length;

function context(before: string, after = "", extra: Partial<TabContext> = {}): TabContext {
  return {
    surface: "code",
    workspace_slug: "acme",
    entity_id: "doc-1",
    document_type: "plaintext",
    active_text_before_cursor: before,
    active_text_after_cursor: after,
    ...extra,
  };
}

interface Result {
  text: string;
  finishReason: FinishReason;
}

/** Pushes `fragments` in order the way the relay does (stopping once done) and collects what is emitted. */
function run(ctx: TabContext, fragments: string[], maxTokens = 200, countTokens = countWords): Result {
  const post = createPostprocessor({ context: ctx, maxTokens, countTokens });
  let text = "";
  for (const fragment of fragments) {
    text += post.push(fragment);
    if (post.done) break;
  }
  text += post.end();
  return { text, finishReason: post.finishReason };
}

const whole = (ctx: TabContext, output: string, maxTokens = 200, countTokens = countWords) => run(ctx, [output], maxTokens, countTokens);

/** Deterministic pseudo-random generator, so a failing split can be reproduced. */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

function randomSplit(text: string, random: () => number): string[] {
  const pieces: string[] = [];
  for (let start = 0; start < text.length; ) {
    const length = 1 + Math.floor(random() * 12);
    pieces.push(text.slice(start, start + length));
    start += length;
  }
  return pieces;
}

const ADD_BEFORE = "function add(a, b) {\n  return a";

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

  it("holds the start back only while it could still be a repeat", () => {
    const post = createPostprocessor({ context: context(ADD_BEFORE), maxTokens: 100, countTokens: countWords });
    assert.equal(post.push("ret"), "");
    assert.equal(post.push("urn a + b;"), " + b;");
    const fresh = createPostprocessor({ context: context(ADD_BEFORE), maxTokens: 100, countTokens: countWords });
    assert.equal(fresh.push("x * 2 "), "x * 2");
  });
});

describe("postprocess: text already after the cursor", () => {
  it("stops before a closing bracket that is already there, and reports done", () => {
    const post = createPostprocessor({ context: context("draw(", ");\nnext();"), maxTokens: 100, countTokens: countWords });
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

describe("postprocess: chat-model wrapping", () => {
  it("strips a lead-in line, the code fence and the explanation after it", () => {
    const output = "Sure! Here is the completion:\n```typescript\nreturn a + b;\n}\n```\nThis code returns the sum of a and b.";
    assert.equal(whole(context("function add(a, b) {\n  "), output).text, "return a + b;\n}");
  });

  it("strips a bare fence and blank lines after a lead-in", () => {
    assert.equal(whole(context("x = "), "Here's the code:\n\n```\n42\n```").text, "42");
    assert.equal(whole(context("x = "), "```python\n42\n```\n\nThe value is 42.").text, "42");
  });

  it("handles CRLF line breaks around fences", () => {
    assert.equal(whole(context("x = "), "```js\r\n1 +\r\n2\r\n```\r\nDone.").text, "1 +\r\n2");
  });

  it("keeps prose that merely starts like a lead-in", () => {
    const notes = context("Plan:\n", "", { surface: "notes" });
    assert.equal(whole(notes, "Here we go again, said Tom.\nAnd he left.").text, "Here we go again, said Tom.\nAnd he left.");
    assert.equal(whole(notes, "Sure!").text, "Sure!");
    assert.equal(whole(context("Hi Ann,", "", { surface: "messages" }), " sure, I'll be there at five.").text, " sure, I'll be there at five.");
  });

  it("keeps a fence naming a language at the start of a markdown note, but strips one after a lead-in", () => {
    const note = context("Example:\n", "", { surface: "notes", document_type: "markdown" });
    assert.equal(whole(note, "```python\nprint(1)\n```").text, "```python\nprint(1)\n```");
    assert.equal(whole(note, "Here is the completion:\n```python\nprint(1)\n```").text, "print(1)");
    assert.equal(whole(note, "```markdown\n- first\n- second\n```").text, "- first\n- second");
  });
});

describe("postprocess: single-line surfaces", () => {
  it("stops messages, tasks and calendar at the first line break after some content", () => {
    for (const surface of ["messages", "tasks", "calendar"]) {
      const extra = surface === "tasks" ? { surface, taskboard_file_id: "board" } : { surface };
      const result = whole(context("Hi Bob, ", "", extra), "see you at noon.\nBest,\nAnn");
      assert.deepEqual(result, { text: "see you at noon.", finishReason: "stop" }, surface);
    }
  });

  it("keeps several lines on other surfaces", () => {
    assert.equal(whole(context("Hi Bob, ", "", { surface: "email" }), "see you at noon.\nBest,\nAnn").text, "see you at noon.\nBest,\nAnn");
  });
});

describe("postprocess: token limit", () => {
  it("cuts at maxTokens and reports length", () => {
    const result = whole(context("Notes: ", "", { surface: "notes" }), "one two three four five", 3);
    assert.deepEqual(result, { text: "one two three", finishReason: "length" });
  });

  it("reports stop when the output fits exactly", () => {
    assert.deepEqual(whole(context("Notes: ", "", { surface: "notes" }), "one two three", 3), { text: "one two three", finishReason: "stop" });
  });

  it("cuts exactly at the limit of the GPT tokenizer", () => {
    const output = "The relay streams each suggestion through the postprocessor, which keeps only what the editor can show.";
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

describe("postprocess: streaming", () => {
  const fixtures: Array<{ name: string; ctx: TabContext; output: string; maxTokens?: number }> = [
    { name: "typed repeat", ctx: context(ADD_BEFORE, "\n}"), output: "  return a + b;\n}" },
    { name: "closing bracket", ctx: context("draw(", ");\nnext();"), output: "canvas, f(10), [1, 2]);\nnext();" },
    { name: "next line", ctx: context("if (ok) {\n  start();", "\n\n  finish();\n}"), output: "\n  report();\n\n  finish();\n}" },
    { name: "rest of line", ctx: context("const total = ", "price * qty;"), output: "base + price * qty;" },
    {
      name: "chatter and fences",
      ctx: context("function add(a, b) {\n  "),
      output: "Sure!\n\nHere is the completion:\n```typescript\nreturn a + b;\n}\n```\nThis code returns the sum.",
    },
    { name: "crlf fence", ctx: context("x = "), output: "```js\r\n1 +\r\n2\r\n```\r\nDone." },
    { name: "single line", ctx: context("Hi Bob, ", "", { surface: "messages" }), output: "\nsee you at noon.\r\nBest,\nAnn" },
    { name: "token limit", ctx: context("Notes: ", "", { surface: "notes" }), output: "one two  three\n\nfour five six seven", maxTokens: 5 },
    { name: "long whitespace", ctx: context("a(", ")"), output: `x${" ".repeat(600)}y${"\n".repeat(300)})` },
    { name: "unicode", ctx: context("名前 = ", "", { surface: "docs" }), output: "「こんにちは」😀 and more words 😀😀 here", maxTokens: 4 },
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
    const pieces = ["Sure!", "Here is the completion:", "```ts", "```", "\n", "\r\n", "  ", "return", " a", " + b;", "}", ")", "(", "{", "finish();", "😀", "ret", "ba", "price * qty;", "\n\n"];
    const befores = ["function add(a, b) {\n  return a", "draw(", "x = ba", "", "if (ok) {\n  start();\n", "Hi "];
    const afters = ["", ")", ");\nnext();", "\n  finish();\n}", "  }", "price * qty;", "\n\n}"];
    for (let round = 0; round < 300; round++) {
      const output = Array.from({ length: 1 + Math.floor(random() * 25) }, () => pick(pieces)).join("");
      const ctx = context(pick(befores), pick(afters), { surface: pick(["code", "notes", "messages"]), document_type: pick(["plaintext", "markdown"] as const) });
      const maxTokens = 1 + Math.floor(random() * 20);
      const countTokens = random() < 0.5 ? countWords : (text: string) => encode(text).length;
      const expected = whole(ctx, output, maxTokens, countTokens);
      const pieces1 = randomSplit(output, random);
      assert.deepEqual(run(ctx, pieces1, maxTokens, countTokens), expected, JSON.stringify({ ctx, output, pieces1, maxTokens }));
    }
  });

  it("holds back no more than a few hundred characters of a long stream", () => {
    const line = "  value = compute(value, step) + offset;   ";
    const output = Array.from({ length: 80 }, () => line).join("\n") + " ".repeat(1000) + "end";
    const post = createPostprocessor({ context: context("let value = 0;\n", "\n}"), maxTokens: 500, countTokens: countWords });
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
    const post = createPostprocessor({ context: context("Hi ", "", { surface: "messages" }), maxTokens: 50, countTokens: countWords });
    assert.equal(post.push("there\nsecond line"), "there");
    assert.equal(post.done, true);
    assert.equal(post.push(" more"), "");
    assert.equal(post.end(), "");
  });
});

describe("postprocess: stop sequences", () => {
  const STOPS = ["<|file_sep|>", "<|endoftext|>", "<|fim_prefix|>"];
  const withStops = (fragments: string[], before = "const total = ", after = "") => {
    const post = createPostprocessor({ context: context(before, after), maxTokens: 200, countTokens: countWords, stops: STOPS });
    let text = "";
    for (const fragment of fragments) {
      text += post.push(fragment);
      if (post.done) break;
    }
    return { text: text + post.end(), done: post.done, finishReason: post.finishReason };
  };

  it("cuts the output before the first stop sequence the model wrote as text", () => {
    assert.deepEqual(withStops(["sum(items);<|file_sep|>src/other.ts\nexport const x = 1;"]), { text: "sum(items);", done: true, finishReason: "stop" });
    assert.equal(withStops(["a<|endoftext|>b<|file_sep|>c"]).text, "a");
  });

  it("cuts at the same place however the text is split, across a stop sequence too", () => {
    const output = "sum(items) + tax;<|fim_prefix|>junk<|file_sep|>more";
    for (let cut = 1; cut < output.length; cut++) {
      assert.equal(withStops([output.slice(0, cut), output.slice(cut)]).text, "sum(items) + tax;", `split at ${cut}`);
    }
    const random = generator(7);
    for (let round = 0; round < 50; round++) assert.equal(withStops(randomSplit(output, random)).text, "sum(items) + tax;");
  });

  it("holds back only what could still begin a stop sequence, and releases it when it does not", () => {
    const post = createPostprocessor({ context: context("const total = "), maxTokens: 200, countTokens: countWords, stops: STOPS });
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
