import type { TabContext } from "@tab-relay/shared";
import { countPiece, countTokens, tokenPieces } from "./tokens";

/** Counts prompt tokens for `usage`. Tokenising a full 64k-character context takes 5 to 30 ms of CPU. */
export interface TokenCounter {
  countPrompt(context: TabContext): Promise<number>;
  /** Runs the tokenizer once on a short text, so the first request does not pay for its first use. */
  warm(): void;
}

/** How long counting may hold the event loop before it lets other work run. */
const SLICE_MS = 2;

function promptTexts(context: TabContext): string[] {
  return [context.active_text_before_cursor, context.active_text_after_cursor ?? "", context.surrounding_context ?? ""];
}

/** Counts in one go; for tools and tests that do not serve traffic. */
export const inlineTokenCounter: TokenCounter = {
  countPrompt: async (context) => promptTexts(context).reduce((sum, text) => sum + countTokens(text), 0),
  warm: () => undefined,
};

/**
 * Counts on the event loop a slice of at most SLICE_MS at a time, so a big prompt never stalls other requests'
 * streams for longer than that. It used to count in a worker thread: the worker held a second copy of the
 * tokenizer's tables (about 70 MB of resident memory) and took some 250 ms to start on the first request that
 * asked for usage, for work the event loop does in slices at no extra memory.
 */
export function createSlicedTokenCounter(options: {
  now: () => number;
  yieldToLoop?: () => Promise<void>;
}): TokenCounter {
  const yieldToLoop = options.yieldToLoop ?? (() => new Promise<void>((resolve) => setImmediate(resolve)));
  return {
    async countPrompt(context) {
      let total = 0;
      let sliceStart = options.now();
      for (const text of promptTexts(context)) {
        for (const piece of tokenPieces(text)) {
          total += countPiece(piece);
          if (options.now() - sliceStart >= SLICE_MS) {
            await yieldToLoop();
            sliceStart = options.now();
          }
        }
      }
      return total;
    },
    warm() {
      countTokens("export function warm(up: string): number {\n  return up.length; // the tokenizer's first use\n}\n");
    },
  };
}
