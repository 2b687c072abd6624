import assert from "node:assert/strict";
import { test } from "node:test";
import { TAB_USAGE_MAX_BATCH, TabUsageBatch, TabUsageEvent } from "./usage";

const event = {
  id: "chatcmpl-abc1",
  outcome: "accepted_partial",
  shown_chars: 40,
  accepted_chars: 12,
  shown_lines: 3,
  accepted_lines: 1,
  time_to_ghost_ms: 180,
  language: "typescript",
} as const;

test("a usage event with sizes and a time parses, language optional", () => {
  assert.deepEqual(TabUsageEvent.parse(event), event);
  const { language: _language, ...withoutLanguage } = event;
  assert.equal(TabUsageEvent.safeParse(withoutLanguage).success, true);
});

test("a usage event refuses extra fields such as code text, and numbers out of bounds", () => {
  assert.equal(TabUsageEvent.safeParse({ ...event, text: "secret()" }).success, false);
  for (const field of ["shown_chars", "accepted_chars", "shown_lines", "accepted_lines", "time_to_ghost_ms"]) {
    for (const bad of [-1, 1.5, 1e9]) {
      const result = TabUsageEvent.safeParse({ ...event, [field]: bad });
      assert.equal(result.success, false, `${field}=${bad}`);
    }
  }
  const tooMuch = TabUsageEvent.safeParse({ ...event, accepted_chars: 41 });
  assert.equal(tooMuch.success, false);
  assert.deepEqual(tooMuch.error?.issues[0]?.path, ["accepted_chars"]);
  assert.equal(TabUsageEvent.safeParse({ ...event, outcome: "ignored" }).success, false);
});

test("a usage batch holds 1 to TAB_USAGE_MAX_BATCH events", () => {
  assert.equal(TabUsageBatch.safeParse({ events: [] }).success, false);
  assert.equal(TabUsageBatch.safeParse({ events: Array(TAB_USAGE_MAX_BATCH).fill(event) }).success, true);
  assert.equal(TabUsageBatch.safeParse({ events: Array(TAB_USAGE_MAX_BATCH + 1).fill(event) }).success, false);
});
