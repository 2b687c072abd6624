import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Page, catchUp } from "./catchUp";

/** A conversation of messages m0001… (ids sort by time), read newest first in pages like the API. */
function conversation(count: number, pageSize: number) {
  const ids = Array.from({ length: count }, (_, i) => `m${String(i + 1).padStart(4, "0")}`);
  const reads: (string | null)[] = [];
  const fetchPage = async (before: string | null): Promise<Page<{ id: string }>> => {
    reads.push(before);
    const older = before === null ? ids : ids.filter((id) => id < before);
    const page = older.slice(-pageSize);
    return { messages: page.map((id) => ({ id })), full: page.length === pageSize };
  };
  return { ids, reads, fetchPage };
}

describe("catching up after a live reconnection", () => {
  test("a short gap is one read: only the messages not shown yet, oldest first", async () => {
    const { ids, reads, fetchPage } = conversation(50, 10);
    const shown = new Set(ids.slice(0, 46));
    const result = await catchUp(fetchPage, (id) => shown.has(id), 20);
    assert.deepEqual(result, {
      messages: [{ id: "m0047" }, { id: "m0048" }, { id: "m0049" }, { id: "m0050" }],
      closed: true,
    });
    assert.deepEqual(reads, [null]);
  });

  test("a gap longer than a page is read back page by page until it meets what is shown", async () => {
    const { ids, reads, fetchPage } = conversation(300, 100);
    const shown = new Set(ids.slice(0, 30));
    const result = await catchUp(fetchPage, (id) => shown.has(id), 20);
    assert.equal(result.closed, true);
    assert.deepEqual(
      result.messages.map((m) => m.id),
      ids.slice(30),
    );
    assert.deepEqual(reads, [null, "m0201", "m0101"]);
  });

  test("a conversation that had nothing shown is read to its beginning", async () => {
    const { ids, fetchPage } = conversation(25, 10);
    const result = await catchUp(fetchPage, () => false, 20);
    assert.deepEqual(
      result.messages.map((m) => m.id),
      ids,
    );
    assert.equal(result.closed, true);
  });

  test("a gap longer than the pages allowed says it is not closed", async () => {
    const { ids, reads, fetchPage } = conversation(1000, 100);
    const shown = new Set(ids.slice(0, 10));
    const result = await catchUp(fetchPage, (id) => shown.has(id), 3);
    assert.equal(result.closed, false);
    assert.deepEqual(
      result.messages.map((m) => m.id),
      ids.slice(700),
    );
    assert.equal(reads.length, 3);
  });
});
