import { Agent } from "node:http";
import { performance } from "node:perf_hooks";
import { type MessageCreatedEvent, verifyWebhook } from "@tab-relay/shared";
import { type ReceivedDelivery, type WebhookReceiver, startWebhookReceiver } from "../support/webhookReceiver";
import { type Post as MentionPost, postMention } from "./posting";
import { processCpuMs } from "./processes";
import type { BenchContext, BenchSection, Goal, SectionReport, Table } from "./sections";
import { type BenchRelay, relayApi, startBenchRelay } from "./servers";
import { type LatencySummary, formatMs, round, summarize } from "./stats";

/**
 * Outside-agent webhooks end to end: a person posts through the API, the relay writes the event to its outbox,
 * signs it and POSTs it to a receiver in this process, which notes when each body has fully arrived. Latency is
 * from starting the person's POST to that moment, matched by the message id inside the payload.
 */

/** Posts per second in the paced runs; `BENCH_WEBHOOKS_RATE` lowers it on a machine too busy to keep 200. */
const RATE = Number(process.env["BENCH_WEBHOOKS_RATE"] ?? 200);
/**
 * The runs' agent counts, in order. `BENCH_WEBHOOKS_REVERSED=1` runs 100 agents first: the first run after the relay
 * starts may carry start-up work, and the reversed order tells that apart from the agent count.
 */
const AGENT_COUNTS: readonly (1 | 100)[] = process.env["BENCH_WEBHOOKS_REVERSED"] === "1" ? [100, 1] : [1, 100];
const POSTERS = 16;
const GOAL_P99_MS = 20;
/**
 * `BENCH_WEBHOOKS_PACED=1` runs only the paced runs at RATE (the latency goal), for repeating them: the throughput
 * and backlog runs saturate the relay and take as long again.
 */
const PACED_ONLY = process.env["BENCH_WEBHOOKS_PACED"] === "1";
/** How long the events of one run may take to arrive after its last post before the rest count as lost. */
const DRAIN_LIMIT_MS = 30_000;

interface Plan {
  warmupMs: number;
  pacedMs: number;
  throughputWarmupMs: number;
  throughputMs: number;
  backlogEvents: number;
}

function plan(context: BenchContext): Plan {
  if (context.quick)
    return { warmupMs: 500, pacedMs: 2_500, throughputWarmupMs: 300, throughputMs: 1_500, backlogEvents: 400 };
  return { warmupMs: 2_000, pacedMs: 10_000, throughputWarmupMs: 1_000, throughputMs: 5_000, backlogEvents: 2_000 };
}

interface BenchAgent {
  id: string;
  name: string;
  secret: string;
  /** The receiver path its events must arrive at. */
  path: string;
}

/** A channel and the agents its messages mention, round-robin. */
interface Audience {
  channelId: string;
  agents: BenchAgent[];
}

interface Fixture {
  relay: BenchRelay;
  receiver: WebhookReceiver;
  /** Connected from the start, by agent count. */
  live: Record<number, Audience>;
  /** Created without a webhook URL, so their events wait in the outbox until it is set, by agent count. */
  held: Record<number, Audience>;
}

/** One person's post: when it was started and answered, and the message the relay made of it. */
interface Post extends MentionPost {
  agent: number;
}

interface Arrival {
  messageId: string;
  agentId: string;
  path: string;
  at: number;
  delivery: ReceivedDelivery;
}

/** What arrived for a set of posts: the first arrival of each message, and what was wrong. */
interface Inspection {
  first: Map<string, Arrival>;
  /** Events of successful posts that never arrived within DRAIN_LIMIT_MS. */
  lost: number;
  duplicates: number;
  /** Arrivals at the wrong agent's URL or with another agent's id, and arrivals failing signature verification. */
  bad: number;
  postErrors: number;
  firstPostError: string | undefined;
}

