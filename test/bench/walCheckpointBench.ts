/**
 * The relay's SQLite connection under a paced write load, with SQLite's automatic checkpoint (the relay before
 * issue 23) and with the checkpointing worker (relay/src/store/walCheckpointer.ts): how long each commit holds
 * the event loop, the event loop's delay, and how large the WAL file grows.
 *
 *   npx tsx test/bench/walCheckpointBench.ts [--rate 600] [--seconds 20] [--mode auto|worker|both]
 *
 * Each transaction is two inserts of about 600 bytes and an update, as a post and its outbox row are.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { openRelayConnection } from "../../relay/src/store/sqlite";

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "600" },
    seconds: { type: "string", default: "20" },
    mode: { type: "string", default: "both" },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const modes = values.mode === "both" ? ["auto", "worker"] : [values.mode as string];

const quiet = { enabled: () => false, debug() {}, info() {}, warn: console.warn, error: console.error };
const pct = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * q) / 100))] ?? 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function run(mode: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "wal-bench-"));
  const path = join(dir, "relay.db");
  const connection = await openRelayConnection(
    path,
    mode === "worker" ? { logger: quiet, checkpoint: { startAfterWrites: 0 } } : {},
  );
  // Serving does not wait for the worker; the measurement does, so that it starts with the worker running.
  await connection.ready;
  const { sqlite } = connection;
  sqlite.exec(
    "create table messages (id integer primary key, body text not null, at text not null); " +
      "create table outbox (id integer primary key, payload text not null, due text not null); " +
      "create index outbox_due on outbox (due)",
  );
  const insertMessage = sqlite.prepare("insert into messages (body, at) values (?, ?)");
  const insertEvent = sqlite.prepare("insert into outbox (payload, due) values (?, ?)");
  const claim = sqlite.prepare("update outbox set due = ? where id = ?");
  const write = sqlite.transaction((k: number) => {
    const at = new Date().toISOString();
    insertMessage.run("m".repeat(600) + k, at);
    const { lastInsertRowid } = insertEvent.run("e".repeat(600) + k, at);
    claim.run(at, lastInsertRowid);
  });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const commits: number[] = [];
  let walMax = 0;
  const total = rate * seconds;
  delay.enable();
  const start = performance.now();
  for (let k = 0; k < total; k++) {
    const due = start + (k * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    else if (k % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    const t = performance.now();
    write(k);
    commits.push(performance.now() - t);
    if (k % 100 === 0) walMax = Math.max(walMax, statSync(`${path}-wal`).size);
  }
  const elapsed = performance.now() - start;
  delay.disable();
  commits.sort((a, b) => a - b);
  const walEnd = statSync(`${path}-wal`).size;
  console.log(
    JSON.stringify({
      mode,
      rate,
      achievedRate: Math.round((total * 1000) / elapsed),
      transactions: total,
      commitMs: {
        p50: +pct(commits, 50).toFixed(3),
        p99: +pct(commits, 99).toFixed(3),
        p999: +pct(commits, 99.9).toFixed(3),
        max: +(commits.at(-1) ?? 0).toFixed(3),
        over10ms: commits.filter((c) => c > 10).length,
      },
      eventLoopDelayMs: {
        p99: delay.percentile(99) / 1e6,
        p999: delay.percentile(99.9) / 1e6,
        max: delay.max / 1e6,
      },
      walMaxMB: +(walMax / 1e6).toFixed(1),
      walEndMB: +(walEnd / 1e6).toFixed(1),
      dbMB: +(statSync(path).size / 1e6).toFixed(1),
    }),
  );
  await connection.stopCheckpointer();
  sqlite.close();
  rmSync(dir, { recursive: true, force: true });
}

for (const mode of modes) await run(mode);
