import { spawnSync } from "node:child_process";
import { Agent } from "node:http";
import { cpus } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import type { MessageCreatedEvent } from "@tab-relay/shared";
import {
  REDIS_URL,
  type ScratchDatabase,
  createDatabase,
  dropDatabases,
  servicesProblem,
} from "../support/scaleOutServices";
import { type WebhookReceiver, startWebhookReceiver } from "../support/webhookReceiver";
import { type LoadSlice, runSlice } from "./load";
import { type Post, postMention } from "./posting";
import { type ChildServer, processCpuMs, spawnServer } from "./processes";
import type { BenchContext, BenchSection, Goal, SectionReport, Table } from "./sections";
import { cartCompletionTarget, relayApi, startBenchRelay } from "./servers";
import { type LatencySummary, formatMs, round, summarize } from "./stats";

/**
 * The same load against one relay on SQLite, one relay on PostgreSQL + Redis, and two relays sharing that
 * PostgreSQL + Redis with the clients split between them: what the shared database, the Redis rate-limit counters and
 * the claimed delivery queue cost, and what a second relay buys on this machine.
 */

const CLIENTS = 50;
const POSTERS = 16;
/** One per poster: message k mentions agent k mod AGENTS, so no agent's share of in-flight attempts caps delivery. */
const AGENTS = 16;
const DRAIN_LIMIT_MS = 30_000;
const LIFTED =
  "reads=10000000,writes=10000000,agent_reads=10000000,agent_posts=10000000,session_reads=10000000,session_writes=10000000";
const SETTINGS: Readonly<Record<string, string>> = {
  TAB_RELAY_LOG_LEVEL: "warn",
  TAB_RELAY_RATE_LIMITS: LIFTED,
  TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
  // Every completion runs the engine: a cache hit would measure the cache, which needs no database.
  TAB_RELAY_CACHE_ENTRIES: "0",
};

type SetupId = "sqlite" | "postgres-1" | "postgres-2";
const SETUPS: readonly { id: SetupId; label: string }[] = [
  { id: "sqlite", label: "1 relay, SQLite" },
  { id: "postgres-1", label: "1 relay, PostgreSQL + Redis" },
  { id: "postgres-2", label: "2 relays, PostgreSQL + Redis" },
];

interface Endpoint {
  url: string;
  apiKey: string;
  workspaceSlug: string;
  server: ChildServer;
}

interface Setup {
  id: SetupId;
  relays: Endpoint[];
  stop(): Promise<void>;
}

interface Timing {
  warmupMs: number;
  durationMs: number;
}

function timing(context: BenchContext): Timing {
  return context.quick ? { warmupMs: 500, durationMs: 2_000 } : { warmupMs: 2_000, durationMs: 8_000 };
}

async function startSqlite(context: BenchContext): Promise<Setup> {
  const relay = await startBenchRelay(context, { settings: SETTINGS, cpuProfileDir: context.cpuProfileDir });
  return { id: "sqlite", relays: [relay], stop: () => relay.stop() };
}

