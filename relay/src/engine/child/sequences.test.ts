import assert from "node:assert/strict";
import { test } from "node:test";
import { chooseSequence, dispatchSchedule } from "./sequences";

const view = (index: number, tokens: number[], lastUsed: number, busy = false) => ({ index, tokens, lastUsed, busy });

test("a request goes to the free sequence holding the longest prefix of its prompt", () => {
  const choice = chooseSequence([view(0, [1, 2, 9], 5), view(1, [1, 2, 3, 4, 8], 1), view(2, [], 0)], [1, 2, 3, 4, 5]);
  assert.deepEqual(choice, { index: 1, shared: 4 });
});

test("with no shared prefix, the least recently used free sequence is taken; a busy one never", () => {
  assert.deepEqual(chooseSequence([view(0, [7], 3), view(1, [8], 2), view(2, [1, 2], 1, true)], [1, 2]), {
    index: 1,
    shared: 0,
  });
  assert.equal(chooseSequence([view(0, [1], 1, true)], [1]), undefined);
});

test("a decode goes to llama.cpp at once when it is the only completion running, else on the next turn", async () => {
  let running = 1;
  const schedule = dispatchSchedule(() => running);
  const dispatched: string[] = [];
  schedule(() => dispatched.push("alone"));
  assert.deepEqual(dispatched, ["alone"]);
  running = 2;
  schedule(() => dispatched.push("batched"));
  assert.deepEqual(dispatched, ["alone"]);
  await new Promise<void>((resolve) => setImmediate(resolve));
  assert.deepEqual(dispatched, ["alone", "batched"]);
});
