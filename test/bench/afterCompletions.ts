/**
 * One relay of the worktree at ROOT (default: this one) answering COUNT non-streamed completions (default 10,000),
 * CONCURRENCY at a time (default 20), on the local engine with no cache, as the startup section's "RSS after 10,000
 * completions" does (test/bench/startupSection.ts). Prints one JSON line each: the relay idle 3 s after it listens,
 * the load (RSS after, its peak sampled every 100 ms, the relay's CPU per completion from /proc), and the relay right
 * after (RSS, anonymous and file-backed memory from /proc/<pid>/smaps_rollup, V8's spaces from its /metrics). Run two
 * worktrees in turns to compare a change (docs/benchmarks.md, issue 23):
 *
 *   ROOT=/path/to/worktree npx tsx test/bench/afterCompletions.ts
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { spawnServer } from "./processes";
import { cleanEnv } from "./servers";
import { COMPLETION } from "./startupSection";

const ROOT = process.env.ROOT ?? fileURLToPath(new URL("../..", import.meta.url));
const COUNT = Number(process.env.COUNT ?? 10_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 20);
const MB = 1024 * 1024;

function procField(text: string, name: string): number {
  return Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN) / 1024;
}

async function main(): Promise<void> {
  const env = { ...cleanEnv(process.env) };
  delete env.NODE_OPTIONS;
  const bin = join(ROOT, "relay/bin/tab-relay.js");
  const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-after-"));
  const init = spawnSync(
    process.execPath,
    [bin, "init", "--data", dataDir, "--workspace", "acme", "--owner", "Bench", "--json"],
    { cwd: ROOT, env, encoding: "utf8", timeout: 60_000 },
  );
  if (init.status !== 0) throw new Error(`tab-relay init failed: ${init.stderr}`);
  const { api_key: apiKey } = JSON.parse(init.stdout) as { api_key: string };
  const { server, match: url } = await spawnServer({
    name: "tab-relay",
    args: [
      "--import",
      pathToFileURL(join(ROOT, "test/bench/lifeline.mjs")).href,
      bin,
      "serve",
      "--data",
      dataDir,
    ].concat(["--port", "0", "--host", "127.0.0.1"]),
    cwd: ROOT,
    env: {
      ...env,
      TAB_RELAY_RATE_LIMITS: "reads=10000000,writes=10000000",
      TAB_RELAY_CACHE_ENTRIES: "0",
      TAB_RELAY_LOG_LEVEL: "warn",
    },
    ready: { stream: "stderr", pattern: /serving on (http:\/\/\S+)/ },
    lifeline: true,
  });
  const pid = server.pid;
  const rss = () => procField(readFileSync(`/proc/${pid}/status`, "utf8"), "VmRSS");
  // utime and stime, in clock ticks of 10 ms, are fields 14 and 15 of /proc/<pid>/stat (11 and 12 after the name).
  const cpuMs = () => {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  const snapshot = async (what: string) => {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const spaces: Record<string, number> = {};
    for (const m of metrics.matchAll(/^nodejs_heap_space_(size_total|size_used)_bytes\{space="(\w+)"\} (\d+)$/gm)) {
      if (["new", "old", "code", "large_object"].includes(m[2] ?? "")) {
        spaces[`${m[2]} ${m[1] === "size_total" ? "committed" : "used"}`] = +(Number(m[3]) / MB).toFixed(1);
      }
    }
    const anon = procField(rollup, "Anonymous");
    const line = {
      what,
      rss: +rss().toFixed(1),
      anon: +anon.toFixed(1),
      file: +(procField(rollup, "Rss") - anon).toFixed(1),
    };
    process.stdout.write(`${JSON.stringify({ ...line, ...spaces })}\n`);
  };
  const body = JSON.stringify({ ...COMPLETION, tab_context: { ...COMPLETION.tab_context, workspace_slug: "acme" } });
  try {
    await sleep(3_000);
    await snapshot("idle");
    const cpu0 = cpuMs();
    const started = performance.now();
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 100);
    let sent = 0;
    const worker = async () => {
      while (sent < COUNT) {
        sent++;
        const response = await fetch(`${url}/api/v1/tab/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body,
        });
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`a completion answered ${response.status}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    clearInterval(sampler);
    const after = rss();
    const load = {
      what: "load",
      completions: COUNT,
      rssAfter: +after.toFixed(1),
      rssPeak: +Math.max(peak, after).toFixed(1),
      cpuUsPerCompletion: Math.round(((cpuMs() - cpu0) * 1000) / COUNT),
      wallS: +((performance.now() - started) / 1000).toFixed(1),
    };
    process.stdout.write(`${JSON.stringify(load)}\n`);
    await snapshot("after");
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