/** `tab-relay init --database` once, then `count` relays serving that database with the shared Redis. */
async function startPostgres(context: BenchContext, id: SetupId, count: number): Promise<Setup> {
  const bin = join(context.root, "relay/bin/tab-relay.js");
  const database: ScratchDatabase = await createDatabase("tab_relay_bench");
  const relays: Endpoint[] = [];
  const stop = async () => {
    await Promise.all(relays.map((relay) => relay.server.stop()));
    await dropDatabases([database.name]);
  };
  try {
    const init = spawnSync(
      process.execPath,
      [bin, "init", "--database", database.url, "--workspace", "acme", "--owner", "Bench", "--json"],
      {
        cwd: context.root,
        env: context.baseEnv,
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    if (init.status !== 0) throw new Error(`tab-relay init --database failed (${init.status}): ${init.stderr}`);
    const { api_key: apiKey } = JSON.parse(init.stdout) as { api_key: string };
    const profiling = context.cpuProfileDir ? ["--cpu-prof", "--cpu-prof-dir", context.cpuProfileDir] : [];
    for (let n = 0; n < count; n++) {
      const { server, match: url } = await spawnServer({
        name: `tab-relay ${n + 1} (PostgreSQL)`,
        args: [
          ...profiling,
          "--import",
          pathToFileURL(join(context.root, "test/bench/lifeline.mjs")).href,
          bin,
          "serve",
          "--database",
          database.url,
          "--redis",
          REDIS_URL,
          "--port",
          "0",
          "--host",
          "127.0.0.1",
        ],
        cwd: context.root,
        env: { ...context.baseEnv, ...SETTINGS },
        ready: { stream: "stderr", pattern: /serving on (http:\/\/\S+)/ },
        lifeline: true,
      });
      relays.push({ url, apiKey, workspaceSlug: "acme", server });
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { id, relays, stop };
}

const CURSOR = {
  before:
    'import type { Item } from "./types";\n\nexport function total(items: readonly Item[]): number {\n  return items.reduce((sum, item) => sum + item.price, 0);\n}\n\nexport function count(items: readonly Item[]): number {\n  return ',
  after: "\n}\n",
};

interface CompletionResult {
  completed: number;
  perSecond: number;
  errors: number;
  firstError: string | undefined;
  totalMs: LatencySummary;
  relayCpuUsPerCompletion: number | undefined;
}

/** CLIENTS streams in flight back to back, split evenly between the relays, measured over the same window. */
async function completions(setup: Setup, plan: Timing): Promise<CompletionResult> {
  const share = CLIENTS / setup.relays.length;
  const processes = Object.fromEntries(setup.relays.map((relay, n) => [`relay ${n + 1}`, relay.server.pid]));
  const slices: LoadSlice[] = await Promise.all(
    setup.relays.map((relay, n) =>
      // Only the first slice reads the relays' CPU, so each process is counted once over the window.
      runSlice(cartCompletionTarget(relay, relay.url, CURSOR), {
        concurrency: share,
        warmupMs: plan.warmupMs,
        durationMs: plan.durationMs,
        ...(n === 0 ? { processes } : {}),
      }),
    ),
  );
  const completed = slices.reduce((sum, s) => sum + s.totalMs.length, 0);
  const elapsedMs = Math.max(...slices.map((s) => s.elapsedMs));
  const first = slices[0] as LoadSlice;
  const cpuMs = Object.keys(processes).map((name) => first.cpuMs[name]);
  return {
    completed,
    perSecond: completed / (elapsedMs / 1000),
    errors: slices.reduce((sum, s) => sum + s.errors, 0),
    firstError: slices.find((s) => s.firstError !== undefined)?.firstError,
    totalMs: summarize(slices.flatMap((s) => s.totalMs)),
    relayCpuUsPerCompletion:
      completed > 0 && cpuMs.every((ms) => ms !== undefined)
        ? (cpuMs.reduce((sum: number, ms) => sum + (ms as number), 0) * 1000) / completed
        : undefined,
  };
}

interface WebhookResult {
  postsPerSecond: number;
  deliveredPerSecond: number;
  latencyMs: LatencySummary;
  lost: number;
  duplicates: number;
  postErrors: number;
  firstPostError: string | undefined;
  relayCpuUsPerEvent: number | undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * POSTERS people post back to back (poster p through relay p mod relays), each message mentioning one of AGENTS
 * agents whose webhook is the receiver. Events that arrive inside the measured window count; afterwards every
 * event must arrive once.
 */
async function webhooks(setup: Setup, receiver: WebhookReceiver, plan: Timing): Promise<WebhookResult> {
  const first = setup.relays[0] as Endpoint;
  const channel = await relayApi<{ id: string }>(first, "POST", "/channels", { name: `bench-${setup.id}` });
  const names: string[] = [];
  for (let n = 0; n < AGENTS; n++) {
    const name = `${setup.id}-agent-${String(n).padStart(2, "0")}`;
    const created = await relayApi<{ agent: { id: string } }>(first, "POST", "/agents", {
      name,
      webhook_url: receiver.url,
    });
    await relayApi(first, "POST", `/channels/${channel.id}/members`, { agent_id: created.agent.id });
    names.push(name);
  }
  const from = receiver.deliveries.length;
  const pools = setup.relays.map(() => new Agent({ keepAlive: true, maxSockets: POSTERS }));
  const windowStart = performance.now() + plan.warmupMs;
  const windowEnd = windowStart + plan.durationMs;
  const cpuNow = () => {
    const values = setup.relays.map((relay) => processCpuMs(relay.server.pid));
    return values.every((v) => v !== undefined) ? values.reduce((sum: number, v) => sum + (v as number), 0) : undefined;
  };
  let cpuStart: number | undefined;
  let cpuEnd: number | undefined;
  const timers = [
    setTimeout(() => (cpuStart = cpuNow()), plan.warmupMs),
    setTimeout(() => (cpuEnd = cpuNow()), plan.warmupMs + plan.durationMs),
  ];
  const posts: Post[] = [];
  let next = 0;
  const poster = async (p: number) => {
    const relayIndex = p % setup.relays.length;
    while (performance.now() < windowEnd) {
      const k = next++;
      const post = await postMention(
        pools[relayIndex] as Agent,
        setup.relays[relayIndex] as Endpoint,
        channel.id,
        names[k % AGENTS] as string,
        k,
      );
      posts.push(post);
      if (post.error !== undefined) await sleep(5);
    }
  };
  try {
    await Promise.all(Array.from({ length: POSTERS }, (_, p) => poster(p)));
  } finally {
    for (const timer of timers) clearTimeout(timer);
    for (const pool of pools) pool.destroy();
  }
  const expected = posts.filter((p) => p.messageId !== undefined).length;
  const drainStart = performance.now();
  while (receiver.deliveries.length - from < expected && performance.now() - drainStart < DRAIN_LIMIT_MS)
    await sleep(10);
  // Anything sent twice would arrive just after the rest.
  await sleep(500);

  const firstArrival = new Map<string, number>();
  const ids = new Set<string>();
  let duplicates = 0;
  for (const delivery of receiver.deliveries.slice(from)) {
    const id = delivery.headers["webhook-id"] as string;
    if (ids.has(id)) duplicates++;
    ids.add(id);
    const messageId = (JSON.parse(delivery.body) as MessageCreatedEvent).message.id;
    if (!firstArrival.has(messageId)) firstArrival.set(messageId, delivery.at);
  }
  const measured = posts.filter((p) => p.sentAt >= windowStart && p.sentAt < windowEnd);
  const latencies = measured.flatMap((p) => {
    const at = p.messageId === undefined ? undefined : firstArrival.get(p.messageId);
    return at === undefined ? [] : [at - p.sentAt];
  });
  const answered = posts.filter(
    (p) => p.messageId !== undefined && p.answeredAt >= windowStart && p.answeredAt < windowEnd,
  ).length;
  const delivered = [...firstArrival.values()].filter((at) => at >= windowStart && at < windowEnd).length;
  const errors = posts.filter((p) => p.error !== undefined);
  return {
    postsPerSecond: (answered * 1000) / plan.durationMs,
    deliveredPerSecond: (delivered * 1000) / plan.durationMs,
    latencyMs: summarize(latencies),
    lost: posts.filter((p) => p.messageId !== undefined && !firstArrival.has(p.messageId)).length,
    duplicates,
    postErrors: errors.length,
    firstPostError: errors[0]?.error,
    relayCpuUsPerEvent:
      cpuStart === undefined || cpuEnd === undefined || delivered === 0
        ? undefined
        : ((cpuEnd - cpuStart) * 1000) / delivered,
  };
}

interface SetupResult {
  id: SetupId;
  label: string;
  relays: number;
  completions: CompletionResult;
  webhooks: WebhookResult;
}

const cpuCell = (us: number | undefined) => (us === undefined ? "n/a" : us.toFixed(0));

export const scaleOutSection: BenchSection = {
  id: "scale-out",
  title: "Scale-out: one relay on SQLite, one and two relays on PostgreSQL + Redis",
  async run(context: BenchContext): Promise<SectionReport> {
    const problem = await servicesProblem();
    if (problem) {
      context.progress(`SKIPPED: ${problem}`);
      return {
        tables: [],
        goals: [],
        notes: [
          `Not measured: ${problem}. Start PostgreSQL (127.0.0.1:5432, user postgres) and Redis (127.0.0.1:6379) to measure this section.`,
        ],
        data: { skipped: problem },
      };
    }
    const plan = timing(context);
    const receiver = await startWebhookReceiver();
    const results: SetupResult[] = [];
    try {
      for (const { id, label } of SETUPS) {
        context.progress(`${label}: starting`);
        const setup =
          id === "sqlite" ? await startSqlite(context) : await startPostgres(context, id, id === "postgres-2" ? 2 : 1);
        try {
          context.progress(
            `  completions: ${CLIENTS} clients back to back over keep-alive, ${plan.durationMs / 1000} s measured`,
          );
          const completed = await completions(setup, plan);
          context.progress(
            `  ${completed.perSecond.toFixed(0)} completions/s, p50 ${formatMs(completed.totalMs.p50)} ms, p99 ${formatMs(completed.totalMs.p99)} ms, ${completed.errors} errors${completed.firstError ? ` (first: ${completed.firstError})` : ""}`,
          );
          context.progress(
            `  webhooks: ${POSTERS} people posting back to back, ${AGENTS} agents, ${plan.durationMs / 1000} s measured`,
          );
          const delivered = await webhooks(setup, receiver, plan);
          context.progress(
            `  ${delivered.postsPerSecond.toFixed(0)} posts/s, ${delivered.deliveredPerSecond.toFixed(0)} events delivered/s, p99 ${formatMs(delivered.latencyMs.p99)} ms, ` +
              `${delivered.lost} lost, ${delivered.duplicates} duplicates, ${delivered.postErrors} post errors${delivered.firstPostError ? ` (first: ${delivered.firstPostError})` : ""}`,
          );
          results.push({ id, label, relays: setup.relays.length, completions: completed, webhooks: delivered });
        } finally {
          await setup.stop();
        }
      }
    } finally {
      await receiver.close();
    }
    return report(results, plan, context);
  },
};

function report(results: readonly SetupResult[], plan: Timing, context: BenchContext): SectionReport {
  const tables: Table[] = [
    {
      caption: `Completions per second: local engine, ${CLIENTS} clients streaming back to back over keep-alive (split evenly between the relays), rate limits lifted`,
      columns: ["Setup", "Completions/s", "p50 (ms)", "p99 (ms)", "Errors", "Relay CPU/completion (µs)"],
      rows: results.map((r) => [
        r.label,
        r.completions.perSecond.toFixed(0),
        formatMs(r.completions.totalMs.p50),
        formatMs(r.completions.totalMs.p99),
        String(r.completions.errors),
        cpuCell(r.completions.relayCpuUsPerCompletion),
      ]),
    },
    {
      caption: `Webhook events per second: ${POSTERS} people posting back to back (split between the relays), ${AGENTS} agents, receiver answering 204`,
      columns: [
        "Setup",
        "Posts/s",
        "Events delivered/s",
        "Post → agent p50 (ms)",
        "p99 (ms)",
        "Lost / dup / post errors",
        "Relay CPU/event (µs)",
      ],
      rows: results.map((r) => [
        r.label,
        r.webhooks.postsPerSecond.toFixed(0),
        r.webhooks.deliveredPerSecond.toFixed(0),
        formatMs(r.webhooks.latencyMs.p50),
        formatMs(r.webhooks.latencyMs.p99),
        `${r.webhooks.lost} / ${r.webhooks.duplicates} / ${r.webhooks.postErrors}`,
        cpuCell(r.webhooks.relayCpuUsPerEvent),
      ]),
    },
  ];
  const goals: Goal[] = results
    .filter((r) => r.relays > 1)
    .map((r) => ({
      description: `${r.label}: every webhook event delivered exactly once`,
      target: "0 lost, 0 duplicates",
      measured: `${r.webhooks.lost} lost, ${r.webhooks.duplicates} duplicates`,
      pass: r.webhooks.lost === 0 && r.webhooks.duplicates === 0 && r.webhooks.postErrors === 0,
    }));
  return {
    tables,
    goals,
    notes: [
      `Every relay, PostgreSQL, Redis and the load generator share this machine's ${cpus().length} cores: a second relay adds coordination (shared rows, SKIP LOCKED claims, NOTIFY wake-ups), not hardware, so the two-relay rows show the cost of scaling out rather than its headroom.`,
      "Completions: the relay's own engine with the completion cache off, so each request authenticates its key against the database, counts against the rate limit (Redis for the PostgreSQL rows, memory for SQLite) and runs the engine.",
      "Webhooks: each post writes the message and one event in a transaction; the event is claimed, signed and POSTed by whichever relay takes it first. Delivered/s counts first arrivals inside the measured window; lost and duplicates are checked after a drain of up to 30 s.",
      "Relay CPU: user + system CPU time of all relay processes over the window, per completion or per delivered event (PostgreSQL's and Redis's own CPU not included).",
      `Windows: ${plan.warmupMs / 1000} s warm-up, ${plan.durationMs / 1000} s measured per figure.`,
      ...(context.quick ? ["--quick run: short windows, figures are indicative only."] : []),
    ],
    data: {
      clients: CLIENTS,
      posters: POSTERS,
      agents: AGENTS,
      setups: results.map((r) => ({
        id: r.id,
        relays: r.relays,
        completions: {
          completed: r.completions.completed,
          perSecond: round(r.completions.perSecond, 1),
          errors: r.completions.errors,
          firstError: r.completions.firstError ?? null,
          totalMs: {
            p50: round(r.completions.totalMs.p50),
            p99: round(r.completions.totalMs.p99),
            max: round(r.completions.totalMs.max),
          },
          relayCpuUsPerCompletion:
            r.completions.relayCpuUsPerCompletion === undefined
              ? null
              : round(r.completions.relayCpuUsPerCompletion, 1),
        },
        webhooks: {
          postsPerSecond: round(r.webhooks.postsPerSecond, 1),
          deliveredPerSecond: round(r.webhooks.deliveredPerSecond, 1),
          latencyMs: {
            p50: round(r.webhooks.latencyMs.p50),
            p99: round(r.webhooks.latencyMs.p99),
            max: round(r.webhooks.latencyMs.max),
          },
          lost: r.webhooks.lost,
          duplicates: r.webhooks.duplicates,
          postErrors: r.webhooks.postErrors,
          firstPostError: r.webhooks.firstPostError ?? null,
          relayCpuUsPerEvent:
            r.webhooks.relayCpuUsPerEvent === undefined ? null : round(r.webhooks.relayCpuUsPerEvent, 1),
        },
      })),
    },
  };
}
