import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findLongestEarlierMatch } from "./longestMatch";

/** Reference answer by brute force: every length, every occurrence. */
function bruteForceLength(before: string, haystacks: string[]): number {
  let best = 0;
  for (let length = 1; length <= before.length; length++) {
    const suffix = before.slice(before.length - length);
    const inBefore = before.slice(0, before.length - 1).includes(suffix);
    if (inBefore || haystacks.some((text) => text.includes(suffix))) best = length;
  }
  return best;
}

describe("findLongestEarlierMatch", () => {
  it("finds the longest suffix of the text before the cursor that occurred earlier and points past it", () => {
    const before = "let total = sum(a, b);\nlet count = 0;\nlet total = s";
    const match = findLongestEarlierMatch({ before, after: "", surrounding: "" }, 3);
    assert.ok(match);
    assert.equal(match.source, "before");
    assert.equal(match.length, "let total = s".length);
    assert.equal(before.slice(match.continuationStart, match.continuationStart + 8), "um(a, b)");
  });

  it("prefers the occurrence nearest the cursor when two are equally long", () => {
    const before = "x = run(1);\nx = run(2);\nx = run(";
    const match = findLongestEarlierMatch({ before, after: "", surrounding: "" }, 3);
    assert.ok(match);
    assert.equal(before[match.continuationStart], "2");
  });

  it("uses the text after the cursor and the surrounding context when they hold a longer match", () => {
    const fromAfter = findLongestEarlierMatch(
      { before: "...\nconfig.load(", after: "\n\nconfig.load(path, true);", surrounding: "load(x)" },
      3,
    );
    assert.deepEqual(fromAfter && { source: fromAfter.source, length: fromAfter.length }, {
      source: "after",
      length: "\nconfig.load(".length,
    });

    const surrounding = "import { readFile } from 'node:fs';\nconst text = readFile(name, 'utf8');";
    const fromSurrounding = findLongestEarlierMatch({ before: "const text = readF", after: "", surrounding }, 3);
    assert.ok(fromSurrounding);
    assert.equal(fromSurrounding.source, "surrounding");
    assert.equal(surrounding.slice(fromSurrounding.continuationStart), "ile(name, 'utf8');");
  });

  it("prefers the text before the cursor over other sources on a tie", () => {
    const match = findLongestEarlierMatch(
      { before: "call(one);\ncall(", after: "call(two);", surrounding: "call(three);" },
      3,
    );
    assert.ok(match);
    assert.equal(match.source, "before");
  });

  it("returns nothing below the minimum length or for empty text", () => {
    assert.equal(findLongestEarlierMatch({ before: "abc xyz ab", after: "", surrounding: "" }, 3), undefined);
    assert.equal(findLongestEarlierMatch({ before: "", after: "abc", surrounding: "abc" }, 1), undefined);
  });

  it("agrees with a brute-force search on repetitive random text", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const text = (length: number) => Array.from({ length }, () => "ab \n"[Math.floor(random() * 4)]).join("");
    for (let round = 0; round < 200; round++) {
      const before = text(1 + Math.floor(random() * 40));
      const after = text(Math.floor(random() * 40));
      const surrounding = text(Math.floor(random() * 40));
      const expected = bruteForceLength(before, [after, surrounding]);
      const match = findLongestEarlierMatch({ before, after, surrounding }, 1);
      assert.equal(match?.length ?? 0, expected, JSON.stringify({ before, after, surrounding }));
    }
  });
});
