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
  const cjk = Array.from({ length: 16_384 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20_000))).join("");
  for (const text of [cjk, "a".repeat(16_384), " ".repeat(16_384), "😀".repeat(8_192)]) {
    const started = performance.now();
    assert.ok(countTokens(text) > 0);
    assert.ok(performance.now() - started < 400, `took ${performance.now() - started} ms`);
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
