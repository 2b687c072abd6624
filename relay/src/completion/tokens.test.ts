import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { encode } from "gpt-tokenizer";
import { countTokens } from "./tokens";

test("counts short texts exactly as the tokenizer does", () => {
  for (const text of ["", "hello world", "function add(a, b) {\n  return a + b;\n}", "日本語のテキスト"]) {
    assert.equal(countTokens(text), encode(text).length);
  }
});

test("counts long source code within two per cent of counting it whole", () => {
  const source = readFileSync(
    new URL("../../../node_modules/typescript/lib/lib.es5.d.ts", import.meta.url),
    "utf8",
  ).slice(0, 32_768);
  const exact = encode(source).length;
  const counted = countTokens(source);
  assert.ok(Math.abs(counted - exact) / exact < 0.02, `${counted} vs ${exact}`);
});

test("counts 16k characters without spaces in milliseconds, not seconds", () => {
  // Each kind is counted in three texts of its own (the counter caches the pieces it has counted, so a text counted
  // again would cost nothing), and the fastest counts: on a loaded CI machine one count once took 446 ms, while the
  // slowness this guards against took seconds every time.
  const cjk = (seed: number) =>
    Array.from({ length: 16_384 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919 + seed * 101) % 20_000))).join("");
  const kinds: Array<[string, (seed: number) => string]> = [
    ["CJK", cjk],
    ["one letter", (seed) => "abc"[seed]!.repeat(16_384)],
    ["whitespace", (seed) => " \t\n"[seed]!.repeat(16_384)],
    ["emoji", (seed) => ["😀", "😁", "😂"][seed]!.repeat(8_192)],
  ];
  for (const [kind, make] of kinds) {
    const tries = [0, 1, 2].map((seed) => {
      const text = make(seed);
      const started = performance.now();
      assert.ok(countTokens(text) > 0);
      return performance.now() - started;
    });
    assert.ok(Math.min(...tries) < 400, `${kind}: took ${tries.map((ms) => ms.toFixed(1)).join(", ")} ms`);
  }
});

test("counts special-token strings as the text they are, never throwing (issue 19)", () => {
  for (const token of [
    "<|endoftext|>",
    "<|endofprompt|>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|im_start|>",
  ]) {
    assert.equal(countTokens(token), encode(token, { disallowedSpecial: new Set() }).length, token);
    assert.ok(countTokens(token) > 1, `${token} is more than one special token's id`);
    const long = `${"x ".repeat(200)}${token}`.repeat(3);
    assert.ok(countTokens(long) > 600, "long texts cut in pieces count it too");
  }
});
