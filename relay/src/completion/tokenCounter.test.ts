import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import type { TabContext } from "@tab-relay/shared";
import { createSlicedTokenCounter, inlineTokenCounter } from "./tokenCounter";

const source = readFileSync(new URL("../../../node_modules/typescript/lib/lib.es5.d.ts", import.meta.url), "utf8");
const context = (offset: number): TabContext => ({
  surface: "code",
  workspace_slug: "acme",
  entity_id: "lib.ts",
  document_type: "plaintext",
  active_text_before_cursor: source.slice(offset, offset + 16_384),
  active_text_after_cursor: source.slice(offset + 16_384, offset + 32_768),
  surrounding_context: source.slice(offset + 40_000, offset + 72_768),
});

const counter = createSlicedTokenCounter({ now: () => performance.now() });

test("counts the same tokens as counting inline", async () => {
  for (const offset of [0, 100_000, 145_000]) {
    assert.equal(await counter.countPrompt(context(offset)), await inlineTokenCounter.countPrompt(context(offset)));
  }
});

/**
 * A full-size prompt of words no count has seen: the counter caches the pieces it has counted, and lib.es5.d.ts's
 * words, counted by the test before, came back from that cache so fast that in one CI run three prompts were
 * counted within a slice each and no timer could fire.
 */
function unseenContext(seed: number): TabContext {
  let state = seed;
  const words = (chars: number) => {
    let text = "";
    while (text.length < chars) {
      state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
      text += `${state.toString(36)}${state % 7 === 0 ? "\n" : " "}`;
    }
    return text.slice(0, chars);
  };
  return {
    ...context(0),
    active_text_before_cursor: words(16_384),
    active_text_after_cursor: words(16_384),
    surrounding_context: words(32_768),
  };
}

test("lets the event loop run while it counts full-size prompts: timers fire between its slices", async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const counts = await Promise.all([1, 2, 3].map((seed) => counter.countPrompt(unseenContext(seed))));
  clearInterval(timer);
  assert.ok(counts.every((count) => count > 5_000));
  // Inline, three full prompts hold the loop for tens of milliseconds with no tick at all.
  assert.ok(ticks > 0, "no timer fired during the count");
});

test("yields once a slice has run its time, and not before", async () => {
  // A clock that moves 1 ms per reading: every second piece ends a 2 ms slice.
  let now = 0;
  let yields = 0;
  const stepping = createSlicedTokenCounter({
    now: () => now++,
    yieldToLoop: async () => {
      yields++;
    },
  });
  const small: TabContext = {
    ...context(0),
    active_text_before_cursor: "const a = 1;",
    active_text_after_cursor: "",
    surrounding_context: "",
  };
  await stepping.countPrompt(small);
  assert.equal(yields, 0, "one piece, one reading after the start: no slice ended");
  await stepping.countPrompt(context(0));
  assert.ok(yields > 100, `a full prompt of some 300 pieces yields about every other piece (${yields})`);
});
