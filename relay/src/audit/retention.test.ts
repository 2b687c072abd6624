import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { FakeClock } from "@tab-relay/shared/testing";
import { silentLogger } from "../logger";
import { openSqliteStore } from "../store/sqlite";
import type { AuditRecord, Store, UsageRow } from "../store/types";
import { emptyCounts } from "../usage/columns";
import { AUDIT_PRUNE_EVERY_MS, startAuditRetention } from "./retention";

const DAY_MS = 24 * 60 * 60 * 1000;
const START = Date.UTC(2026, 5, 1);

function record(id: string, at: number): AuditRecord {
  return {
    id,
    workspace_id: "ws_acme",
    at: new Date(at).toISOString(),
    action: "api_key.created",
    actor_user_id: "usr_olive",
    via: "api_key",
    via_id: "key_1",
    address: "127.0.0.1",
    target_type: "api_key",
    target_id: "key_2",
    details: "{}",
  };
}

let dir: string;
let store: Store;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "tab-relay-retention-"));
  store = await openSqliteStore(join(dir, "relay.db"));
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const kept = async () => (await store.audit.list("ws_acme", { limit: 100 })).map((row) => row.id).sort();

test("records older than the retention go at start and then within the hour they pass it, on the injected clock", async () => {
  const clock = new FakeClock(START);
  await store.audit.create(record("aud_a_91_days", START - 91 * DAY_MS));
  await store.audit.create(record("aud_b_90_days_less_30_min", START - 90 * DAY_MS + 30 * 60 * 1000));
  await store.audit.create(record("aud_c_yesterday", START - DAY_MS));
  const retention = startAuditRetention({ store, clock, logger: silentLogger, retentionDays: 90 });
  await retention.idle();
  assert.deepEqual(await kept(), ["aud_b_90_days_less_30_min", "aud_c_yesterday"]);

  // 29 minutes on, nothing has passed the retention yet, and no prune is due anyway.
  await clock.advance(29 * 60 * 1000);
  await retention.idle();
  assert.deepEqual(await kept(), ["aud_b_90_days_less_30_min", "aud_c_yesterday"]);
  // The hourly prune after it passed takes it.
  await clock.advance(AUDIT_PRUNE_EVERY_MS - 29 * 60 * 1000);
  await retention.idle();
  assert.deepEqual(await kept(), ["aud_c_yesterday"]);

  await retention.stop();
  assert.equal(clock.pendingTimers, 0, "a stopped retention schedules nothing more");
  await clock.advance(100 * DAY_MS);
  assert.deepEqual(await kept(), ["aud_c_yesterday"]);
  await store.audit.prune(new Date(START + DAY_MS).toISOString());
});

test("the retention is the configured number of days", async () => {
  const clock = new FakeClock(START);
  await store.audit.create(record("aud_d_8_days", START - 8 * DAY_MS));
  await store.audit.create(record("aud_e_6_days", START - 6 * DAY_MS));
  const retention = startAuditRetention({ store, clock, logger: silentLogger, retentionDays: 7 });
  await retention.idle();
  assert.deepEqual(await kept(), ["aud_e_6_days"]);
  await retention.stop();
});

test("a prune that fails is logged and tried again an hour later", async () => {
  const clock = new FakeClock(START);
  const errors: string[] = [];
  let calls = 0;
  const failing: Pick<Store, "audit" | "usage"> = {
    usage: store.usage,
    audit: {
      ...store.audit,
      async prune() {
        calls++;
        throw new Error("database is locked");
      },
    },
  };
  const logger = { ...silentLogger, error: (message: string) => void errors.push(message) };
  const retention = startAuditRetention({ store: failing, clock, logger, retentionDays: 90 });
  await retention.idle();
  await clock.advance(AUDIT_PRUNE_EVERY_MS);
  await retention.idle();
  assert.equal(calls, 2);
  assert.deepEqual(errors, [
    "could not prune the audit log and usage aggregates",
    "could not prune the audit log and usage aggregates",
  ]);
  await retention.stop();
});

test("usage aggregates go by whole days once all of the day is past the retention", async () => {
  const clock = new FakeClock(START + 30 * 60 * 1000);
  const row = (day: string): UsageRow => ({
    workspace_id: "ws_acme",
    day,
    user_id: "usr_olive",
    language: "typescript",
    model: "tab-v1",
    ...emptyCounts(),
    requests: 1,
  });
  // START is 2026-06-01; 90 days before half past midnight is 2026-03-03 00:30, so 03-03 has a part still kept.
  await store.usage.add([row("2026-03-01"), row("2026-03-02"), row("2026-03-03"), row("2026-05-31")]);
  const days = async () =>
    (await store.usage.summarize("ws_acme", { since: "2026-01-01", until: "2027-01-01", groupBy: "day" })).map(
      (summary) => summary.key,
    );
  const retention = startAuditRetention({ store, clock, logger: silentLogger, retentionDays: 90 });
  await retention.idle();
  assert.deepEqual(await days(), ["2026-03-03", "2026-05-31"]);
  await clock.advance(AUDIT_PRUNE_EVERY_MS * 24);
  await retention.idle();
  assert.deepEqual(await days(), ["2026-05-31"]);
  await retention.stop();
});
