import type { ChildMessage } from "../protocol";

/** When the outbox sends: the child's own clock and timers (main.ts), or a fake in tests. */
export interface OutboxTiming {
  now(): number;
  /** Runs `run` after `ms` milliseconds. */
  later(run: () => void, ms: number): void;
  /** Runs `run` at the end of this turn of the event loop. */
  endOfTurn(run: () => void): void;
}

/**
 * The least time between two text messages to the relay, in ms: one frame of a 60 Hz screen, so no editor can show
 * the difference. Text produced faster than this is joined into one message. Each message is a write to the IPC
 * pipe, which wakes the relay (nice 0, so it preempts the child at its lowered priority), and the relay then writes
 * an SSE frame and wakes the client: in a CPU profile of the child under load the writes took about 0.25 ms of its
 * main thread each, and at about 1,000 tokens/s (the bench's tiny model, about 17 messages a completion) that was
 * the child's main difference from the floor (docs/benchmarks.md, "Fewer text messages from the engine child"). A
 * real model on a CPU takes tens of ms a token, so its every token still leaves on its own as soon as it is decoded.
 */
export const TEXT_GAP_MS = 16;

/**
 * The text a completion streams to the relay: its first text at once, the rest at the end of the event loop's turn
 * rather than from inside node-llama-cpp's token callback, and no sooner than {@link TEXT_GAP_MS} after the last
 * text message.
 *
 * node-llama-cpp asks for a token's successor only after `onTextChunk` returns (the `for await` loop of
 * `_generateResponse` in LlamaCompletion.js, 3.21.1), so a `process.send` there (a write to the IPC pipe, which
 * wakes the relay) sat between every token and the next decode. On the shared 2-core machine the writing process is
 * often descheduled right after that wake-up: a CPU profile of the child put 250 ms of its busy time in the write
 * (about 0.6 ms a message), and timestamps put one token in ten 2-4 ms late to its next decode (the 90th
 * percentile from the token callback to the decode; 0.3 ms with the write moved). Queued, the write happens once the
 * next decode has been handed to llama.cpp's thread. Fragments of one completion that meet in the queue go in one
 * message.
 *
 * A completion's first text is the exception: it is what the person at the keyboard waits for, and queued it waited
 * for node-llama-cpp's own work on the token before the next decode is handed over (0.1–0.3 ms at the median in
 * timestamps along the path, docs/benchmarks.md, "Where the 4.9 ms went"). Written at once, that wait moves to the
 * second token's decode, once per completion, where timestamps showed no difference in the median.
 *
 * `finish` sends what is queued at once and forgets the completion: the child calls it before `done` or `failed`,
 * so a completion's end never overtakes its text, and the last text never waits out the gap. Nor does text that
 * follows a completion's whitespace-only start: the relay may show nothing of that yet.
 */
export function createOutbox(
  send: (message: ChildMessage) => void,
  timing: OutboxTiming,
): {
  text(id: number, text: string): void;
  finish(id: number): void;
} {
  const queued = new Map<number, string>();
  /** Completions whose first text has gone. */
  const started = new Set<number>();
  /** Completions that have sent more than whitespace. */
  const visible = new Set<number>();
  let turnScheduled = false;
  let timerScheduled = false;
  let lastSent = -Infinity;
  const sendText = (id: number, text: string) => {
    send({ type: "text", id, text });
    if (!visible.has(id) && /\S/.test(text)) visible.add(id);
  };
  const flush = () => {
    turnScheduled = false;
    timerScheduled = false;
    if (queued.size === 0) return;
    for (const [id, text] of queued) sendText(id, text);
    queued.clear();
    lastSent = timing.now();
  };
  return {
    text(id, text) {
      if (!started.has(id)) {
        started.add(id);
        sendText(id, text);
        lastSent = timing.now();
        return;
      }
      queued.set(id, (queued.get(id) ?? "") + text);
      // Until a completion has sent more than whitespace, the relay may show nothing of it yet (its token limit
      // holds trailing whitespace, postprocess/tokenLimit.ts): its text does not wait out the gap.
      const wait = visible.has(id) ? lastSent + TEXT_GAP_MS - timing.now() : 0;
      if (wait <= 0) {
        if (!turnScheduled) {
          turnScheduled = true;
          timing.endOfTurn(flush);
        }
      } else if (!timerScheduled && !turnScheduled) {
        timerScheduled = true;
        timing.later(flush, wait);
      }
    },
    finish(id) {
      flush();
      started.delete(id);
      visible.delete(id);
    },
  };
}
