/**
 * Which sequence serves a request: the free one that already holds the longest prefix of its prompt, so only the
 * new tokens are evaluated (llama.cpp's server picks slots the same way: longest cached prefix, else least recently
 * used; tools/server `get_available_slot`). Pure, so the rule is tested apart from the model.
 */
export interface SequenceView {
  index: number;
  busy: boolean;
  /** What the sequence's memory holds. */
  tokens: readonly number[];
  lastUsed: number;
}

export function commonPrefixLength(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** The index of the sequence to use, and how many prompt tokens it holds; undefined when all are busy. */
export function chooseSequence(
  sequences: readonly SequenceView[],
  prompt: readonly number[],
): { index: number; shared: number } | undefined {
  let best: { index: number; shared: number; lastUsed: number } | undefined;
  for (const s of sequences) {
    if (s.busy) continue;
    const shared = commonPrefixLength(s.tokens, prompt);
    if (best === undefined || shared > best.shared || (shared === best.shared && s.lastUsed < best.lastUsed))
      best = { index: s.index, shared, lastUsed: s.lastUsed };
  }
  return best && { index: best.index, shared: best.shared };
}

/**
 * When node-llama-cpp sends queued decodes to llama.cpp (its `batching.dispatchSchedule`). By default it sends them
 * at once only when every sequence of the context has one queued, and otherwise on the next turn of the event loop
 * ("nextCycle", so that other sequences' tokens can join the batch; `_scheduleDecode` in LlamaContext.js, 3.21.1).
 * With the relay's default of 2 sequences and one person typing, that put a turn of waiting before every token's
 * decode, which a context of 1 sequence (the floor in docs/benchmarks.md) never pays. With no other completion
 * running there is nothing to wait for, so the decode goes at once; with several, they are batched as before.
 */
export function dispatchSchedule(running: () => number): (dispatch: () => void) => void {
  return (dispatch) => {
    if (running() <= 1) dispatch();
    else setImmediate(dispatch);
  };
}