interface RunResult extends Omit<Inspection, "first"> {
  agents: number;
  mode: "paced" | "max";
  /** Posts whose events are measured (after the warm-up). */
  posts: number;
  /** Posts answered 201 per second of the measured window. */
  postsPerSecond: number;
  /** Distinct events that arrived inside the measured window, per second of it. */
  deliveredPerSecond: number;
  windowMs: number;
  latencyMs: LatencySummary;
  postResponseMs: LatencySummary;
  /** From the end of the window until the last event of the run had arrived. */
  drainMs: number;
  relayCpuUsPerEvent: number | undefined;
  /** Relay CPU time over wall time in the window; 100% is one core busy. */
  relayCpuPercent: number | undefined;
  /** How late the paced sender started posts against their schedule. */
  pacingLagMs: LatencySummary | undefined;
}

interface BacklogResult extends Omit<Inspection, "first"> {
  agents: number;
  events: number;
  /** From setting the webhook URLs until the last event arrived. */
  totalMs: number;
  deliveredPerSecond: number;
  relayCpuUsPerEvent: number | undefined;
}

/**
 * Agents and a channel per agent count. Connected agents are shared between the channels; agents without a URL
 * are not, so setting the URLs of one backlog cannot release events of another.
 */
async function createAudience(
  relay: BenchRelay,
  receiver: WebhookReceiver,
  prefix: string,
  connected: boolean,
): Promise<Record<number, Audience>> {
  const agents: BenchAgent[] = [];
  const needed = connected ? Math.max(...AGENT_COUNTS) : AGENT_COUNTS.reduce((sum, count) => sum + count, 0);
  for (let i = 0; i < needed; i++) {
    const name = `${prefix}-agent-${String(i).padStart(3, "0")}`;
    const path = `/webhook/${name}`;
    const body = connected ? { name, webhook_url: new URL(path, receiver.url).href } : { name };
    const created = await relayApi<{ agent: { id: string }; signing_secret: string }>(relay, "POST", "/agents", body);
    agents.push({ id: created.agent.id, name, secret: created.signing_secret, path });
  }
  const audiences: Record<number, Audience> = {};
  let offset = 0;
  for (const count of AGENT_COUNTS) {
    const channel = await relayApi<{ id: string }>(relay, "POST", "/channels", { name: `${prefix}-${count}` });
    const members = agents.slice(offset, offset + count);
    if (!connected) offset += count;
    for (const agent of members)
      await relayApi(relay, "POST", `/channels/${channel.id}/members`, { agent_id: agent.id });
    audiences[count] = { channelId: channel.id, agents: members };
  }
  return audiences;
}

/** Posts one message mentioning agent k mod n over `pool`; never rejects. */
async function postMessage(pool: Agent, relay: BenchRelay, audience: Audience, k: number): Promise<Post> {
  const agent = k % audience.agents.length;
  return { agent, ...(await postMention(pool, relay, audience.channelId, audience.agents[agent]?.name ?? "", k)) };
}

