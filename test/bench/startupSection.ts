import { readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { type ChildServer, spawnServer } from "./processes";
import type { BenchContext, BenchSection, SectionReport } from "./sections";
import { startBenchRelay } from "./servers";
import { round } from "./stats";

/**
 * What a relay costs at rest and what its first request costs: each server is started afresh several times, left
 * idle, its resident memory read from /proc, then one request timed, then more. The baseline is a bare node:http
 * server answering 200 in the same run. The relay's request is a non-streamed completion (it counts prompt tokens
 * for `usage`), on the local engine, so no upstream is involved.
 */

/** Long enough for whatever the relay does in the background after it listens (warming the token counter). */
const SETTLE_MS = 3_000;
const LATER_REQUESTS = 10;

const BARE_SERVER = [
  'const server = require("node:http").createServer((req, res) => { req.resume(); req.on("end", () => res.end("ok")); });',
  'server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}` })));',
].join("\n");

/** The completion the startup runs ask for, without its workspace. */
export const COMPLETION = {
  model: "tab-v1",
  tab_context: {
    surface: "code",
    entity_id: "src/cart.ts",
    document_type: "plaintext",
    code_language: "typescript",
    file_path: "src/cart.ts",
    active_text_before_cursor:
      "export interface Item {\n  price: number;\n  quantity: number;\n}\n\nexport function total(items: readonly Item[]): number {\n  return ",
    active_text_after_cursor: "\n}\n",
  },
};

interface Target {
  path: string;
  headers: Record<string, string>;
  body: string;
}

interface Sample {
  idleRssMb: number;
  firstMs: number;
  laterMs: number;
  rssAfterMb: number;
}

export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kb) / 1024;
}

/** One request on a fresh connection, timed from sending to the last byte of the answer. */
function timedRequest(base: string, target: Target): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}${target.path}`,
      { method: "POST", agent: false, headers: { "content-type": "application/json", ...target.headers } },
      (res) => {
        res.resume();
        res.on("end", () =>
          res.statusCode === 200
            ? resolve(performance.now() - started)
            : reject(new Error(`${target.path} answered ${res.statusCode}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(target.body);
  });
}

