import assert from "node:assert/strict";
import { test } from "node:test";
import { createSortableIds } from "./sortableIds";

test("ids sort in the order they were made, within a millisecond and when the clock steps back", () => {
  let now = Date.parse("2026-11-21T12:00:00Z");
  const next = createSortableIds({ now: () => now });
  const made: string[] = [];
  for (let i = 0; i < 50; i++) made.push(next("msg"));
  now -= 5000;
  for (let i = 0; i < 5; i++) made.push(next("msg"));
  now += 60_000;
  made.push(next("msg"));
  assert.deepEqual([...made].sort(), made);
  assert.equal(new Set(made).size, made.length);
  assert.match(made[0] as string, /^msg_[0-9A-HJKMNP-TV-Z]{20}$/);
});

test("a later millisecond always sorts after an earlier one, across generators", () => {
  const a = createSortableIds({ now: () => 1_000_000 })("evt");
  const b = createSortableIds({ now: () => 1_000_001 })("evt");
  assert.ok(a < b);
});

test("ids keep their random part distinct across many refills of the random pool", () => {
  const next = createSortableIds({ now: () => 1_000_000 });
  const randomParts = new Set<string>();
  const all = new Set<string>();
  for (let i = 0; i < 5_000; i++) {
    const id = next("evt");
    all.add(id);
    randomParts.add(id.slice(-6));
  }
  assert.equal(all.size, 5_000);
  // 5,000 draws of 30 random bits: a repeat is possible but rare (about 1 in 86), several are not.
  assert.ok(randomParts.size >= 4_998, `only ${randomParts.size} distinct random parts`);
});
