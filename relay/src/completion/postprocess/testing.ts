import type { FinishReason, TabContext } from "@tab-relay/shared";
import { createPostprocessor } from "./index";

// Helpers for the postprocessor's tests, one file per stage.

export const countWords = (text: string) => text.split(/\s+/).filter((word) => word !== "").length;

export function context(before: string, after = "", extra: Partial<TabContext> = {}): TabContext {
  return {
    surface: "code",
    workspace_slug: "acme",
    entity_id: "doc-1",
    document_type: "plaintext",
    active_text_before_cursor: before,
    active_text_after_cursor: after,
    ...extra,
  };
}

export interface Result {
  text: string;
  finishReason: FinishReason;
}

/** Pushes `fragments` in order the way the relay does (stopping once done) and collects what is emitted. */
export function run(ctx: TabContext, fragments: string[], maxTokens = 200, countTokens = countWords): Result {
  const post = createPostprocessor({ context: ctx, maxTokens, countTokens });
  let text = "";
  for (const fragment of fragments) {
    text += post.push(fragment);
    if (post.done) break;
  }
  text += post.end();
  return { text, finishReason: post.finishReason };
}

export const whole = (ctx: TabContext, output: string, maxTokens = 200, countTokens = countWords) =>
  run(ctx, [output], maxTokens, countTokens);

/** Deterministic pseudo-random generator, so a failing split can be reproduced. */
export function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

export function randomSplit(text: string, random: () => number): string[] {
  const pieces: string[] = [];
  for (let start = 0; start < text.length;) {
    const length = 1 + Math.floor(random() * 12);
    pieces.push(text.slice(start, start + length));
    start += length;
  }
  return pieces;
}

export const ADD_BEFORE = "function add(a, b) {\n  return a";
