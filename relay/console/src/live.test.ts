import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type LiveSocket, type LiveState, OPEN_TIMEOUT_MS, createLive } from "./live";

class FakeSocket implements LiveSocket {
  readonly listeners = new Map<string, ((message: { data: unknown }) => void)[]>();
  closed = false;
  addEventListener(type: string, listener: (message: { data: unknown }) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  close(): void {
    this.closed = true;
  }
  fire(type: "open" | "close" | "message", data?: unknown): void {
    for (const listener of this.listeners.get(type) ?? []) listener({ data });
  }
}

/** A console in a fake browser: a clock advanced by hand, every socket opened, every state shown. */
function harness() {
  let now = 0;
  const timers: { at: number; run: () => void; cancelled: boolean }[] = [];
  const sockets: FakeSocket[] = [];
  const states: LiveState[] = [];
  let reopened = 0;
  const live = createLive(
    {
      event: () => undefined,
      state: (state) => states.push(state),
      reopened: () => (reopened += 1),
      shouldReconnect: async () => true,
    },
    {
      open() {
        const socket = new FakeSocket();
        sockets.push(socket);
        return socket;
      },
      later(run, ms) {
        const timer = { at: now + ms, run, cancelled: false };
        timers.push(timer);
        return () => (timer.cancelled = true);
      },
      // The longest delay of each backoff step, so the test knows when a retry is due at the latest.
      random: () => 1,
    },
  );
  async function advance(ms: number): Promise<void> {
    const until = now + ms;
    for (;;) {
      const due = timers.filter((t) => !t.cancelled && t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      due.cancelled = true;
      now = due.at;
      due.run();
      // shouldReconnect answers through a promise.
      await new Promise((resolve) => setImmediate(resolve));
    }
    now = until;
  }
  return { live, sockets, states, advance, reopened: () => reopened };
}

describe("the console's live connection", () => {
  test("an attempt that neither opens nor fails is given up after the open timeout and tried again", async () => {
    const { live, sockets, states, advance } = harness();
    live.start();
    assert.equal(sockets.length, 1);
    await advance(OPEN_TIMEOUT_MS - 1);
    assert.equal(sockets[0]?.closed, false);
    await advance(1);
    assert.equal(sockets[0]?.closed, true, "the hanging attempt was not closed");
    assert.deepEqual(states, ["connecting", "disconnected"]);
    await advance(1000);
    assert.equal(sockets.length, 2, "no new attempt after the first backoff step");
    // A late close of the abandoned attempt changes nothing.
    sockets[0]?.fire("close");
    assert.deepEqual(states, ["connecting", "disconnected", "connecting"]);
    sockets[1]?.fire("open");
    assert.deepEqual(states.at(-1), "connected");
  });

  test("an attempt that opens in time is kept past the open timeout", async () => {
    const { live, sockets, states, advance } = harness();
    live.start();
    await advance(OPEN_TIMEOUT_MS - 1);
    sockets[0]?.fire("open");
    await advance(10 * OPEN_TIMEOUT_MS);
    assert.equal(sockets.length, 1);
    assert.equal(sockets[0]?.closed, false);
    assert.deepEqual(states, ["connecting", "connected"]);
  });

  test("refused attempts back off, doubling up to 30 s; a hello starts over, and a reopening asks views to catch up", async () => {
    const { live, sockets, advance, reopened } = harness();
    live.start();
    sockets[0]?.fire("open");
    sockets[0]?.fire("message", JSON.stringify({ type: "hello" }));
    const gaps: number[] = [];
    let last = 0;
    let clock = 0;
    sockets.at(-1)?.fire("close");
    while (gaps.length < 7) {
      await advance(500);
      clock += 500;
      if (sockets.length > last + 1) {
        gaps.push(clock);
        clock = 0;
        last = sockets.length - 1;
        sockets.at(-1)?.fire("close");
      }
    }
    assert.deepEqual(gaps, [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    await advance(30_000);
    const socket = sockets.at(-1);
    socket?.fire("open");
    socket?.fire("message", JSON.stringify({ type: "hello" }));
    assert.equal(reopened(), 1);
    socket?.fire("close");
    const before = sockets.length;
    await advance(1000);
    assert.equal(sockets.length, before + 1, "the backoff did not start over after a hello");
  });

  test("stopping cancels the pending retry and the open timeout", async () => {
    const { live, sockets, advance } = harness();
    live.start();
    live.stop();
    assert.equal(sockets[0]?.closed, true);
    await advance(10 * OPEN_TIMEOUT_MS);
    assert.equal(sockets.length, 1);
  });
});
