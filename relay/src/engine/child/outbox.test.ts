import assert from "node:assert/strict";
import { test } from "node:test";
import type { ChildMessage } from "../protocol";
import { type OutboxTiming, TEXT_GAP_MS, createOutbox } from "./outbox";

/** A clock that moves only when told, with the outbox's timers and end-of-turn runs kept in order. */
function fakeTiming() {
  let now = 0;
  const timers: { at: number; run: () => void }[] = [];
  const endOfTurn: (() => void)[] = [];
  const timing: OutboxTiming = {
    now: () => now,
    later: (run, ms) => void timers.push({ at: now + ms, run }),
    endOfTurn: (run) => void endOfTurn.push(run),
  };
  return {
    timing,
    /** The end of the current turn of the event loop. */
    turn() {
      for (const run of endOfTurn.splice(0)) run();
    },
    /** Time passes, and the timers due by then run. */
    advance(ms: number) {
      now += ms;
      timers.sort((a, b) => a.at - b.at);
      while (timers.length > 0 && timers[0]!.at <= now) timers.shift()!.run();
    },
  };
}

test("a completion's first text leaves at once; what follows waits for the end of the turn, in order", () => {
  const sent: ChildMessage[] = [];
  const clock = fakeTiming();
  const outbox = createOutbox((message) => sent.push(message), clock.timing);
  outbox.text(1, "con");
  // The first text is what the person waits for: it does not wait for node-llama-cpp's next decode.
  assert.deepEqual(sent, [{ type: "text", id: 1, text: "con" }]);
  clock.advance(TEXT_GAP_MS);
  outbox.text(1, "st");
  outbox.text(1, "ant");
  // Later text is not written from inside the callback: node-llama-cpp's next decode waits for it to return.
  assert.equal(sent.length, 1);
  clock.turn();
  assert.deepEqual(sent.slice(1), [{ type: "text", id: 1, text: "stant" }]);
  clock.advance(TEXT_GAP_MS);
  outbox.text(1, " x");
  outbox.text(2, "let");
  outbox.text(2, " y");
  // Another completion's first text does not wait either; the rest of both leave together.
  assert.deepEqual(sent.slice(2), [{ type: "text", id: 2, text: "let" }]);
  clock.turn();
  assert.deepEqual(sent.slice(3), [
    { type: "text", id: 1, text: " x" },
    { type: "text", id: 2, text: " y" },
  ]);
});

test("text that comes faster than the gap leaves in one message once the gap has passed; slower text each at once", () => {
  const sent: ChildMessage[] = [];
  const clock = fakeTiming();
  const outbox = createOutbox((message) => sent.push(message), clock.timing);
  outbox.text(1, "a");
  // Tokens a millisecond apart (the bench's tiny model): one message per gap, not one per token.
  for (const piece of ["b", "c", "d"]) {
    clock.advance(1);
    outbox.text(1, piece);
    clock.turn();
  }
  assert.deepEqual(sent, [{ type: "text", id: 1, text: "a" }]);
  clock.advance(TEXT_GAP_MS - 3);
  assert.deepEqual(sent.slice(1), [{ type: "text", id: 1, text: "bcd" }]);
  // Tokens further apart than the gap (a real model on a CPU): each leaves in the turn it was decoded in.
  clock.advance(TEXT_GAP_MS + 10);
  outbox.text(1, "e");
  clock.turn();
  clock.advance(TEXT_GAP_MS + 10);
  outbox.text(1, "f");
  clock.turn();
  assert.deepEqual(sent.slice(2), [
    { type: "text", id: 1, text: "e" },
    { type: "text", id: 1, text: "f" },
  ]);
});

test("text after a completion's whitespace-only start does not wait out the gap: the relay may show nothing yet", () => {
  const sent: ChildMessage[] = [];
  const clock = fakeTiming();
  const outbox = createOutbox((message) => sent.push(message), clock.timing);
  // An indentation first: the relay's token limit holds trailing whitespace, so the client has seen nothing.
  outbox.text(7, "    ");
  clock.advance(1);
  outbox.text(7, "return");
  clock.turn();
  assert.deepEqual(sent, [
    { type: "text", id: 7, text: "    " },
    { type: "text", id: 7, text: "return" },
  ]);
  // Now there is text to show, and what follows waits for the gap again.
  clock.advance(1);
  outbox.text(7, " a");
  clock.turn();
  assert.equal(sent.length, 2);
  clock.advance(TEXT_GAP_MS);
  assert.deepEqual(sent.slice(2), [{ type: "text", id: 7, text: " a" }]);
});

test("finish sends the queued text at once, so a completion's end never overtakes it, and nothing twice", () => {
  const sent: ChildMessage[] = [];
  const clock = fakeTiming();
  const outbox = createOutbox((message) => sent.push(message), clock.timing);
  outbox.text(3, "return");
  outbox.text(3, " a");
  // Within the gap: finish does not wait it out.
  outbox.finish(3);
  sent.push({ type: "failed", id: 3, message: "stopped" });
  clock.turn();
  clock.advance(TEXT_GAP_MS);
  assert.deepEqual(sent, [
    { type: "text", id: 3, text: "return" },
    { type: "text", id: 3, text: " a" },
    { type: "failed", id: 3, message: "stopped" },
  ]);
});

test("a finished completion is forgotten: the next one's first text leaves at once again", () => {
  const sent: ChildMessage[] = [];
  const outbox = createOutbox((message) => sent.push(message), fakeTiming().timing);
  outbox.text(4, "a");
  outbox.finish(4);
  outbox.text(5, "b");
  assert.deepEqual(sent, [
    { type: "text", id: 4, text: "a" },
    { type: "text", id: 5, text: "b" },
  ]);
});
