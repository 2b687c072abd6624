import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { completeWord, partialWordAtEnd } from "./identifier";

describe("completeWord", () => {
  it("completes to the most used word starting with the prefix, and only returns the missing tail", () => {
    const before = "resolve(a); resolve(b); result = 1; re";
    assert.equal(completeWord("re", [{ text: before.slice(0, -2), offset: 0, reversed: true }]), "solve");
    assert.equal(partialWordAtEnd(before), "re");
  });

  it("lets a word used right at the cursor beat one used more often far away", () => {
    const far = `${"renderHeader(page);\n".repeat(3)}${"// filler line\n".repeat(400)}`;
    const before = `${far}renderFooter(page);\n`;
    assert.equal(completeWord("render", [{ text: before, offset: 0, reversed: true }]), "Footer");
    // Right next to each other, frequency decides.
    assert.equal(
      completeWord("render", [
        { text: `${"renderHeader(page);\n".repeat(3)}renderFooter(page);\n`, offset: 0, reversed: true },
      ]),
      "Header",
    );
  });

  it("counts a word by the weight of where it was found", () => {
    const sources = (documentWeight: number) => [
      { text: "const parsed = parseUser(raw);\n", offset: 0, reversed: true, weight: documentWeight },
      { text: "parseGroup(raw);\n", offset: 40, reversed: false },
    ];
    assert.equal(completeWord("parse", sources(2)), "User");
    assert.equal(completeWord("parse", sources(0.5)), "Group");
  });

  it("breaks a tie by the nearest occurrence, then alphabetically, and completes nothing it cannot lengthen", () => {
    assert.equal(completeWord("ab", [{ text: "abz aby", offset: 0, reversed: false }]), "z");
    assert.equal(completeWord("ab", [{ text: "ab ab", offset: 0, reversed: false }]), "");
    assert.equal(completeWord("", [{ text: "anything", offset: 0, reversed: false }]), "");
  });
});
