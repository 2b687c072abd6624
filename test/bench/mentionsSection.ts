import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import { HOSTILE_MESSAGES, type HostileMessage, everyNameAtEveryAt, sharedPrefixDirectory } from "../support/mentions";
import type { BenchContext, BenchSection, SectionReport } from "./sections";
import { type BenchRelay, relayApi, startBenchRelay } from "./servers";
import { type LatencySummary, formatMs, round, summarize } from "./stats";

/**
 * Mention parsing against hostile messages: `findMentions` alone in this process, then the whole post through a
 * relay process whose directory holds the same 500 names, with a probe timing `/healthz` meanwhile (parsing blocks
 * the event loop, so a slow parse shows there as the time every other request waits).
 */

const GOAL_P99_MS = 20;
const ORDINARY: HostileMessage = {
  id: "ordinary",
  what: "an ordinary message with one mention",
  text: "@Platform Team Member 42 the nightly build failed on step 3, can you take a look?",
  expected: ["Platform Team Member 42"],
};
const PROBE_INTERVAL_MS = 5;

interface Plan {
  parses: number;
  /** Parses with the former algorithm, which takes a large part of a second each. */
  referenceParses: number;
  posts: number;
}

function plan(context: BenchContext): Plan {
  return context.quick
    ? { parses: 200, referenceParses: 2, posts: 30 }
    : { parses: 2_000, referenceParses: 5, posts: 200 };
}

interface ParseResult {
  id: string;
  what: string;
  chars: number;
  ms: LatencySummary;
  referenceMs: LatencySummary;
}

interface PostResult {
  id: string;
  what: string;
  postMs: LatencySummary;
  healthzMs: LatencySummary;
}

function time(samples: number, fn: () => void): number[] {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    fn();
    times.push(performance.now() - started);
  }
  return times;
}

function sameNames(found: readonly { name: string }[], message: HostileMessage): void {
  const names = found.map((member) => member.name);
  if (JSON.stringify(names) !== JSON.stringify(message.expected)) {
    throw new Error(`${message.id}: mentions ${JSON.stringify(names)}, expected ${JSON.stringify(message.expected)}`);
  }
}

async function parseInProcess(
  context: BenchContext,
  timing: Plan,
): Promise<{ indexMs: LatencySummary; parses: ParseResult[] }> {
  // Loaded here, so a broken module costs this section only, not the whole run.
  const { findMentions, mentionIndex } = await import("../../relay/src/conversations/mentions");
  const directory = sharedPrefixDirectory();
  const indexMs = summarize(time(50, () => mentionIndex(directory)));
  const index = mentionIndex(directory);
  const parses: ParseResult[] = [];
  for (const message of [ORDINARY, ...HOSTILE_MESSAGES]) {
    sameNames(findMentions(message.text, index), message);
    sameNames(everyNameAtEveryAt(message.text, directory), message);
    time(20, () => findMentions(message.text, index));
    const ms = summarize(time(timing.parses, () => findMentions(message.text, index)));
    const referenceMs = summarize(time(timing.referenceParses, () => everyNameAtEveryAt(message.text, directory)));
    parses.push({ id: message.id, what: message.what, chars: message.text.length, ms, referenceMs });
    context.progress(
      `  ${message.what}: p50 ${formatMs(ms.p50)} ms, p99 ${formatMs(ms.p99)} ms (every name at every @: ${formatMs(referenceMs.p50)} ms)`,
    );
  }
  return { indexMs, parses };
}

/** One request over `pool`; resolves with its time and answer, rejects on anything but `expected`. */
function timedRequest(
  pool: Agent,
  url: URL,
  method: "GET" | "POST",
  expected: number,
  headers: Record<string, string> = {},
  body?: Buffer,
): Promise<{ ms: number; text: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(
      { agent: pool, hostname: url.hostname, port: url.port, path: url.pathname, method, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode !== expected)
            reject(new Error(`${method} ${url.pathname} answered ${res.statusCode}: ${text.slice(0, 200)}`));
          else resolve({ ms: performance.now() - started, text });
        });
        res.on("error", reject);
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error("no answer within 10 s")));
    req.on("error", reject);
    req.end(body);
  });
}