/** POSTERS people posting back to back until `until`, given how many posts were started, says to stop. */
async function postBackToBack(
  relay: BenchRelay,
  audience: Audience,
  until: (started: number) => boolean,
): Promise<Post[]> {
  const pool = new Agent({ keepAlive: true, maxSockets: POSTERS });
  const posts: Post[] = [];
  let next = 0;
  const poster = async () => {
    while (!until(next)) {
      const post = await postMessage(pool, relay, audience, next++);
      posts.push(post);
      // A refusing relay must not turn the loop into a busy spin.
      if (post.error !== undefined) await sleep(5);
    }
  };
  try {
    await Promise.all(Array.from({ length: POSTERS }, poster));
  } finally {
    pool.destroy();
  }
  return posts;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function arrivalsSince(receiver: WebhookReceiver, from: number): Arrival[] {
  return receiver.deliveries.slice(from).map((delivery) => {
    const event = JSON.parse(delivery.body) as MessageCreatedEvent;
    return { messageId: event.message.id, agentId: event.agent.id, path: delivery.path, at: delivery.at, delivery };
  });
}

/** Waits until every successful post's event has arrived or DRAIN_LIMIT_MS have passed since `since`. */
async function drain(receiver: WebhookReceiver, from: number, posts: readonly Post[], since: number): Promise<void> {
  const expected = posts.filter((p) => p.messageId !== undefined).length;
  while (receiver.deliveries.length - from < expected && performance.now() - since < DRAIN_LIMIT_MS) await sleep(10);
}

function cpuMs(relay: BenchRelay): number | undefined {
  return processCpuMs(relay.server.pid);
}

/**
 * Joins posts and arrivals: the first arrival of each message counts, later ones are duplicates; every arrival
 * must carry the mentioned agent's id, come to its path and verify with its signing secret.
 */
async function inspect(audience: Audience, posts: readonly Post[], arrivals: readonly Arrival[]): Promise<Inspection> {
  const byMessage = new Map<string, Post>();
  for (const post of posts) if (post.messageId) byMessage.set(post.messageId, post);
  const first = new Map<string, Arrival>();
  let duplicates = 0;
  let bad = 0;
  for (const arrival of arrivals) {
    const post = byMessage.get(arrival.messageId);
    const agent = post ? audience.agents[post.agent] : undefined;
    const verified = agent
      ? await verifyWebhook(agent.secret, arrival.delivery.headers, arrival.delivery.body).then(
          () => true,
          () => false,
        )
      : false;
    if (!agent || agent.id !== arrival.agentId || agent.path !== arrival.path || !verified) bad++;
    if (first.has(arrival.messageId)) duplicates++;
    else first.set(arrival.messageId, arrival);
  }
  const errors = posts.filter((p) => p.error !== undefined);
  const lost = posts.filter((p) => p.messageId !== undefined && !first.has(p.messageId)).length;
  return { first, lost, duplicates, bad, postErrors: errors.length, firstPostError: errors[0]?.error };
}

function result(
  mode: RunResult["mode"],
  audience: Audience,
  measured: readonly Post[],
  inspection: Inspection,
  window: { start: number; end: number },
  cpu: { ms: number; overMs: number } | undefined,
  pacingLagMs: LatencySummary | undefined,
): RunResult {
  const { first, ...problems } = inspection;
  const latencies = measured.flatMap((post) => {
    const arrival = post.messageId ? first.get(post.messageId) : undefined;
    return arrival ? [arrival.at - post.sentAt] : [];
  });
  const windowMs = window.end - window.start;
  const answered = measured.filter((p) => p.messageId && p.answeredAt < window.end).length;
  const delivered = [...first.values()].filter((a) => a.at >= window.start && a.at < window.end).length;
  const lastArrival = [...first.values()].reduce((last, a) => Math.max(last, a.at), window.end);
  return {
    ...problems,
    agents: audience.agents.length,
    mode,
    posts: measured.length,
    postsPerSecond: (answered * 1000) / windowMs,
    deliveredPerSecond: (delivered * 1000) / windowMs,
    windowMs,
    latencyMs: summarize(latencies),
    postResponseMs: summarize(measured.filter((p) => p.messageId).map((p) => p.answeredAt - p.sentAt)),
    drainMs: lastArrival - window.end,
    relayCpuUsPerEvent: cpu === undefined || measured.length === 0 ? undefined : (cpu.ms * 1000) / measured.length,
    relayCpuPercent: cpu === undefined ? undefined : (cpu.ms / cpu.overMs) * 100,
    pacingLagMs,
  };
}

/**
 * Open loop: post k is started at start + k/RATE whatever happened to earlier ones, so a slow answer cannot
 * thin out the load (no coordinated omission). Latency counts from when the post was actually started.
 */
async function paced(fixture: Fixture, audience: Audience, timing: Plan): Promise<RunResult> {
  const pool = new Agent({ keepAlive: true, maxSockets: 64 });
  const from = fixture.receiver.deliveries.length;
  const interval = 1000 / RATE;
  const total = Math.round(((timing.warmupMs + timing.pacedMs) / 1000) * RATE);
  const warmup = Math.round((timing.warmupMs / 1000) * RATE);
  const pending: Promise<Post>[] = [];
  const lag: number[] = [];
  const start = performance.now();
  let windowStart = Number.NaN;
  let cpuStart: number | undefined;
  try {
    for (let k = 0; k < total; k++) {
      const due = start + k * interval;
      for (let wait = due - performance.now(); wait > 0; wait = due - performance.now()) await sleep(wait);
      if (k === warmup) {
        windowStart = performance.now();
        cpuStart = cpuMs(fixture.relay);
      }
      if (k >= warmup) lag.push(performance.now() - due);
      pending.push(postMessage(pool, fixture.relay, audience, k));
    }
    const windowEnd = start + total * interval;
    const posts = await Promise.all(pending);
    await drain(fixture.receiver, from, posts, windowEnd);
    // Read once the last event is out, so it covers the work of every measured event.
    const cpuEnd = cpuMs(fixture.relay);
    const cpu =
      cpuStart === undefined || cpuEnd === undefined
        ? undefined
        : { ms: cpuEnd - cpuStart, overMs: performance.now() - windowStart };
    const inspection = await inspect(audience, posts, arrivalsSince(fixture.receiver, from));
    const run = result(
      "paced",
      audience,
      posts.slice(warmup),
      inspection,
      { start: windowStart, end: windowEnd },
      cpu,
      summarize(lag),
    );
    // Events of the last posts arrive just after the schedule ends; on a fixed schedule every measured one counts.
    return { ...run, deliveredPerSecond: ((run.posts - run.lost) * 1000) / run.windowMs };
  } finally {
    pool.destroy();
  }
}

/** Closed loop: POSTERS people post back to back; the window follows a short warm-up. */
async function maxThroughput(fixture: Fixture, audience: Audience, timing: Plan): Promise<RunResult> {
  const from = fixture.receiver.deliveries.length;
  const windowStart = performance.now() + timing.throughputWarmupMs;
  const windowEnd = windowStart + timing.throughputMs;
  let cpuStart: number | undefined;
  let cpuEnd: number | undefined;
  const timers = [
    setTimeout(() => (cpuStart = cpuMs(fixture.relay)), timing.throughputWarmupMs),
    setTimeout(() => (cpuEnd = cpuMs(fixture.relay)), timing.throughputWarmupMs + timing.throughputMs),
  ];
  let posts: Post[];
  try {
    posts = await postBackToBack(fixture.relay, audience, () => performance.now() >= windowEnd);
    await drain(fixture.receiver, from, posts, windowEnd);
  } finally {
    for (const timer of timers) clearTimeout(timer);
  }
  const cpu =
    cpuStart === undefined || cpuEnd === undefined ? undefined : { ms: cpuEnd - cpuStart, overMs: timing.throughputMs };
  const inspection = await inspect(audience, posts, arrivalsSince(fixture.receiver, from));
  const measured = posts.filter((p) => p.sentAt >= windowStart);
  return result("max", audience, measured, inspection, { start: windowStart, end: windowEnd }, cpu, undefined);
}

/**
 * Delivery alone: the events are written while their agents have no webhook URL, so they wait in the outbox;
 * then every URL is set at once and the clock runs until the last event has arrived. Nothing else competes for
 * the relay meanwhile, so this is the rate at which it signs, sends and records events.
 */
async function backlog(fixture: Fixture, audience: Audience, timing: Plan): Promise<BacklogResult> {
  const posts = await postBackToBack(fixture.relay, audience, (started) => started >= timing.backlogEvents);
  const from = fixture.receiver.deliveries.length;
  const cpuStart = cpuMs(fixture.relay);
  const released = performance.now();
  await Promise.all(
    audience.agents.map((agent) =>
      relayApi(fixture.relay, "PATCH", `/agents/${agent.id}`, {
        webhook_url: new URL(agent.path, fixture.receiver.url).href,
      }),
    ),
  );
  await drain(fixture.receiver, from, posts, released);
  const cpuEnd = cpuMs(fixture.relay);
  const { first, ...problems } = await inspect(audience, posts, arrivalsSince(fixture.receiver, from));
  const lastArrival = [...first.values()].reduce((last, a) => Math.max(last, a.at), released);
  const totalMs = lastArrival - released;
  return {
    ...problems,
    agents: audience.agents.length,
    events: posts.length,
    totalMs,
    deliveredPerSecond: (first.size * 1000) / totalMs,
    relayCpuUsPerEvent:
      cpuStart === undefined || cpuEnd === undefined || first.size === 0
        ? undefined
        : ((cpuEnd - cpuStart) * 1000) / first.size,
  };
}

const problemsCell = (r: Omit<Inspection, "first">) => `${r.lost} / ${r.duplicates} / ${r.bad} / ${r.postErrors}`;
const clean = (r: Omit<Inspection, "first">) => r.lost === 0 && r.postErrors === 0 && r.bad === 0;
const cpuCell = (us: number | undefined) => (us === undefined ? "n/a" : us.toFixed(0));

function describeProblems(r: Omit<Inspection, "first">): string {
  if (clean(r) && r.duplicates === 0) return "";
  return `, ${r.lost} lost, ${r.duplicates} duplicates, ${r.bad} bad, ${r.postErrors} post errors${r.firstPostError ? ` (first: ${r.firstPostError})` : ""}`;
}

function describeRun(r: RunResult): string {
  return (
    `${r.posts} events, ${r.deliveredPerSecond.toFixed(0)} delivered/s, post→agent p50 ${formatMs(r.latencyMs.p50)} ms p99 ${formatMs(r.latencyMs.p99)} ms max ${formatMs(r.latencyMs.max)} ms` +
    (r.relayCpuUsPerEvent === undefined ? "" : `, relay CPU ${r.relayCpuUsPerEvent.toFixed(0)} µs/event`) +
    describeProblems(r)
  );
}

export const webhookSection: BenchSection = {
  id: "webhooks",
  title: "Webhook events: signed and delivered to a local receiver",
  async run(context: BenchContext): Promise<SectionReport> {
    const timing = plan(context);
    const receiver = await startWebhookReceiver();
    let relay: BenchRelay | undefined;
    const runs: RunResult[] = [];
    const backlogs: BacklogResult[] = [];
    try {
      context.progress("starting the relay in its own process; the webhook receiver runs in the benchmark process");
      relay = await startBenchRelay(context, {
        settings: {
          TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
          TAB_RELAY_LOG_LEVEL: "warn",
          TAB_RELAY_RATE_LIMITS: "reads=10000000,writes=10000000,agent_reads=10000000,agent_posts=10000000",
        },
        cpuProfileDir: context.cpuProfileDir,
      });
      context.progress("creating the agents, each with its own path on the receiver, and their channels");
      const fixture: Fixture = {
        relay,
        receiver,
        live: await createAudience(relay, receiver, "live", true),
        held: await createAudience(relay, receiver, "held", false),
      };
      for (const agents of AGENT_COUNTS) {
        context.progress(
          `${agents} agent(s): ${RATE} events/s on a fixed schedule, ${timing.warmupMs / 1000} s warm-up then ${timing.pacedMs / 1000} s measured`,
        );
        const run = await paced(fixture, fixture.live[agents] as Audience, timing);
        runs.push(run);
        context.progress(`  ${describeRun(run)}`);
      }
      for (const agents of PACED_ONLY ? [] : AGENT_COUNTS) {
        context.progress(
          `${agents} agent(s): ${POSTERS} people posting back to back, ${timing.throughputMs / 1000} s measured`,
        );
        const run = await maxThroughput(fixture, fixture.live[agents] as Audience, timing);
        runs.push(run);
        context.progress(
          `  ${describeRun(run)}, ${run.postsPerSecond.toFixed(0)} posts/s, last event ${formatMs(run.drainMs)} ms after the window`,
        );
      }
      for (const agents of PACED_ONLY ? [] : AGENT_COUNTS) {
        context.progress(
          `${agents} agent(s): ${timing.backlogEvents} events held in the outbox, then every webhook URL set at once`,
        );
        const run = await backlog(fixture, fixture.held[agents] as Audience, timing);
        backlogs.push(run);
        context.progress(
          `  ${run.events} events delivered in ${formatMs(run.totalMs)} ms, ${run.deliveredPerSecond.toFixed(0)}/s, relay CPU ${cpuCell(run.relayCpuUsPerEvent)} µs/event${describeProblems(run)}`,
        );
      }
    } finally {
      // Stopping the relay is also what makes it write its CPU profile.
      await relay?.stop();
      await receiver.close();
    }
    return report(runs, backlogs, timing, context);
  },
};

function report(
  runs: readonly RunResult[],
  backlogs: readonly BacklogResult[],
  timing: Plan,
  context: BenchContext,
): SectionReport {
  const find = (mode: RunResult["mode"], agents: number): RunResult => {
    const run = runs.find((r) => r.mode === mode && r.agents === agents);
    if (!run) throw new Error(`no ${mode} measurement at ${agents} agents`);
    return run;
  };

  const tables: Table[] = [
    {
      caption: `Person's post → agent receives the signed event, posts started on a fixed schedule of ${RATE} events/s`,
      columns: [
        "Agents",
        "Events measured",
        "Delivered/s",
        "p50 (ms)",
        "p99 (ms)",
        "Max (ms)",
        "Post answered p50 / p99 (ms)",
        "Relay CPU/event (µs)",
        "Lost / dup / bad / post errors",
      ],
      rows: AGENT_COUNTS.map((agents) => {
        const r = find("paced", agents);
        return [
          String(agents),
          String(r.posts),
          r.deliveredPerSecond.toFixed(0),
          formatMs(r.latencyMs.p50),
          formatMs(r.latencyMs.p99),
          formatMs(r.latencyMs.max),
          `${formatMs(r.postResponseMs.p50)} / ${formatMs(r.postResponseMs.p99)}`,
          cpuCell(r.relayCpuUsPerEvent),
          problemsCell(r),
        ];
      }),
    },
    {
      caption: `Maximum throughput: ${POSTERS} people posting back to back for ${timing.throughputMs / 1000} s`,
      columns: [
        "Agents",
        "Posts/s",
        "Events delivered/s",
        "p50 (ms)",
        "p99 (ms)",
        "Last event after window (ms)",
        "Relay CPU/event (µs)",
        "Relay CPU (% of a core)",
        "Lost / dup / bad / post errors",
      ],
      rows: (PACED_ONLY ? [] : AGENT_COUNTS).map((agents) => {
        const r = find("max", agents);
        return [
          String(agents),
          r.postsPerSecond.toFixed(0),
          r.deliveredPerSecond.toFixed(0),
          formatMs(r.latencyMs.p50),
          formatMs(r.latencyMs.p99),
          formatMs(r.drainMs),
          cpuCell(r.relayCpuUsPerEvent),
          r.relayCpuPercent === undefined ? "n/a" : r.relayCpuPercent.toFixed(0),
          problemsCell(r),
        ];
      }),
    },
    {
      caption: "Delivery alone: a backlog of events released at once (webhook URLs set after the posts)",
      columns: [
        "Agents",
        "Events",
        "All delivered in (ms)",
        "Events delivered/s",
        "Relay CPU/event (µs)",
        "Lost / dup / bad / post errors",
      ],
      rows: backlogs.map((r) => [
        String(r.agents),
        String(r.events),
        formatMs(r.totalMs),
        r.deliveredPerSecond.toFixed(0),
        cpuCell(r.relayCpuUsPerEvent),
        problemsCell(r),
      ]),
    },
  ];

  const goals: Goal[] = AGENT_COUNTS.map((agents) => {
    const r = find("paced", agents);
    return {
      description: `Webhook p99, post → agent, at ${RATE} events/s, ${agents} agent${agents === 1 ? "" : "s"}`,
      target: `< ${GOAL_P99_MS} ms, none lost`,
      measured: `${formatMs(r.latencyMs.p99)} ms (p50 ${formatMs(r.latencyMs.p50)}), ${r.lost} lost`,
      pass: r.latencyMs.p99 < GOAL_P99_MS && clean(r),
    };
  });

  const lag = find("paced", 1).pacingLagMs;
  return {
    tables,
    goals,
    notes: [
      "The relay runs in its own process over SQLite in a fresh data folder; people post through the HTTP API over keep-alive connections; the receiver, in the benchmark process, answers 204 at once.",
      "Latency: from starting a person's POST to the receiver having the whole signed event, matched by the message id in the payload. Each event is one outbox row written with the message, one signature and one POST.",
      `With 100 agents message k mentions agent k mod 100, each agent with its own URL path, so every message is still one event.`,
      "Maximum throughput: events that arrived inside the measured window per second of it; posts/s bounds it, and how long after the window the last event arrived shows whether delivery kept up.",
      "Relay CPU/event: the relay process's user + system CPU time per event, posting included except in the backlog table, where it is the delivery alone (sign, send, record).",
      "Lost / dup / bad: events never received, received more than once, or received at the wrong agent or failing verification (every received event is verified with its agent's signing secret).",
      ...(lag
        ? [`Pacing: posts started p50 ${formatMs(lag.p50)} ms, p99 ${formatMs(lag.p99)} ms after their scheduled time.`]
        : []),
      ...(context.quick ? ["--quick run: short windows, figures are indicative only."] : []),
    ],
    data: {
      rate: RATE,
      posters: POSTERS,
      runs: runs.map((r) => ({
        mode: r.mode,
        agents: r.agents,
        posts: r.posts,
        postErrors: r.postErrors,
        firstPostError: r.firstPostError ?? null,
        windowMs: round(r.windowMs),
        postsPerSecond: round(r.postsPerSecond, 1),
        deliveredPerSecond: round(r.deliveredPerSecond, 1),
        latencyMs: roundSummary(r.latencyMs),
        postResponseMs: roundSummary(r.postResponseMs),
        lost: r.lost,
        duplicates: r.duplicates,
        bad: r.bad,
        drainMs: round(r.drainMs),
        relayCpuUsPerEvent: r.relayCpuUsPerEvent === undefined ? null : round(r.relayCpuUsPerEvent, 1),
        relayCpuPercent: r.relayCpuPercent === undefined ? null : round(r.relayCpuPercent, 1),
        pacingLagMs: r.pacingLagMs ? roundSummary(r.pacingLagMs) : null,
      })),
      backlogs: backlogs.map((r) => ({
        agents: r.agents,
        events: r.events,
        totalMs: round(r.totalMs),
        deliveredPerSecond: round(r.deliveredPerSecond, 1),
        relayCpuUsPerEvent: r.relayCpuUsPerEvent === undefined ? null : round(r.relayCpuUsPerEvent, 1),
        lost: r.lost,
        duplicates: r.duplicates,
        bad: r.bad,
        postErrors: r.postErrors,
      })),
    },
  };
}

function roundSummary(summary: LatencySummary) {
  return {
    p50: round(summary.p50),
    p99: round(summary.p99),
    mean: round(summary.mean),
    max: round(summary.max),
    samples: summary.samples,
  };
}
