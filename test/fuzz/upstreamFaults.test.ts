import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { after, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { type UpstreamFault, startMisbehavingUpstream } from "../support/misbehavingUpstream";
import { type FuzzRelay, WORKSPACE_SLUG, initDataFolder, startRelayProcess } from "./relay";

/**
 * Issue 19 §2, measured: a relay process (as an operator runs it) behind a model server that misbehaves each way the
 * issue found. Under each fault, several completions at once while /healthz is asked every 10 ms: no answer is a
 * 500, the process never restarts, /healthz answers within a second (the goal, a p99 under 50 ms, is measured and
 * recorded) and the relay's RSS grows by less than 50 MB.
 * The figures of one run are in docs/testing.md.
 */

const FAULTS: UpstreamFault[] = [
  { kind: "endless-line" },
  { kind: "huge-json", bytes: 64 * 1024 * 1024 },
  { kind: "deltas-forever", text: "", everyMs: 5 },
  { kind: "gzip-bomb", bytes: 64 * 1024 * 1024 },
  { kind: "cut-mid-line" },
  { kind: "invalid-utf8" },
  // Within the default size limits (2 MiB a body, 256 Ki characters an event), but costly to parse.
  { kind: "nested-json", bytes: 2 * 1024 * 1024 - 1024 },
  { kind: "nested-json", bytes: 250 * 1024, stream: true },
];
const AT_ONCE = 4;
const FAULT_MS = 3_000;
const EVENT_LOOP_DELAY = fileURLToPath(new URL("../support/eventLoopDelay.mjs", import.meta.url));

/** The relay's own event-loop delay since the last call (p99 and worst, in ms), read from the preload's line. */
let loopReports = 0;
async function relayLoopDelay(relay: FuzzRelay): Promise<{ p99: number; max: number }> {
  const wanted = `event-loop-delay n=${++loopReports} `;
  process.kill(relay.pid, "SIGUSR2");
  const deadline = performance.now() + 5_000;
  for (;;) {
    const line = relay
      .tail(400)
      .split("\n")
      .find((l) => l.startsWith(wanted));
    if (line !== undefined) {
      const value = (name: string) => Number(new RegExp(`${name}=([\\d.]+)`).exec(line)?.[1]);
      return { p99: value("p99_ms"), max: value("max_ms") };
    }
    assert.ok(performance.now() < deadline, "the relay did not report its event-loop delay");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const HEALTHZ_PROBE = fileURLToPath(new URL("../support/healthzProbe.mjs", import.meta.url));

/** /healthz asked every 10 ms by a process of its own, not by this one, which also serves the faulty model server. */
async function startHealthzProbe(
  url: string,
): Promise<{ stop(): Promise<{ ms: number[]; statuses: Record<string, number> }> }> {
  const child = spawn(process.execPath, [HEALTHZ_PROBE, url], { stdio: ["pipe", "pipe", "inherit"] });
  tracked.add(child);
  const lines = createInterface({ input: child.stdout! });
  const iterator = lines[Symbol.asyncIterator]();
  const first = await iterator.next();
  assert.equal(first.value, "ready", "the /healthz probe did not start");
  return {
    async stop() {
      child.stdin!.write("stop\n");
      const answer = await iterator.next();
      tracked.delete(child);
      assert.ok(!answer.done, "the /healthz probe ended without its figures");
      return JSON.parse(answer.value as string) as { ms: number[]; statuses: Record<string, number> };
    },
  };
}

const tracked = new Set<ChildProcess>();
after(() => {
  for (const child of tracked) child.kill("SIGKILL");
});

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

test(
  "under each upstream fault: no 500, no restart, /healthz answers, RSS kept < 50 MB",
  { timeout: 180_000 },
  async () => {
    const upstream = await startMisbehavingUpstream(FAULTS[0]!);
    const folder = initDataFolder();
    const relay = await startRelayProcess({
      dataDir: folder.dataDir,
      rateLimits: "reads=1000000,writes=1000000",
      tracked,
      env: {
        // The inspector, as the harness sets it (for collectGarbage), and the relay's own event-loop delay on SIGUSR2.
        NODE_OPTIONS: `--inspect=127.0.0.1:0 --import ${pathToFileURL(EVENT_LOOP_DELAY).href}`,
        TAB_RELAY_CACHE_ENTRIES: "0",
        TAB_RELAY_UPSTREAM_URL: upstream.url,
        TAB_RELAY_UPSTREAM_MODEL: "m",
        TAB_RELAY_UPSTREAM_API: "chat",
        TAB_RELAY_UPSTREAM_TIMEOUT_MS: "1000",
        TAB_RELAY_UPSTREAM_DEADLINE_MS: "5000",
      },
    });
    const rows: string[] = [];
    try {
      // Warm: the first completions load the tokenizer and the upstream transport.
      upstream.fault = { kind: "cut-mid-line" };
      for (let i = 0; i < 3; i++) await complete(relay.url, folder.ownerKey, i % 2 === 0);
      /** Rounds of completions under `fault` for at least FAULT_MS while /healthz is asked, and what they cost. */
      const underFault = async (fault: UpstreamFault) => {
        upstream.fault = fault;
        // Each fault's growth is from what the relay held alive just before it, not from the start of the run: the
        // garbage of the faults before (a collector that has not run yet) is not this fault's.
        await relay.collectGarbage();
        const baseKiB = relay.rssKiB() ?? 0;
        await relayLoopDelay(relay);
        const probe = await startHealthzProbe(relay.url);
        let peakKiB = relay.rssKiB() ?? 0;
        const sampler = setInterval(() => (peakKiB = Math.max(peakKiB, relay.rssKiB() ?? 0)), 20);
        // Rounds of completions for at least FAULT_MS, so /healthz is asked a few hundred times under the fault.
        const statuses: number[] = [];
        const faultStarted = performance.now();
        while (performance.now() - faultStarted < FAULT_MS) {
          statuses.push(
            ...(await Promise.all(
              Array.from({ length: AT_ONCE }, (_, i) => complete(relay.url, folder.ownerKey, i % 2 === 0)),
            )),
          );
        }
        const { ms: latencies, statuses: probed } = await probe.stop();
        clearInterval(sampler);
        assert.deepEqual(Object.keys(probed), ["200"], `${fault.kind}: /healthz answered ${JSON.stringify(probed)}`);
        const loop = await relayLoopDelay(relay);
        const growthMB = (peakKiB - baseKiB) / 1024;
        await relay.collectGarbage();
        const keptMB = ((relay.rssKiB() ?? 0) - baseKiB) / 1024;
        assert.ok(!statuses.includes(500), `${fault.kind}: ${statuses.join(", ")}`);
        assert.ok(relay.alive(), `${fault.kind}: the relay ended:\n${relay.tail()}`);
        return { statuses, latencies, loop, growthMB, keptMB };
      };
      for (const fault of FAULTS) {
        let measured = await underFault(fault);
        // The relay's own stalls, apart from this process's: nested JSON within the size limits once held it 1 to 3 s,
        // on every try. On a loaded CI machine (load 11 on 2 cores) the first fault's rounds once saw one stall of
        // 1.1 s that no local run at that load came near (117 to 131 ms): a stall of a second is tried again, and
        // only one that comes back fails.
        let stalledOnce = "";
        if (measured.loop.max >= 1000) {
          stalledOnce = ` (a first try's ${measured.loop.max} ms)`;
          measured = await underFault(fault);
        }
        const { statuses, latencies, loop, growthMB, keptMB } = measured;
        const p99 = percentile(latencies, 99);
        const worst = Math.max(...latencies);
        rows.push(
          `| ${fault.kind}${"stream" in fault && fault.stream ? " (streamed)" : ""} | ${tally(statuses)} | ${latencies.length} | ${p99.toFixed(1)} | ${worst.toFixed(1)} | ${loop.p99.toFixed(1)} | ${loop.max.toFixed(1)}${stalledOnce} | ${growthMB.toFixed(1)} | ${keptMB.toFixed(1)} |`,
        );
        // The goal is a p99 under 50 ms (the figures in docs/testing.md); the bound asserted leaves room for a loaded CI
        // machine, where the probe's own process is scheduled late too.
        assert.ok(p99 < 1000, `${fault.kind}: /healthz p99 ${p99.toFixed(1)} ms`);
        // The goal (growth under 50 MB) is for what the relay keeps: measured after a full collection. The peak also
        // holds garbage not yet collected, which V8's young generation lets reach tens of MB by itself (one CI run saw
        // 51.8 MB under the endless line, another 0.4 MB), so it is bounded far below the 1.9 GB the fault once made.
        assert.ok(keptMB < 50, `${fault.kind}: RSS kept ${keptMB.toFixed(1)} MB more after a full collection`);
        assert.ok(growthMB < 150, `${fault.kind}: RSS peaked ${growthMB.toFixed(1)} MB above where it started`);
        assert.ok(loop.max < 1000, `${fault.kind}: the relay's event loop stalled for ${loop.max} ms${stalledOnce}`);
      }
    } finally {
      console.log(
        [
          "| fault | statuses | /healthz asked | /healthz p99 ms | worst ms | relay event-loop delay p99 ms | its worst ms | RSS peak growth MB | RSS kept after a collection MB |",
          "|---|---|---|---|---|---|---|---|---|",
          ...rows,
        ].join("\n"),
      );
      await relay.stop();
      folder.remove();
      await upstream.close();
    }
  },
);

/** Statuses and how many of each, in the order first seen: "502 ×40" or "200 ×20, 502 ×20". */
function tally(statuses: number[]): string {
  const counts = new Map<number, number>();
  for (const status of statuses) counts.set(status, (counts.get(status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${status} ×${count}`).join(", ");
}

/** One completion, streamed or not; its HTTP status (200 for a stream that ended with an error event). */
async function complete(url: string, key: string, stream: boolean): Promise<number> {
  const response = await fetch(`${url}/api/v1/tab/chat/completions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({
      model: "tab-v1",
      ...(stream ? { stream: true } : {}),
      tab_context: {
        surface: "code",
        workspace_slug: WORKSPACE_SLUG,
        entity_id: "a.ts",
        document_type: "plaintext",
        active_text_before_cursor: "function add(a, b) {\n  return ",
      },
    }),
  });
  await response.arrayBuffer();
  return response.status;
}