/** Posts `message` back to back `count` times while a probe asks `/healthz` every few milliseconds on its own connection. */
async function postWhileProbing(
  relay: BenchRelay,
  channelId: string,
  message: HostileMessage,
  count: number,
): Promise<PostResult> {
  const poster = new Agent({ keepAlive: true, maxSockets: 1 });
  const probing = new Agent({ keepAlive: true, maxSockets: 1 });
  const postUrl = new URL(`${relay.url}/api/v1/conversations/channel/${channelId}/messages`);
  const healthUrl = new URL(`${relay.url}/healthz`);
  const body = Buffer.from(JSON.stringify({ text: message.text }));
  const headers = {
    authorization: `Bearer ${relay.apiKey}`,
    "content-type": "application/json",
    "content-length": String(body.byteLength),
  };
  const postMs: number[] = [];
  const healthzMs: number[] = [];
  let running = true;
  const probe = (async () => {
    while (running) {
      healthzMs.push((await timedRequest(probing, healthUrl, "GET", 200)).ms);
      await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
    }
  })();
  try {
    for (let i = 0; i < count; i++) {
      const { ms, text } = await timedRequest(poster, postUrl, "POST", 201, headers, body);
      if (i === 0) sameNames((JSON.parse(text) as { data: { mentions: { name: string }[] } }).data.mentions, message);
      postMs.push(ms);
    }
  } finally {
    running = false;
    await probe;
    poster.destroy();
    probing.destroy();
  }
  return { id: message.id, what: message.what, postMs: summarize(postMs), healthzMs: summarize(healthzMs) };
}

async function postThroughRelay(context: BenchContext, timing: Plan): Promise<PostResult[]> {
  context.progress("starting a relay in its own process and adding the 500 people to its workspace");
  const relay = await startBenchRelay(context, {
    settings: { TAB_RELAY_LOG_LEVEL: "warn", TAB_RELAY_RATE_LIMITS: "reads=10000000,writes=10000000" },
    cpuProfileDir: context.cpuProfileDir,
  });
  try {
    for (const person of sharedPrefixDirectory())
      await relayApi(relay, "POST", "/users", { name: person.name, role: "member" });
    const channel = await relayApi<{ id: string }>(relay, "POST", "/channels", { name: "mentions" });
    const results: PostResult[] = [];
    for (const message of [ORDINARY, ...HOSTILE_MESSAGES]) {
      context.progress(`  posting ${message.what}, ${timing.posts} times back to back`);
      const result = await postWhileProbing(relay, channel.id, message, timing.posts);
      results.push(result);
      context.progress(
        `    post p50 ${formatMs(result.postMs.p50)} ms, p99 ${formatMs(result.postMs.p99)} ms; /healthz meanwhile p99 ${formatMs(result.healthzMs.p99)} ms`,
      );
    }
    return results;
  } finally {
    await relay.stop();
  }
}

export const mentionsSection: BenchSection = {
  id: "mentions",
  title: "Mentions in hostile messages (500 names sharing prefixes)",
  async run(context: BenchContext): Promise<SectionReport> {
    const timing = plan(context);
    context.progress(`findMentions in this process, ${timing.parses} parses per message after a warm-up`);
    const { indexMs, parses } = await parseInProcess(context, timing);
    const posts = await postThroughRelay(context, timing);
    const atSigns = parses.find((parse) => parse.id === "at-signs") as ParseResult;
    return {
      tables: [
        {
          caption: `findMentions against 500 names (the index built once per directory version: p50 ${formatMs(indexMs.p50)} ms)`,
          columns: ["message", "characters", "p50 (ms)", "p99 (ms)", "every name at every @, p50 (ms)"],
          rows: parses.map((parse) => [
            parse.what,
            String(parse.chars),
            formatMs(parse.ms.p50),
            formatMs(parse.ms.p99),
            formatMs(parse.referenceMs.p50),
          ]),
        },
        {
          caption: `Posting it through the relay (HTTP, one poster, ${timing.posts} posts), with /healthz asked every ${PROBE_INTERVAL_MS} ms meanwhile`,
          columns: ["message", "post p50 (ms)", "post p99 (ms)", "/healthz p50 (ms)", "/healthz p99 (ms)"],
          rows: posts.map((post) => [
            post.what,
            formatMs(post.postMs.p50),
            formatMs(post.postMs.p99),
            formatMs(post.healthzMs.p50),
            formatMs(post.healthzMs.p99),
          ]),
        },
      ],
      goals: [
        {
          description: "findMentions p99, 8,000 @ signs, 500 names",
          target: `< ${GOAL_P99_MS} ms`,
          measured: `${formatMs(atSigns.ms.p99)} ms`,
          pass: atSigns.ms.p99 < GOAL_P99_MS,
        },
      ],
      notes: [
        '"Every name at every @" is the former algorithm (test/support/mentions.ts), timed in the same run for comparison.',
        "The relay runs from the built bundle on a fresh SQLite folder; the post includes storing the message and its mentions.",
      ],
      data: {
        indexMs: roundSummary(indexMs),
        parses: parses.map((parse) => ({
          ...parse,
          ms: roundSummary(parse.ms),
          referenceMs: roundSummary(parse.referenceMs),
        })),
        posts: posts.map((post) => ({
          ...post,
          postMs: roundSummary(post.postMs),
          healthzMs: roundSummary(post.healthzMs),
        })),
      },
    };
  },
};

function roundSummary(summary: LatencySummary): LatencySummary {
  return {
    p50: round(summary.p50),
    p99: round(summary.p99),
    mean: round(summary.mean),
    max: round(summary.max),
    samples: summary.samples,
  };
}