async function measure(server: ChildServer, base: string, target: Target): Promise<Sample> {
  await sleep(SETTLE_MS);
  const idleRssMb = rssMb(server.pid);
  const firstMs = await timedRequest(base, target);
  const later: number[] = [];
  for (let i = 0; i < LATER_REQUESTS; i++) later.push(await timedRequest(base, target));
  return { idleRssMb, firstMs, laterMs: median(later), rssAfterMb: rssMb(server.pid) };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

async function bareServer(context: BenchContext): Promise<Sample> {
  const { server, match } = await spawnServer({
    name: "bare node:http server",
    args: ["--import", pathToFileURL(join(context.root, "test/bench/lifeline.mjs")).href, "-e", BARE_SERVER],
    cwd: context.root,
    env: context.baseEnv,
    ready: { stream: "stdout", pattern: /^\{"url":"([^"]+)"\}$/m },
    lifeline: true,
  });
  try {
    return await measure(server, match, { path: "/", headers: {}, body: "{}" });
  } finally {
    await server.stop();
  }
}

async function relay(context: BenchContext): Promise<Sample> {
  const started = await startBenchRelay(context, { settings: {} });
  try {
    return await measure(started.server, started.url, relayTarget(started));
  } finally {
    await started.stop();
  }
}

/** Sends `count` completions, `concurrency` at a time over keep-alive connections; every one must answer 200. */
async function completions(base: string, target: Target, count: number, concurrency = 20): Promise<void> {
  let sent = 0;
  const worker = async () => {
    while (sent < count) {
      sent++;
      const response = await fetch(`${base}${target.path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...target.headers },
        body: target.body,
      });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`${target.path} answered ${response.status}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Issue 23 bounds the relay's memory after 10,000 completions as well as at rest: caches and heaps that grow. */
async function relayAfterCompletions(
  context: BenchContext,
  count: number,
): Promise<{ idleRssMb: number; rssMb: number }> {
  const started = await startBenchRelay(context, {
    // Lifted so that 10,000 requests from one key are not refused, and no cache, so each one runs the engine.
    settings: {
      TAB_RELAY_RATE_LIMITS: "reads=10000000,writes=10000000",
      TAB_RELAY_CACHE_ENTRIES: "0",
      TAB_RELAY_LOG_LEVEL: "warn",
    },
  });
  try {
    const target = relayTarget(started);
    await sleep(SETTLE_MS);
    const idleRssMb = rssMb(started.server.pid);
    await completions(started.url, target, count);
    return { idleRssMb, rssMb: rssMb(started.server.pid) };
  } finally {
    await started.stop();
  }
}

function relayTarget(started: Awaited<ReturnType<typeof startBenchRelay>>): Target {
  const body = JSON.stringify({
    ...COMPLETION,
    tab_context: { ...COMPLETION.tab_context, workspace_slug: started.workspaceSlug },
  });
  return {
    path: "/api/v1/tab/chat/completions",
    headers: { authorization: `Bearer ${started.apiKey}` },
    body,
  };
}

function medians(samples: readonly Sample[]): Sample {
  return {
    idleRssMb: median(samples.map((s) => s.idleRssMb)),
    firstMs: median(samples.map((s) => s.firstMs)),
    laterMs: median(samples.map((s) => s.laterMs)),
    rssAfterMb: median(samples.map((s) => s.rssAfterMb)),
  };
}

export const startupSection: BenchSection = {
  id: "startup",
  title: "Idle memory and the first request after start",
  async run(context): Promise<SectionReport> {
    const starts = context.quick ? 1 : 5;
    const bare: Sample[] = [];
    const relays: Sample[] = [];
    // Interleaved, so a change in the machine's load falls on both alike.
    for (let i = 0; i < starts; i++) {
      context.progress(`start ${i + 1}/${starts}: bare server, then relay`);
      bare.push(await bareServer(context));
      relays.push(await relay(context));
    }
    const many = context.quick ? 2_000 : 10_000;
    context.progress(`one more relay: ${many} non-streamed completions, 20 at a time`);
    const loaded = await relayAfterCompletions(context, many);
    context.progress(
      `relay RSS ${loaded.idleRssMb.toFixed(1)} MB idle, ${loaded.rssMb.toFixed(1)} MB after ${many} completions`,
    );
    const b = medians(bare);
    const r = medians(relays);
    const row = (name: string, s: Sample, base: Sample) => [
      name,
      s.idleRssMb.toFixed(1),
      `${(s.idleRssMb / base.idleRssMb).toFixed(2)}×`,
      s.firstMs.toFixed(1),
      s.laterMs.toFixed(2),
      s.rssAfterMb.toFixed(1),
    ];
    return {
      tables: [
        {
          caption: `Medians of ${starts} fresh starts each, idle ${SETTLE_MS / 1000} s before measuring`,
          columns: [
            "server",
            "idle RSS (MB)",
            "vs bare",
            "first request (ms)",
            `later requests, median of ${LATER_REQUESTS} (ms)`,
            `RSS after ${LATER_REQUESTS + 1} requests (MB)`,
          ],
          rows: [row("bare node:http server", b, b), row("tab-relay (local engine, non-streamed completion)", r, b)],
        },
      ],
      goals: [],
      notes: [
        "Each request opens its own connection; the relay's first one includes loading whatever it loads lazily.",
        `One more relay, started the same way: ${loaded.idleRssMb.toFixed(1)} MB idle, ${loaded.rssMb.toFixed(1)} MB after ${many} non-streamed completions (20 at a time, keep-alive).`,
      ],
      data: {
        starts,
        settleMs: SETTLE_MS,
        bare: bare.map((s) => ({ ...s, idleRssMb: round(s.idleRssMb, 1) })),
        relay: relays.map((s) => ({ ...s, idleRssMb: round(s.idleRssMb, 1) })),
        medians: { bare: b, relay: r },
        afterCompletions: { completions: many, ...loaded },
      },
    };
  },
};
