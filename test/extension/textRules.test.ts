// The relay and the extension postprocess the same suggestion by one set of text rules (shared/src/protocol/text.ts):
// random suggestions and cursor contexts, from a seeded generator so a failure can be replayed, go through both
// sides, and where the rules are shared the sides must agree.
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import { type TabContext, isWordChar as sharedIsWordChar, typedRepeatLength } from "@tab-relay/shared";
import { lineSuffix } from "../../extension/src/core/context";
import { postprocess, stripTypedPrefix } from "../../extension/src/core/postprocess";
import { prefilter } from "../../extension/src/core/prefilter";
import { DEFAULT_SETTINGS } from "../../extension/src/core/settings";
import { inputAt } from "../../extension/src/core/testing/fixtures";
import { createPostprocessor } from "../../relay/src/completion/postprocess";
import { TypedPrefixFilter } from "../../relay/src/completion/postprocess/typedPrefix";
import { isWordChar as relayIsWordChar } from "../../relay/src/completion/text";
import { seededRandom } from "../support/seededRandom";

const ROUNDS = 2000;

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const count = (random: Random, max: number) => Math.floor(random() * (max + 1));

const WORDS = [
  "return",
  "a",
  "b",
  "item",
  "items",
  "map",
  "$el",
  "cafe\u0301",
  "x",
  "ok",
  "ba",
  "banana",
  "const",
  "value",
  "compu",
  "compute",
  "名前",
  "foo",
  "go",
  "ab",
];
const PUNCTUATION = ["(", ")", ".", ",", " ", "  ", " = ", " => ", ";", "{", "}", "[", "]", '"', "\t", "$", "-", "😀"];
const LEAD_INS = ["Sure! Here is the completion:\n", "```ts\n", "\n```\nThat returns it.", "Here's the code:\n\n"];

function phrase(random: Random, parts: number): string {
  let text = "";
  for (let index = 0; index < parts; index++) text += random() < 0.55 ? pick(random, WORDS) : pick(random, PUNCTUATION);
  return text;
}

interface Case {
  before: string;
  after: string;
  suggestion: string;
  surface: string;
  pieces: string[];
}

/** A cursor context and a suggestion made largely of its own text, so repeats, overlaps and near misses are common. */
function randomCase(random: Random): Case {
  const lines = Array.from(
    { length: count(random, 3) },
    () => pick(random, ["", "  ", "    "]) + phrase(random, count(random, 5)),
  );
  const cursorLine = pick(random, ["", "  ", "    ", "\t"]) + phrase(random, count(random, 8));
  const before = [...lines, cursorLine].join("\n");
  const after =
    random() < 0.3
      ? ""
      : phrase(random, count(random, 4)) + (random() < 0.5 ? `\n${phrase(random, count(random, 4))}\n}` : "");
  // Half of them start by restating some end of the cursor line, at any position, anchored or not.
  let suggestion = random() < 0.5 ? cursorLine.slice(Math.floor(random() * cursorLine.length)) : "";
  for (let part = 1 + count(random, 5); part > 0; part--) {
    const kind = random();
    if (kind < 0.3 && cursorLine !== "") suggestion += cursorLine.slice(Math.floor(random() * cursorLine.length));
    else if (kind < 0.6) suggestion += phrase(random, 1 + count(random, 4));
    else if (kind < 0.7) suggestion += pick(random, ["\n", "\r\n", "\n  ", "\n\n"]);
    else if (kind < 0.85) suggestion += after.slice(0, Math.floor(random() * (after.length + 1)));
    else if (kind < 0.92) suggestion += pick(random, LEAD_INS);
    else suggestion += lines.length > 0 ? `${pick(random, lines)}\n` : "";
  }
  const pieces: string[] = [];
  for (let start = 0; start < suggestion.length;) {
    const length = 1 + count(random, 9);
    pieces.push(suggestion.slice(start, start + length));
    start += length;
  }
  return { before, after, suggestion, surface: pick(random, ["code", "code", "notes", "messages"]), pieces };
}

function tabContext(c: Case): TabContext {
  return {
    surface: c.surface,
    workspace_slug: "acme",
    entity_id: "src/app.ts",
    document_type: "plaintext",
    active_text_before_cursor: c.before,
    active_text_after_cursor: c.after,
  };
}

const countWords = (text: string) => text.split(/\s+/).filter((word) => word !== "").length;

/** The relay's answer for the case: its whole pipeline, fed the suggestion in the case's pieces. */
function relayAnswer(c: Case): string {
  const post = createPostprocessor({ context: tabContext(c), maxTokens: 64, countTokens: countWords });
  let text = "";
  for (const piece of c.pieces) {
    text += post.push(piece);
    if (post.done) break;
  }
  return text + post.end();
}

/** The relay's typed-repeat stage alone, streaming. */
function relayTypedStage(c: Case): string {
  const stage = new TypedPrefixFilter(c.before);
  let text = "";
  for (const piece of c.pieces) text += stage.push(piece);
  return text + stage.end();
}

