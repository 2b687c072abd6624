import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { countTokens } from "gpt-tokenizer";
import ranks from "gpt-tokenizer/bpeRanks/o200k_base";
import { O200kCounter, buildO200kTable, loadO200kCounter } from "./o200k";

/** gpt-tokenizer's count with special-token strings as text: what `usage` reported before the compact table. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };
const reference = (text: string) => countTokens(text, AS_TEXT);

const root = fileURLToPath(new URL("../../..", import.meta.url));

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name === "dist") continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sourceFiles(path, out);
    else if (/\.(ts|md|json|css|html)$/.test(entry.name)) out.push(path);
  }
  return out;
}

/** A small deterministic generator, so a failure names a text that can be made again. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** Pieces of every kind the pre-tokeniser treats differently, and text that is not valid UTF-16. */
const ALPHABET = [
  ..."abcXYZ019 _-./\\'\"`{}()[]<>;:,!?@#$%^&*+=|~",
  " ",
  "  ",
  "\t",
  "\n",
  "\r\n",
  "\r",
  "\u00a0",
  "\u3000",
  "'s",
  "'LL",
  "'Re",
  "don't",
  "日本語",
  "中文字符",
  "한국어",
  "Ελληνικά",
  "Кириллица",
  "العربية",
  "עברית",
  "हिन्दी",
  "தமிழ்",
  "ไทย",
  "e\u0301",
  "\u0301",
  "ǅ",
  "ʰ",
  "😀",
  "👩‍💻",
  "🇫🇷",
  "\ud800",
  "\udfff",
  "\ud83d",
  "\ufffd",
  "\u0000",
  "\u200b",
  "１２３",
  "12345678",
  "<|endoftext|>",
  "<|fim_prefix|>",
  "<|im_start|>",
];

test("the table built from gpt-tokenizer's ranks counts every source file of this repository as gpt-tokenizer does", () => {
  const counter = new O200kCounter(buildO200kTable(ranks));
  const files = ["relay/src", "shared/src", "extension/src", "docs"].flatMap((dir) => sourceFiles(join(root, dir)));
  assert.ok(files.length > 100, `${files.length} files`);
  for (const file of files) {
    const text = readFileSync(file, "utf8").slice(0, 20_000);
    assert.equal(counter.count(text), reference(text), file);
  }
});

test("the table counts generated text of every script, emoji, marks and lone surrogates as gpt-tokenizer does", () => {
  const counter = new O200kCounter(buildO200kTable(ranks));
  const next = random(23);
  for (let i = 0; i < 3_000; i++) {
    const parts = 1 + Math.floor(next() * 40);
    let text = "";
    for (let j = 0; j < parts; j++) text += ALPHABET[Math.floor(next() * ALPHABET.length)];
    assert.equal(counter.count(text), reference(text), JSON.stringify(text));
  }
});

test("the table the build wrote is the one gpt-tokenizer's ranks give", () => {
  const built = buildO200kTable(ranks);
  const counter = loadO200kCounter();
  for (const text of ["", "hello world", "function add(a, b) {\n  return a + b;\n}", "日本語のテキスト", "\ud800x"]) {
    assert.equal(counter.count(text), reference(text), JSON.stringify(text));
  }
  const written = readFileSync(join(root, "relay/dist/o200k.bin"));
  assert.ok(Buffer.from(built).equals(written), "dist/o200k.bin is stale: run `npm run build -w relay`");
});

test("a file that is not a table is refused rather than miscounting", () => {
  assert.throws(() => new O200kCounter(new Uint8Array(64)), /not an o200k table/);
});
