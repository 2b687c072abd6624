import assert from "node:assert/strict";
import { test } from "node:test";
import { jsonShapeProblem } from "./jsonShape";

const limits = { maxDepth: 4, maxValues: 6 };
/** Long enough to be scanned (short texts are parsed without a look). */
const padded = (json: string) => `{"pad":"${" ".repeat(5_000)}","v":${json}}`;

test("nesting past the depth limit is refused, at the limit it is not", () => {
  assert.equal(jsonShapeProblem(padded("[[[1]]]"), limits), undefined);
  assert.equal(jsonShapeProblem(padded("[[[[1]]]]"), limits), "depth");
  assert.equal(jsonShapeProblem(padded('{"a":{"b":{"c":{}}}}'), limits), "depth");
});

test("values past the count limit are refused: objects, arrays and the commas between members", () => {
  assert.equal(jsonShapeProblem(padded("[1,2,3,4]"), limits), undefined);
  assert.equal(jsonShapeProblem(padded("[1,2,3,4,5,6]"), limits), "values");
  assert.equal(jsonShapeProblem(padded("[{},{},{}]"), limits), "values");
});

test("brackets, braces, commas and escaped quotes inside strings are text, not structure", () => {
  const text = padded(`"[[[[[[,,,,,,{{{{ \\"[[[[[[ \\\\"`);
  assert.doesNotThrow(() => JSON.parse(text));
  assert.equal(jsonShapeProblem(text, limits), undefined);
  // After an escaped backslash the quote ends the string, so what follows counts again.
  assert.equal(jsonShapeProblem(padded(`["\\\\",[[[1]]]]`), limits), "depth");
});

test("the default limits pass a real answer and refuse the answers that held the event loop", () => {
  const answer = JSON.stringify({
    choices: [{ index: 0, message: { role: "assistant", content: "x".repeat(100_000) }, finish_reason: "stop" }],
    usage: { prompt_tokens: 10, completion_tokens: 20 },
    timings: { prompt_ms: 1.5, predicted_ms: 20 },
  });
  assert.equal(jsonShapeProblem(answer), undefined);
  assert.equal(jsonShapeProblem(`[${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}]`), "depth");
  assert.equal(jsonShapeProblem(`[${Array.from({ length: 300_000 }, () => "{}").join(",")}]`), "values");
});

test("a short text is not scanned: it cannot be costly to parse", () => {
  assert.equal(jsonShapeProblem("[[[[[[[[1]]]]]]]]", limits), undefined);
});
