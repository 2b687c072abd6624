import assert from "node:assert/strict";
import { test } from "node:test";
import { jaccard, lineTokens, tokenSetOfLines, tokenSetOfText } from "./tokens";

test("a line's tokens are its identifiers, without keywords and one-letter names", () => {
  const same = (a: string, b: string) => assert.deepEqual(lineTokens(a), lineTokens(b));
  same("const total = items.reduce((sum, x) => sum + x, 0);", "total items reduce sum sum");
  same("if (this.ready) return new Widget($scope);", "ready Widget $scope");
  same("def parse_header(self, raw): return None", "parse_header raw");
  assert.deepEqual(lineTokens("  } else {"), []);
  assert.deepEqual(lineTokens("// 42 + 7"), []);
});

test("identifiers are compared whole and case-sensitively", () => {
  assert.notDeepEqual(lineTokens("userName"), lineTokens("username"));
  assert.notDeepEqual(lineTokens("user_name"), lineTokens("user name"));
  assert.equal(lineTokens("größe").length, 1);
});

test("a set has each token once, sorted, whatever the lines repeat", () => {
  const set = tokenSetOfText("alpha beta\nbeta gamma\nalpha");
  assert.equal(set.length, 3);
  assert.deepEqual(
    [...set],
    [...set].sort((a, b) => a - b),
  );
  assert.deepEqual(
    tokenSetOfLines([lineTokens("alpha beta"), lineTokens("beta gamma"), lineTokens("delta")], 0, 2),
    tokenSetOfText("gamma alpha beta"),
  );
});

test("jaccard is shared over all: 1 for the same set, 0 for disjoint or empty ones", () => {
  const a = tokenSetOfText("alpha beta gamma delta");
  assert.equal(jaccard(a, a), 1);
  assert.equal(jaccard(a, tokenSetOfText("alpha beta epsilon")), 2 / 5);
  assert.equal(jaccard(a, tokenSetOfText("zeta eta")), 0);
  assert.equal(jaccard(a, tokenSetOfText("")), 0);
  assert.equal(jaccard(tokenSetOfText("return if else"), tokenSetOfText("return if else")), 0);
});
