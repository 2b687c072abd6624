import assert from "node:assert/strict";
import { test } from "node:test";
import { Aborter } from "./aborter";

test("an Aborter calls its listeners once, in order, with the first reason kept, as an AbortSignal does", () => {
  for (const make of [() => new AbortController(), () => new Aborter()] as const) {
    const made = make();
    const signal = made instanceof AbortController ? made.signal : made;
    const abort = (reason: unknown) => made.abort(reason);
    const calls: string[] = [];
    const first = () => calls.push(`first ${String(signal.reason)}`);
    const second = () => calls.push("second");
    const removed = () => calls.push("removed");
    signal.addEventListener("abort", first, { once: true });
    signal.addEventListener("abort", first, { once: true });
    signal.addEventListener("abort", second, { once: true });
    signal.addEventListener("abort", removed, { once: true });
    signal.removeEventListener("abort", removed);
    assert.equal(signal.aborted, false);
    signal.throwIfAborted();
    abort("gone");
    abort("again");
    signal.addEventListener("abort", () => calls.push("late"), { once: true });
    assert.deepEqual(calls, ["first gone", "second"]);
    assert.equal(signal.aborted, true);
    assert.equal(signal.reason, "gone");
    assert.throws(
      () => signal.throwIfAborted(),
      (thrown) => thrown === "gone",
    );
  }
});
