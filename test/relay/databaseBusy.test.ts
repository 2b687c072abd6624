import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import SqliteDatabase from "better-sqlite3";
import { DATABASE_FILE } from "../../relay/src/main";
import { errorOf, startTestRelay, type TestRelay } from "../support/relayHarness";

/**
 * A SQLite write that waits past busy_timeout (another process, a backup tool or sqlite3 holding the write lock) is
 * the database being busy, not the relay failing: 503 SERVICE_UNAVAILABLE with Retry-After, and nothing written.
 */
let relay: TestRelay;
before(async () => {
  relay = await startTestRelay();
});
after(() => relay.close());

test("a write that waits past busy_timeout answers 503 with Retry-After, not 500, and the next try succeeds", async () => {
  const other = new SqliteDatabase(join(relay.dataDir, DATABASE_FILE));
  other.pragma("busy_timeout = 0");
  other.exec("BEGIN IMMEDIATE");
  try {
    const started = performance.now();
    const refused = await relay.request("/api/v1/api-keys", {
      method: "POST",
      json: { name: "while busy", scopes: ["agents.read"] },
    });
    assert.equal(refused.status, 503, `answered ${refused.status} after ${Math.round(performance.now() - started)} ms`);
    assert.match(refused.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
    const error = await errorOf(refused);
    assert.equal(error.code, "SERVICE_UNAVAILABLE");
    assert.match(error.message, /database is busy/i);
  } finally {
    other.exec("ROLLBACK");
    other.close();
  }
  const made = await relay.request("/api/v1/api-keys", {
    method: "POST",
    json: { name: "after", scopes: ["agents.read"] },
  });
  assert.equal(made.status, 201);
  const listed = (await (await relay.request("/api/v1/api-keys")).json()) as { data: { name: string }[] };
  assert.deepEqual(
    listed.data.map(({ name }) => name).filter((name) => name === "while busy" || name === "after"),
    ["after"],
    "the refused write left nothing behind",
  );
});
