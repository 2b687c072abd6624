import assert from "node:assert/strict";
import { test } from "node:test";
import type { ChildMessage } from "../protocol";
import { createOutbox } from "./outbox";

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test("a completion's first text leaves at once; what follows waits for the end of the turn, in order", async () => {
  const sent: ChildMessage[] = [];
  const outbox = createOutbox((message) => sent.push(message));
  outbox.text(1, "con");
  // The first text is what the person waits for: it does not wait for node-llama-cpp's next decode.
  assert.deepEqual(sent, [{ type: "text", id: 1, text: "con" }]);
  outbox.text(2, "let");
  outbox.text(1, "st");
  outbox.text(1, "ant");
  // Later text is not written from inside the callback: node-llama-cpp's next decode waits for it to return.
  assert.deepEqual(sent.slice(1), [{ type: "text", id: 2, text: "let" }]);
  await turn();
  assert.deepEqual(sent.slice(2), [{ type: "text", id: 1, text: "stant" }]);
  outbox.text(1, " x");
  outbox.text(2, " y");
  assert.equal(sent.length, 3);
  await turn();
  assert.deepEqual(sent.slice(3), [
    { type: "text", id: 1, text: " x" },
    { type: "text", id: 2, text: " y" },
  ]);
});

test("finish sends the queued text at once, so a completion's end never overtakes it, and nothing twice", async () => {
  const sent: ChildMessage[] = [];
  const outbox = createOutbox((message) => sent.push(message));
  outbox.text(3, "return");
  outbox.text(3, " a");
  outbox.finish(3);
  sent.push({ type: "failed", id: 3, message: "stopped" });
  await turn();
  assert.deepEqual(sent, [
    { type: "text", id: 3, text: "return" },
    { type: "text", id: 3, text: " a" },
    { type: "failed", id: 3, message: "stopped" },
  ]);
});

test("a finished completion is forgotten: the next one's first text leaves at once again", () => {
  const sent: ChildMessage[] = [];
  const outbox = createOutbox((message) => sent.push(message));
  outbox.text(4, "a");
  outbox.finish(4);
  outbox.text(5, "b");
  assert.deepEqual(sent, [
    { type: "text", id: 4, text: "a" },
    { type: "text", id: 5, text: "b" },
  ]);
});
