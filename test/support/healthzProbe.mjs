/* global fetch, AbortSignal -- Node 20 globals */
// Asks a relay's /healthz every 10 ms from a process of its own, so the time measured is the relay's and not that of
// a test process also busy serving a misbehaving model server (test/fuzz/upstreamFaults.test.ts). Started with the
// relay's URL; on a line "stop" on stdin it writes the latencies in ms as one JSON line ({ ms, statuses }) and exits.
import { createInterface } from "node:readline";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { setTimeout } from "node:timers";

const url = `${process.argv[2]}/healthz`;
const ms = [];
const statuses = {};
let probing = true;
const loop = (async () => {
  while (probing) {
    const started = performance.now();
    let status = "error";
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      await response.arrayBuffer();
      status = String(response.status);
    } catch {
      // counted as "error" below: a probe that cannot reach the relay is a finding, not a crash of the probe
    }
    ms.push(performance.now() - started);
    statuses[status] = (statuses[status] ?? 0) + 1;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
})();
process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== "stop") continue;
  probing = false;
  await loop;
  process.stdout.write(`${JSON.stringify({ ms, statuses })}\n`);
  process.exit(0);
}
