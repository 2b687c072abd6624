import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Continuation, agree, backToWordStart, chooseLength, shareAt } from "./consensus";

function option(text: string, weight: number): Continuation {
  return { text: `<${text}`, start: 1, end: text.length + 1, weight };
}

describe("agree: weighing continuations character by character", () => {
  it("puts all the weight, doubt included, behind the part every continuation shares, and the heaviest group's behind the rest", () => {
    const agreed = agree([option("load(a, fast);", 1), option("load(b);", 2), option("load(b, slow);", 1)], 1);
    assert.ok(agreed);
    assert.equal(agreed.lead.text, "<load(b);");
    // 4 of 5 behind "load(", then 3 of 5 behind "load(b", then 2 of 5 once "load(b)" and "load(b," part.
    assert.deepEqual(agreed.steps, [
      { length: 0, share: 4 / 5 },
      { length: 6, share: 3 / 5 },
      { length: 7, share: 2 / 5 },
    ]);
    assert.equal(shareAt(agreed.steps, 5), 4 / 5);
    assert.equal(shareAt(agreed.steps, 6), 3 / 5);
    assert.equal(shareAt(agreed.steps, 100), 2 / 5);
  });

  it("gives an equal split to the continuation listed first", () => {
    const agreed = agree([option("near();", 1), option("far();", 1)], 0);
    assert.equal(agreed?.lead.text, "<near();");
    assert.deepEqual(agreed?.steps, [
      { length: 0, share: 1 },
      { length: 1, share: 1 / 2 },
    ]);
  });

  it("stops where the heaviest group has run out of text, and ignores continuations of no weight", () => {
    const agreed = agree([option("ab", 2), option("abc", 1), option("zzz", 0)], 0);
    assert.equal(agreed?.lead.text, "<ab");
    assert.deepEqual(agreed?.steps, [{ length: 0, share: 1 }]);
    assert.equal(agree([option("x", 0)], 1), undefined);
  });
});

describe("chooseLength: how much of the lead to suggest", () => {
  it("takes a whole first line that has most of the weight behind it", () => {
    assert.equal(chooseLength("values);\nnext();", [{ length: 0, share: 0.9 }]), "values);\nnext();".length);
  });

  it("cuts the first line where more right characters are to be expected from its certain start than from all of it", () => {
    const text = "config, options.alpha);";
    // Two equally good places agree on "config, options." and part at "alpha" / "beta".
    const steps = [
      { length: 0, share: 0.66 },
      { length: 17, share: 0.33 },
    ];
    assert.equal(text.slice(0, chooseLength(text, steps)), "config, options.");
    // Where the doubtful part is long, it is worth suggesting after all.
    const long = "config, options.alpha.first.second.third);";
    assert.equal(chooseLength(long, steps), long.length);
  });

  it("cuts at word boundaries, never inside a word", () => {
    const text = "renderHeader(page);";
    // "render" is agreed on, "Header(page);" is not worth suggesting: half a word is not suggested either.
    assert.equal(
      chooseLength(text, [
        { length: 0, share: 0.9 },
        { length: 7, share: 0.1 },
      ]),
      0,
    );
    assert.equal(backToWordStart("renderHeader", 7), 0);
    assert.equal(backToWordStart("a.renderHeader", 9), 2);
    assert.equal(backToWordStart("a. b", 2), 2);
  });

  it("treats a first line with less than two visible characters as part of the line after it", () => {
    const text = "`\n  run(alpha, beta, gamma);\n  more();";
    const steps = [
      { length: 0, share: 0.9 },
      { length: 8, share: 0.3 },
    ];
    // "`" alone is not worth taking, so the whole of "`\n  run(...);" is weighed as a first line: 29 characters
    // at 0.3 are worth more than "`\n  run" at 0.9.
    assert.equal(text.slice(0, chooseLength(text, steps)), "`\n  run(alpha, beta, gamma);");
    const short = "`\n  run(a);\n  more();";
    assert.equal(short.slice(0, chooseLength(short, steps)), "`\n  run");
  });

  it("suggests nothing on a share below a fifth", () => {
    assert.equal(chooseLength("guess();", [{ length: 0, share: 0.19 }]), 0);
    assert.equal(chooseLength("guess();", [{ length: 0, share: 0.2 }]), "guess();".length);
  });

  it("goes past the first line only while at least half the weight agrees", () => {
    const text = "open();\nread();\nclose();";
    assert.equal(
      text.slice(
        0,
        chooseLength(text, [
          { length: 0, share: 0.9 },
          { length: 13, share: 0.4 },
        ]),
      ),
      "open();\nread",
    );
    assert.equal(
      text.slice(
        0,
        chooseLength(text, [
          { length: 0, share: 0.9 },
          { length: 10, share: 0.4 },
        ]),
      ),
      "open();\n",
    );
    assert.equal(
      chooseLength(text, [
        { length: 0, share: 0.9 },
        { length: 12, share: 0.6 },
      ]),
      text.length,
    );
  });
});