/** The suggestion starts with 2 or more characters that end the cursor line, whether or not the rule calls them a repeat. */
function overlapsTypedLine(c: Case): boolean {
  const line = c.before.slice(c.before.lastIndexOf("\n") + 1);
  for (let length = 2; length <= line.length; length++) if (c.suggestion.startsWith(line.slice(-length))) return true;
  return false;
}

const show = (seed: number, c: Case) => `seed ${seed}: ${JSON.stringify(c)}`;

describe("the relay and the extension on the same random suggestions", () => {
  test("agree on what repeats the typed text: the relay's streaming stage, however split, drops what the extension drops", () => {
    const seed = 15;
    const random = seededRandom(seed);
    let dropped = 0;
    let kept = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const c = randomCase(random);
      const repeat = typedRepeatLength(c.before, c.suggestion);
      if (repeat > 0) dropped++;
      else if (overlapsTypedLine(c)) kept++;
      assert.equal(relayTypedStage(c), c.suggestion.slice(repeat), show(seed, c));
      assert.equal(stripTypedPrefix(c.suggestion, c.before), c.suggestion.slice(repeat), show(seed, c));
    }
    assert.ok(dropped > ROUNDS / 10, `only ${dropped} of ${ROUNDS} cases had a repeat to drop`);
    assert.ok(kept > ROUNDS / 10, `only ${kept} of ${ROUNDS} cases started with typed text that is no repeat`);
  });

  test("the extension removes nothing from the start of the relay's answer but blanks, and finds no repeat left in it", () => {
    const seed = 1415;
    const random = seededRandom(seed);
    let shown = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const c = randomCase(random);
      const answer = relayAnswer(c).replace(/\r\n?/g, "\n");
      assert.equal(typedRepeatLength(c.before, answer), 0, show(seed, c));
      const singleLine = lineSuffix(c.after).trim() !== "";
      const displayed = postprocess(answer, { before: c.before, after: c.after, singleLine, minVisibleChars: 2 });
      if (displayed === undefined) continue;
      shown++;
      const blanks = /^[ \t]*/.exec(answer)?.[0].length ?? 0;
      const start = answer.indexOf(displayed);
      assert.ok(
        start >= 0 && start <= blanks && /^[ \t]*$/.test(answer.slice(0, start)),
        `${show(seed, c)} → relay ${JSON.stringify(answer)}, shown ${JSON.stringify(displayed)}`,
      );
    }
    assert.ok(shown > ROUNDS / 4, `only ${shown} of ${ROUNDS} cases showed anything`);
  });

  test("agree on word characters: the extension skips a cursor before exactly the characters the relay takes for a word", () => {
    const seed = 2;
    const random = seededRandom(seed);
    const samples = [..."azAZ09_$ .,()-@#'\"`\t€é名Я٣\u0301\u093f\u00a0\u2028"];
    for (let round = 0; round < 500; round++) samples.push(String.fromCharCode(Math.floor(random() * 0x3000)));
    for (const char of samples) {
      if (char === "\n" || char === "\r") continue;
      const skipped = prefilter(inputAt(`const v = █${char}`), DEFAULT_SETTINGS, undefined) === "inside a word";
      assert.equal(skipped, relayIsWordChar(char), `U+${char.charCodeAt(0).toString(16)}`);
      assert.equal(relayIsWordChar(char), sharedIsWordChar(char));
    }
  });
});

describe("one home for the word characters", () => {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const HOME = "shared/src/protocol/text.ts";
  /**
   * The token counter's o200k pre-tokenisation pattern is the tokenizer's own (tiktoken's `o200k_base` pat_str), not a
   * rule for what counts as a word in a suggestion: changing it would change the counts, not the suggestions.
   */
  const TOKENIZER_PATTERN = "relay/src/completion/o200k.ts";
  /** Where suggestions are postprocessed or gated: the relay's completion code, the extension and shared. */
  const AREAS = ["relay/src/completion", "extension/src", "shared/src"];

  function sources(dir: string, out: string[] = []): string[] {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) sources(path, out);
      else if (name.endsWith(".ts") && !name.endsWith(".test.ts")) out.push(path);
    }
    return out;
  }

  test("no module on the suggestion path writes its own word-character class", () => {
    const copies: string[] = [];
    for (const area of AREAS) {
      for (const path of sources(join(root, area))) {
        const file = relative(root, path);
        if (file === HOME || file === TOKENIZER_PATTERN) continue;
        readFileSync(path, "utf8")
          .split("\n")
          .forEach((line, index) => {
            if (/\[[^\]]*\\p\{(?:L|N|Letter|Number)\}[^\]]*\]/u.test(line))
              copies.push(`${file}:${index + 1}: ${line.trim()}`);
          });
      }
    }
    assert.deepEqual(copies, [], `use isWordChar or WORD_CHAR from @tab-relay/shared instead:\n${copies.join("\n")}`);
  });
});
