import type { ChildMessage } from "../protocol";

/**
 * The text a completion streams to the relay, sent at the end of the event loop's turn rather than from inside
 * node-llama-cpp's token callback.
 *
 * node-llama-cpp asks for a token's successor only after `onTextChunk` returns (the `for await` loop of
 * `_generateResponse` in LlamaCompletion.js, 3.21.1), so a `process.send` there (a write to the IPC pipe, which
 * wakes the relay) sat between every token and the next decode. On the shared 2-core machine the writing process is
 * often descheduled right after that wake-up: a CPU profile of the child put 250 ms of its busy time in the write
 * (about 0.6 ms a message), and timestamps put one token in ten 2-4 ms late to its next decode (the 90th
 * percentile from the token callback to the decode; 0.3 ms with the write moved). Queued with `setImmediate`, the
 * write happens once the next decode has been handed to llama.cpp's thread, in the same turn, so the text leaves
 * only microseconds later than before. Fragments of one completion that meet in a turn go in one message.
 *
 * `flush` sends what is queued at once: the child calls it before `done` or `failed`, so a completion's end never
 * overtakes its text.
 */
export function createOutbox(send: (message: ChildMessage) => void): {
  text(id: number, text: string): void;
  flush(): void;
} {
  const queued = new Map<number, string>();
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    for (const [id, text] of queued) send({ type: "text", id, text });
    queued.clear();
  };
  return {
    text(id, text) {
      queued.set(id, (queued.get(id) ?? "") + text);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}
