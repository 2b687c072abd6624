/**
 * Usage insights at the store level (docs/benchmarks.md#usage-insights): what counting adds to one completion, what a
 * flush of a busy 10 s costs, and how fast a year of daily aggregates for 500 people reads, on SQLite and PostgreSQL.
 * `npx tsx test/bench/usageBench.ts [--people 500] [--days 365] [--languages 2]`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { FakeClock } from "@tab-relay/shared/testing";
import { silentLogger } from "../../relay/src/logger";
import { createMetrics } from "../../relay/src/metrics";
import { openPostgresStore } from "../../relay/src/store/postgres";
import { openSqliteStore } from "../../relay/src/store/sqlite";
import type { Store, UsageGroupBy, UsageRow } from "../../relay/src/store/types";
import { emptyCounts } from "../../relay/src/usage/columns";
import { createUsageRecorder } from "../../relay/src/usage/recorder";
import { createDatabase, dropDatabases, postgresProblem } from "../support/scaleOutServices";

const { values } = parseArgs({
  options: {
    people: { type: "string", default: "500" },
    days: { type: "string", default: "365" },
    languages: { type: "string", default: "2" },
  },
});
const PEOPLE = Number(values.people);
const DAYS = Number(values.days);
const LANGUAGES = ["typescript", "python", "go", "rust", "java"].slice(0, Number(values.languages));
const WS = "ws_bench";
const DAY_MS = 24 * 60 * 60 * 1000;
const FIRST_DAY = Date.UTC(2025, 10, 25);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** Nanoseconds per completion the recorder's counting costs, with the completion id remembered for its events. */
function countingCost(): { completionNs: number; eventNs: number } {
  const recorder = createUsageRecorder({
    store: { usage: { add: async () => {}, summarize: async () => [], prune: async () => 0 } },
    clock: new FakeClock(FIRST_DAY),
    logger: silentLogger,
    metrics: createMetrics(),
  });
  const n = 200_000;
  const runs: number[] = [];
  const eventRuns: number[] = [];
  for (let round = 0; round < 5; round++) {
    let started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      recorder.completion(
        { workspaceId: WS, userId: `usr_${i % PEOPLE}` },
        {
          id: `chatcmpl-${round}-${i}`,
          language: LANGUAGES[i % LANGUAGES.length],
          model: "tab-v1",
          cacheHit: false,
          failed: false,
        },
      );
    }
    runs.push(Number(process.hrtime.bigint() - started) / n);
    started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      recorder.events({ workspaceId: WS, userId: `usr_${i % PEOPLE}` }, [
        {
          id: `chatcmpl-${round}-${i}`,
          outcome: "accepted",
          shown_chars: 30,
          accepted_chars: 30,
          shown_lines: 2,
          accepted_lines: 2,
          time_to_ghost_ms: 180,
        },
      ]);
    }
    eventRuns.push(Number(process.hrtime.bigint() - started) / n);
  }
  void recorder.stop();
  return { completionNs: median(runs), eventNs: median(eventRuns) };
}

function yearOfRows(): UsageRow[][] {
  const days: UsageRow[][] = [];
  for (let d = 0; d < DAYS; d++) {
    const day = new Date(FIRST_DAY + d * DAY_MS).toISOString().slice(0, 10);
    const rows: UsageRow[] = [];
    for (let p = 0; p < PEOPLE; p++)
      for (const [l, language] of LANGUAGES.entries()) {
        const requests = 50 + ((p * 7 + d * 3 + l) % 150);
        rows.push({
          workspace_id: WS,
          day,
          user_id: `usr_${String(p).padStart(4, "0")}`,
          language,
          model: "tab-v1",
          ...emptyCounts(),
          requests,
          cache_hits: requests >> 4,
          errors: (p + d) % 5 === 0 ? 1 : 0,
          shown: requests >> 1,
          accepted: requests >> 3,
          accepted_partial: requests >> 5,
          dismissed: requests >> 3,
          typed_over: requests >> 3,
          shown_chars: requests * 20,
          accepted_chars: requests * 4,
          shown_lines: requests,
          accepted_lines: requests >> 2,
          ghost_ms_b3: requests >> 2,
          ghost_ms_b4: requests >> 2,
        });
      }
    days.push(rows);
  }
  return days;
}

async function measure(name: string, store: Store, settle?: () => Promise<void>): Promise<void> {
  const days = yearOfRows();
  let started = performance.now();
  for (const rows of days) await store.transaction((tx) => tx.usage.add(rows));
  const seeded = performance.now() - started;
  // A year-old table has long been vacuumed and analysed by autovacuum; a freshly loaded one has not.
  await settle?.();
  const rowCount = days.reduce((n, rows) => n + rows.length, 0);
  console.log(`${name}: seeded ${rowCount.toLocaleString("en")} rows in ${(seeded / 1000).toFixed(1)} s`);

  // One day's flush: every person in every language, as one busy 10 s could leave (a worst case).
  const flush = days[DAYS - 1] as UsageRow[];
  const flushes: number[] = [];
  for (let i = 0; i < 5; i++) {
    started = performance.now();
    await store.usage.add(flush);
    flushes.push(performance.now() - started);
  }
  console.log(`${name}: flushing ${flush.length} rows (additive upsert): median ${median(flushes).toFixed(1)} ms`);

  const since = new Date(FIRST_DAY).toISOString().slice(0, 10);
  const until = new Date(FIRST_DAY + DAYS * DAY_MS).toISOString().slice(0, 10);
  for (const groupBy of ["day", "user", "language", "model"] as UsageGroupBy[]) {
    const times: number[] = [];
    let groups = 0;
    for (let i = 0; i < 5; i++) {
      started = performance.now();
      // What GET /tab/usage asks: the groups and the totals.
      const [rows] = await Promise.all([
        store.usage.summarize(WS, { since, until, groupBy }),
        store.usage.summarize(WS, { since, until, groupBy: "all" }),
      ]);
      times.push(performance.now() - started);
      groups = rows.length;
    }
    console.log(
      `${name}: a year grouped by ${groupBy} (${groups} groups + totals): median ${median(times).toFixed(1)} ms`,
    );
  }
  const own: number[] = [];
  for (let i = 0; i < 5; i++) {
    started = performance.now();
    await Promise.all([
      store.usage.summarize(WS, { since, until, groupBy: "day", userId: "usr_0042" }),
      store.usage.summarize(WS, { since, until, groupBy: "all", userId: "usr_0042" }),
    ]);
    own.push(performance.now() - started);
  }
  console.log(`${name}: one person's year by day: median ${median(own).toFixed(1)} ms`);
}

const cost = countingCost();
console.log(
  `counting: ${cost.completionNs.toFixed(0)} ns per completion, ${cost.eventNs.toFixed(0)} ns per reported event (in memory; no store call)`,
);

const dir = mkdtempSync(join(tmpdir(), "tab-relay-usage-bench-"));
const sqlite = await openSqliteStore(join(dir, "relay.db"));
try {
  await measure("SQLite", sqlite);
} finally {
  await sqlite.close();
  rmSync(dir, { recursive: true, force: true });
}

const problem = await postgresProblem();
if (problem) console.log(`PostgreSQL: skipped (${problem})`);
else {
  const database = await createDatabase("tab_relay_usage_bench");
  const store = await openPostgresStore(database.url, { poolSize: 4 });
  try {
    await measure("PostgreSQL", store, async () => {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        await client.query("vacuum analyze tab_usage, tab_usage_days, tab_usage_weeks");
      } finally {
        await client.end();
      }
    });
  } finally {
    await store.close();
    await dropDatabases([database.name]);
  }
}
