/**
 * Two builds of the relay against the same upstream and the same node:http pass-through, taking turns round by round
 * (the two relays swap places every round), so the machine's load lands on both alike: what the streaming section
 * cannot do for two commits. Each relay runs from its own checkout, built (`npm run build`).
 * Usage: npx tsx test/bench/pairedRelays.ts <other checkout> [rounds=6] [round ms=2000]
 * Prints each round's streams/s and server CPU per stream, then the totals at 1 and at 50 streams in flight.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type LoadSlice, type StreamTarget, combineSlices, runSlice } from "./load";
import { cartCompletionTarget, cleanEnv, startBenchRelay, startProxy, startUpstream } from "./servers";
import { CURSOR, REPLY, relaySettings } from "./streamingSection";

const other = process.argv[2] ?? "";
if (other === "") {
  console.error("usage: npx tsx test/bench/pairedRelays.ts <other checkout> [rounds] [round ms]");
  process.exit(2);
}
const rounds = Number(process.argv[3] ?? 6);
const sliceMs = Number(process.argv[4] ?? 2_000);
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0];
const PATHS = ["proxy", "other", "this"] as const;

async function main(): Promise<void> {
  const env = (root: string) => ({ root, baseEnv: cleanEnv(process.env) });
  const here = env(fileURLToPath(new URL("../..", import.meta.url)));
  const upstream = await startUpstream(here, REPLY);
  const proxy = await startProxy(here, new URL(upstream.url).origin);
  const settings = relaySettings(upstream.url);
  const otherRelay = await startBenchRelay(env(resolve(other)), { settings });
  const thisRelay = await startBenchRelay(here, { settings });
  const proxyBody = JSON.stringify({
    model: "bench",
    stream: true,
    messages: [{ role: "user", content: CURSOR.before }],
  });
  const targets: Record<(typeof PATHS)[number], StreamTarget> = {
    proxy: { name: "proxy", url: `${proxy.url}/v1/chat/completions`, headers: {}, body: proxyBody },
    other: cartCompletionTarget(otherRelay, "other", CURSOR),
    this: cartCompletionTarget(thisRelay, "this", CURSOR),
  };
  const pids = { proxy: proxy.server.pid, other: otherRelay.server.pid, this: thisRelay.server.pid };
  console.log(`1-minute load average at the start: ${load()}`);
  try {
    for (const concurrency of [1, 50]) {
      const slices: Record<string, LoadSlice[]> = { proxy: [], other: [], this: [] };
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? PATHS : (["proxy", "this", "other"] as const);
        const cells: string[] = [];
        for (const path of order) {
          const slice = await runSlice(targets[path], {
            concurrency,
            warmupMs: round === 0 ? 1_500 : 300,
            durationMs: sliceMs,
            processes: pids,
          });
          slices[path]?.push(slice);
          const cpu = slice.cpuMs[path];
          const perStream = cpu === undefined ? "" : ` ${((cpu * 1000) / slice.ttfbMs.length).toFixed(0)} µs`;
          cells.push(`${path} ${(slice.ttfbMs.length / (slice.elapsedMs / 1000)).toFixed(0)}/s${perStream}`);
        }
        console.log(`${concurrency} in flight, round ${round + 1}: ${cells.join(", ")} (load ${load()})`);
      }
      const proxyResult = combineSlices("proxy", concurrency, slices.proxy ?? []);
      for (const path of PATHS) {
        const r = combineSlices(path, concurrency, slices[path] ?? []);
        const cpu = r.cpuUsPerStream[path] ?? Number.NaN;
        console.log(
          `${concurrency} in flight, ${path}: ${r.streamsPerSecond.toFixed(0)} streams/s ` +
            `(${(r.streamsPerSecond / proxyResult.streamsPerSecond).toFixed(2)}× the pass-through), ` +
            `TTFB p50 ${r.ttfbMs.p50.toFixed(3)} ms (${(r.ttfbMs.p50 - proxyResult.ttfbMs.p50).toFixed(3)} over it), ` +
            `CPU ${cpu.toFixed(0)} µs/stream (${(cpu / (proxyResult.cpuUsPerStream.proxy ?? Number.NaN)).toFixed(2)}×), errors ${r.errors}`,
        );
      }
    }
  } finally {
    console.log(`1-minute load average at the end: ${load()}`);
    await thisRelay.stop();
    await otherRelay.stop();
    await proxy.server.stop();
    await upstream.server.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
