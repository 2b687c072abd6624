import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CLOSERS, OPENERS } from "../text";
import { createPostprocessor } from "./index";
import { SuffixOverlapStop } from "./suffixOverlap";
import { countWords, context, generator, randomSplit, whole } from "./testing";

/** The stage's private state, which the former loop below works on. */
type Internals = {
  pending: string;
  heldWhitespace: string;
  depth: number;
  lineHasContent: boolean;
  lastChar: string;
  stopped: boolean;
  overlapAt(text: string, index: number, ending: boolean): "overlap" | "none" | "wait";
  cutWhitespace(): string;
  takeWhitespace(): string;
};

/** A stage whose scan is the loop it had before it let text through in slices: a string per character. */
function formerStage(before: string, after: string): SuffixOverlapStop {
  const stage = new SuffixOverlapStop(before, after);
  const self = stage as unknown as Internals & { scan(ending: boolean): string };
  self.scan = (ending) => {
    const text = self.pending;
    let out = "";
    let index = 0;
    for (; index < text.length; index++) {
      const char = text[index] ?? "";
      if (!/\s/.test(char)) {
        const verdict = self.overlapAt(text, index, ending);
        if (verdict === "wait") break;
        if (verdict === "overlap") {
          out += self.cutWhitespace();
          self.stopped = true;
          self.pending = "";
          return out;
        }
        out += self.takeWhitespace() + char;
        self.lineHasContent = true;
        if (OPENERS.includes(char)) self.depth++;
        else if (CLOSERS.includes(char)) self.depth--;
      } else {
        self.heldWhitespace += char;
        if (char === "\n") self.lineHasContent = false;
        if (self.heldWhitespace.length > 256) {
          out += self.heldWhitespace.slice(0, -256);
          self.heldWhitespace = self.heldWhitespace.slice(-256);
        }
      }
      self.lastChar = char;
    }
    self.pending = text.slice(index);
    return out;
  };
  return stage;
}

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

  it("emits what the former character-at-a-time loop emitted, push by push, on generated texts and splits", () => {
    const pieces = ["a", "b", "x1", "é", "字", "\u{1f600}", "(", ")", "{", "}", "[", "]", ";", ",", ".", "\ud800"];
    const spaces = [" ", "\t", "\n", "\r\n", "\u00a0", "\u2028", "\u3000", "\ufeff"];
    const random = generator(23);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
    const phrase = (length: number) => {
      let text = "";
      while (text.length < length) {
        const roll = random();
        if (roll < 0.03) text += pick(spaces).repeat(200 + Math.floor(random() * 120));
        else if (roll < 0.35) text += pick(spaces).repeat(1 + Math.floor(random() * 4));
        else text += pick(pieces).repeat(1 + Math.floor(random() * 3));
      }
      return text;
    };
    let stopped = 0;
    for (let round = 0; round < 3000; round++) {
      const before = phrase(Math.floor(random() * 30));
      const after = phrase(Math.floor(random() * 40));
      // The output often runs into the text after the cursor, whole or in part, so the stage stops or waits.
      const output =
        random() < 0.5
          ? phrase(Math.floor(random() * 60)) + after.slice(0, Math.floor(random() * (after.length + 1)))
          : phrase(Math.floor(random() * 600));
      const now = new SuffixOverlapStop(before, after);
      const former = formerStage(before, after);
      const what = `round ${round}: ${JSON.stringify({ before, after, output })}`;
      for (const fragment of randomSplit(output, random)) {
        assert.equal(now.push(fragment), former.push(fragment), what);
        assert.equal(now.stopped, former.stopped, what);
        if (now.stopped) break;
      }
      if (now.stopped) stopped++;
      else assert.equal(now.end(), former.end(), what);
      assert.equal(now.stopped, former.stopped, what);
    }
    // The texts reach every path: a fifth or more of them stop at an overlap.
    assert.ok(stopped > 600, `${stopped} of 3,000 stopped`);
  });
});
