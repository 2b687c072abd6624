/**
 * The next-edit route's cost in the relay, on its lane against express, in one run: `tab-relay serve` (the local
 * next-edit engine) asked over one kept-alive `node:http` connection, in blocks that alternate between a spelling the
 * lane serves (`/api/v1/tab/next-edits`) and one that falls through to express (the same path with a trailing slash,
 * which answers alike: test/relay/nextEditHeaders.test.ts). Per block: the relay's main thread's CPU per request
 * (its `schedstat`, in nanoseconds) and the round trip's median, requests back to back; then the same after a 50 ms
 * idle gap before each request, as an editor's pauses leave the relay.
 *
 * Usage: npx tsx test/bench/nextEditRoute.ts [--requests n] [--blocks n] [--cpu-prof]   (build the relay first)
 *   --cpu-prof  writes a CPU profile of the relay into test-output/bench/profiles/ (test/bench/profileSummary.ts reads it)
 */
import { readFileSync } from "node:fs";
import { Agent } from "node:http";
import { cpus, loadavg } from "node:os";
import { resolve } from "node:path";
import type { NextEditRequest } from "@tab-relay/shared";
import { WARM_UP_REQUEST } from "../../relay/src/nextEdits/service";
import { keptAliveCall } from "./keptAliveCall";
import { cleanEnv, startBenchRelay } from "./servers";

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const requests = option("--requests", 500);
const blocks = option("--blocks", 6);
const GAPPED = 100;
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const root = resolve(import.meta.dirname, "../..");
const relay = await startBenchRelay(
  { root, baseEnv: cleanEnv(process.env) },
  {
    settings: { TAB_RELAY_RATE_LIMITS: "reads=10000000,writes=1000", TAB_RELAY_LOG_LEVEL: "warn" },
    cpuProfileDir: args.includes("--cpu-prof") ? resolve(root, "test-output/bench/profiles") : undefined,
  },
);
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const call = keptAliveCall(relay.url, relay.apiKey, agent);
/** The relay's main thread's CPU time so far, in ns (the first field of its schedstat). */
const cpuNs = () =>
  Number(readFileSync(`/proc/${relay.server.pid}/task/${relay.server.pid}/schedstat`, "utf8").split(" ")[0]);

/** The relay's own warm-up rename (`sum` renamed `priceSum`), which the local engine proposes on, in its workspace. */
const body = JSON.stringify({ ...WARM_UP_REQUEST, workspace_slug: relay.workspaceSlug } satisfies NextEditRequest);

const spellings = [
  { name: "lane", path: "/api/v1/tab/next-edits" },
  { name: "express", path: "/api/v1/tab/next-edits/" },
] as const;

async function block(path: string, count: number, gapMs: number) {
  const rtts: number[] = [];
  const before = cpuNs();
  for (let i = 0; i < count; i++) {
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    let text = "";
    const started = performance.now();
    await call("POST", path, body, (chunk) => (text += chunk));
    rtts.push(performance.now() - started);
    if (!text.includes('"edits":[{')) throw new Error(`${path} proposed no edit: ${text.slice(0, 300)}`);
  }
  return { cpuUs: (cpuNs() - before) / 1000 / count, rtt: median(rtts) };
}

try {
  process.stderr.write(`load average at the start: ${load()} (${cpus().length} cores)\n`);
  const results = new Map<string, { cpu: number[]; rtt: number[]; gappedCpu: number[]; gappedRtt: number[] }>();
  for (const { name } of spellings) results.set(name, { cpu: [], rtt: [], gappedCpu: [], gappedRtt: [] });
  for (const { path } of spellings) await block(path, 200, 0); // warm both
  for (let b = 0; b < blocks; b++) {
    // The order turns every block, so neither spelling always follows the other.
    for (const { name, path } of b % 2 === 0 ? spellings : [...spellings].reverse()) {
      const warm = await block(path, requests, 0);
      const gapped = await block(path, GAPPED / 10, 50);
      const r = results.get(name)!;
      r.cpu.push(warm.cpuUs);
      r.rtt.push(warm.rtt);
      r.gappedCpu.push(gapped.cpuUs);
      r.gappedRtt.push(gapped.rtt);
    }
    process.stderr.write(`block ${b + 1} of ${blocks}\n`);
  }
  const lane = results.get("lane")!;
  const express = results.get("express")!;
  console.log(
    `\nNext-edit route, ${requests} requests a block back to back and ${GAPPED / 10} after a 50 ms gap, medians of ${blocks} blocks\n`,
  );
  console.log("| spelling | relay CPU per request | round trip p50 | after a 50 ms gap: CPU | round trip p50 |");
  console.log("|---|---:|---:|---:|---:|");
  for (const [name, r] of [
    ["lane", lane],
    ["express", express],
  ] as const) {
    console.log(
      `| ${name} | ${median(r.cpu).toFixed(0)} µs | ${median(r.rtt).toFixed(3)} ms | ${median(r.gappedCpu).toFixed(0)} µs | ${median(r.gappedRtt).toFixed(3)} ms |`,
    );
  }
  console.log(
    `\nlane ÷ express: CPU ${(median(lane.cpu) / median(express.cpu)).toFixed(2)}×, after a gap ${(median(lane.gappedCpu) / median(express.gappedCpu)).toFixed(2)}×`,
  );
  process.stderr.write(`load average at the end: ${load()}\n`);
} finally {
  agent.destroy();
  await relay.stop();
}
