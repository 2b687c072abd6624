import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, test } from "node:test";
import type { TabContext } from "@tab-relay/shared";
import { silentLogger } from "../logger";
import { createWorkerTokenCounter, inlineTokenCounter } from "./tokenCounter";

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

const counter = createWorkerTokenCounter({ workerUrl: new URL("./tokenWorker.ts", import.meta.url), logger: silentLogger });
after(() => counter.close());

test("counts the same tokens as counting inline", async () => {
  for (const offset of [0, 100_000, 145_000]) {
    assert.equal(await counter.countPrompt(context(offset)), await inlineTokenCounter.countPrompt(context(offset)));
  }
});

test("leaves the event loop free while it counts a full-size prompt", async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const counts = await Promise.all([20_000, 70_000, 140_000].map((offset) => counter.countPrompt(context(offset))));
  clearInterval(timer);
  assert.ok(counts.every((count) => count > 5_000));
  // Inline, three full prompts block the loop for tens of milliseconds with no tick at all.
  assert.ok(ticks > 0, "timers kept firing during the count");
});

test("starts a new worker after the old one is gone", async () => {
  await counter.close();
  assert.equal(await counter.countPrompt(context(0)), await inlineTokenCounter.countPrompt(context(0)));
});
