import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Budget, applyRenaming, extendAcrossRenaming } from "./analogy";
import { findEarlierMatches } from "./longestMatch";

function visibleAtEnd(text: string): (length: number) => number {
  return (length) => text.slice(text.length - length).replace(/\s/g, "").length;
}

/** The analogy at the place whose exact match with the end of `before` starts right after `marker` in `source`. */
function analogyAt(source: string, marker: string, before: string, budget: Budget = { chars: 10_000 }) {
  const start = source.indexOf(marker) + marker.length;
  let length = 0;
  while (length < start && source[start - 1 - length] === before[before.length - 1 - length]) length++;
  return extendAcrossRenaming(source, 0, start, length, before, visibleAtEnd(before), budget);
}

describe("extendAcrossRenaming", () => {
  it("reads one identifier as another everywhere it occurs before the match, and counts the visible characters that agree", () => {
    const source = "const ZodUnknown = make(ZodUnknown, (inst) => {\n  init(inst);";
    const before = "const ZodNever = make(ZodNever, (inst) => {\n  ";
    const analogy = analogyAt(source, "=> {\n  ", before);
    assert.deepEqual(analogy, { from: "ZodUnknown", to: "ZodNever", visible: "const=make(,(inst)=>{".length });
  });

  it("stops where the texts differ otherwise, or where another renaming would be needed", () => {
    const source = "alpha(one, x);\nbeta(one, y);";
    // "x" read as "z", then "one" would have to be read as "two": the agreement ends there.
    assert.deepEqual(analogyAt(source, "x", "beta(two, z"), { from: "x", to: "z", visible: ",".length });
    // The same word on both sides is no renaming.
    assert.equal(analogyAt("call(x", "x", "call(x"), undefined);
  });

  it("accepts the renamed part inside longer names on the way back", () => {
    const source = "const ZodUnknownParams = 1;\nparse(ZodUnknown";
    const before = "const ZodNeverParams = 1;\nparse(ZodNever";
    const analogy = analogyAt(source + ")", "ZodUnknown)", `${before})`);
    assert.deepEqual(analogy, { from: "ZodUnknown", to: "ZodNever", visible: "constParams=1;parse()".length });
  });

  it("does not read a word cut off by the start of the text, and spends the budget it is given", () => {
    assert.equal(analogyAt("nown(x);", "(", "ever("), undefined);
    const budget = { chars: 20 };
    const analogy = analogyAt(`${"a b ".repeat(20)}old(`, "old(", `${"a b ".repeat(20)}new(`, budget);
    assert.ok(analogy && analogy.visible < 20, JSON.stringify(analogy));
    assert.ok(budget.chars <= 0);
  });
});

describe("applyRenaming", () => {
  it("renames the whole word, and the differing part inside longer names in each case", () => {
    assert.equal(
      applyRenaming(
        'core.$ZodUnknown.init(inst); processors.unknownProcessor(inst); "ZodUnknown"; UNKNOWN_TYPE',
        "ZodUnknown",
        "ZodNever",
      ),
      'core.$ZodNever.init(inst); processors.neverProcessor(inst); "ZodNever"; NEVER_TYPE',
    );
    assert.equal(applyRenaming("z.string().parse(s); ZodString", "string", "number"), "z.number().parse(s); ZodNumber");
    assert.equal(applyRenaming("user.id; userName; getUser()", "user", "group"), "group.id; groupName; getGroup()");
  });

  it("leaves a part alone where it is not a whole part of a name, and short parts everywhere but as whole words", () => {
    assert.equal(applyRenaming("Unknownish(); ZodUnknowns", "ZodUnknown", "ZodNever"), "Unknownish(); ZodUnknowns");
    assert.equal(applyRenaming("a + ab + aB + a_b", "a", "b"), "b + ab + aB + a_b");
  });
});

describe("findEarlierMatches", () => {
  it("lists the longest places first, ties in the order of preference", () => {
    const before = "go(1);\ngo(2);\nrun(3);\ngo(";
    const matches = findEarlierMatches({ before, after: "", surrounding: "" }, 3, 5);
    assert.deepEqual(
      matches.map((match) => before.slice(match.continuationStart, match.continuationStart + 1)),
      ["2", "1"],
    );
  });
});
