import assert from "node:assert/strict";
import { test } from "node:test";
import type { ChildMessage } from "../protocol";
import { createOutbox } from "./outbox";

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test("text leaves after the token callback returns, one message per completion and turn, in order", async () => {
  const sent: ChildMessage[] = [];
  const outbox = createOutbox((message) => sent.push(message));
  outbox.text(1, "con");
  outbox.text(2, "let");
  outbox.text(1, "st");
  // Nothing is written from inside the callback: node-llama-cpp's next decode waits for it to return.
  assert.deepEqual(sent, []);
  await turn();
  assert.deepEqual(sent, [
    { type: "text", id: 1, text: "const" },
    { type: "text", id: 2, text: "let" },
  ]);
  outbox.text(1, " x");
  await turn();
  assert.deepEqual(sent.slice(2), [{ type: "text", id: 1, text: " x" }]);
});

test("flush sends the queued text at once, so a completion's end never overtakes it, and nothing twice", async () => {
  const sent: ChildMessage[] = [];
  const outbox = createOutbox((message) => sent.push(message));
  outbox.text(3, "return");
  outbox.flush();
  sent.push({ type: "failed", id: 3, message: "stopped" });
  await turn();
  assert.deepEqual(sent, [
    { type: "text", id: 3, text: "return" },
    { type: "failed", id: 3, message: "stopped" },
  ]);
});
