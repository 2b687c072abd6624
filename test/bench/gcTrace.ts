/**
 * One relay (this checkout's build) under the streaming section's load, with V8's `--trace-gc-nvp`, so what its
 * collections copy and promote can be read per collection: `allocated` since the last one, `new_space_survived`,
 * `promoted`, `pause`. Prints the means over the scavenges of the measured window and writes the trace to a file.
 * Usage: npx tsx test/bench/gcTrace.ts [trace file=test-output/bench/gc-trace.txt] [in flight=50] [ms=6000] [node flags…]
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { runSlice } from "./load";
import { cartCompletionTarget, cleanEnv, startUpstream } from "./servers";
import { CURSOR, REPLY, relaySettings } from "./streamingSection";

const root = fileURLToPath(new URL("../..", import.meta.url));
const traceFile = process.argv[2] ?? join(root, "test-output/bench/gc-trace.txt");
const concurrency = Number(process.argv[3] ?? 50);
const durationMs = Number(process.argv[4] ?? 6_000);
/** More V8 flags for the relay, e.g. `--max-semi-space-size=16` (the relay then leaves its young generation alone). */
const nodeFlags = process.argv.slice(5);

async function main(): Promise<void> {
  const env = { root, baseEnv: cleanEnv(process.env) };
  const upstream = await startUpstream(env, REPLY);
  const data = mkdtempSync(join(tmpdir(), "tab-relay-gc-"));
  const bin = join(root, "relay/bin/tab-relay.js");
  const init = spawnSync(
    process.execPath,
    [bin, "init", "--data", data, "--workspace", "acme", "--owner", "Bench", "--json"],
    { encoding: "utf8", env: env.baseEnv },
  );
  const { api_key: apiKey } = JSON.parse(init.stdout) as { api_key: string };
  mkdirSync(dirname(traceFile), { recursive: true });
  // V8 stamps each trace line with milliseconds since the relay's isolate started, a few milliseconds after this.
  const spawnedAt = performance.now();
  const relay = spawn(
    process.execPath,
    ["--trace-gc-nvp", ...nodeFlags, bin, "serve", "--data", data, "--port", "0", "--host", "127.0.0.1"],
    { env: { ...env.baseEnv, ...relaySettings(upstream.url) }, stdio: ["ignore", openSync(traceFile, "w"), "pipe"] },
  );
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let said = "";
      relay.on("exit", (code) => reject(new Error(`the relay exited (${code}) before serving: ${said}`)));
      relay.stderr?.on("data", (chunk: Buffer) => {
        said += chunk.toString();
        const match = /serving on (http:\/\/\S+)/.exec(said);
        if (match?.[1]) resolve(match[1]);
      });
    });
    const target = cartCompletionTarget({ url, apiKey, workspaceSlug: "acme" }, "relay", CURSOR);
    await runSlice(target, { concurrency, warmupMs: 0, durationMs: 3_000 });
    const from = performance.now() - spawnedAt;
    const slice = await runSlice(target, {
      concurrency,
      warmupMs: 3_000,
      durationMs,
      processes: { relay: relay.pid ?? 0 },
    });
    const to = performance.now() - spawnedAt;
    // The trace is block-buffered, so which lines are in the window is told by their stamps, not by when they appear.
    const scavenges = readFileSync(traceFile, "utf8")
      .split("\n")
      .filter((line) => {
        const at = Number(/\] +([\d.]+) ms: /.exec(line)?.[1]);
        return line.includes(" gc=s ") && at >= from && at <= to;
      })
      .map((line) => Object.fromEntries([...line.matchAll(/(\w+)=([\d.]+)/g)].map((m) => [m[1], Number(m[2])])));
    const sum = (field: string) => scavenges.reduce((total, s) => total + (s[field] ?? 0), 0);
    const mean = (field: string) => sum(field) / scavenges.length;
    const streams = slice.ttfbMs.length;
    console.log(
      `${streams} streams, ${(streams / (slice.elapsedMs / 1000)).toFixed(0)}/s, relay CPU ` +
        `${(((slice.cpuMs["relay"] ?? Number.NaN) * 1000) / streams).toFixed(0)} µs/stream; ${scavenges.length} ` +
        `scavenges (${(sum("allocated") / streams / 1024).toFixed(0)} KB allocated per stream), mean: allocated ${(mean("allocated") / 1024).toFixed(0)} KB, survived ` +
        `${(mean("new_space_survived") / 1024).toFixed(0)} KB, promoted ${(mean("promoted") / 1024).toFixed(0)} KB, ` +
        `pause ${mean("pause").toFixed(2)} ms; trace in ${traceFile}`,
    );
  } finally {
    relay.kill();
    await upstream.server.stop();
    rmSync(data, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
