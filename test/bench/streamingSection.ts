import type { StandInBehaviour } from "../support/upstreamStandIn";
import {
  type LoadResult,
  type LoadSlice,
  type StreamTarget,
  type WindowProbe,
  combineSlices,
  fetchStream,
  runSlice,
} from "./load";
import type { BenchContext, BenchSection, Goal, SectionReport } from "./sections";
import {
  type RunningProxy,
  type RunningUpstream,
  cartCompletionBody,
  cartCompletionTarget,
  startBenchRelay,
  startProxy,
  startUpstream,
} from "./servers";
import { formatMs, round } from "./stats";
import { rssMb } from "./startupSection";

/** A fast upstream: one short line in eight chunks, written back to back with no delay. */
export const REPLY: StandInBehaviour = {
  kind: "reply",
  text: "items.reduce((sum, item) => sum + item.price * item.quantity, 0);",
  chunks: 8,
};

const CONCURRENCIES = [1, 50] as const;
const PATHS = ["upstream", "proxy", "express", "relay"] as const;
type PathName = (typeof PATHS)[number];

const PATH_LABELS: Record<PathName, string> = {
  upstream: "upstream directly",
  proxy: "node:http pass-through proxy",
  express: "express 5 pass-through proxy",
  relay: "tab-relay",
};

/** What the extension sends by default: about 600 characters before the cursor and 80 after. */
const BEFORE_CURSOR = [
  'import type { Cart, Item } from "./types";',
  "",
  "/** Sums the cart, applying each item's discount before tax. */",
  "export function subtotal(cart: Cart): number {",
  "  let sum = 0;",
  "  for (const item of cart.items) {",
  "    const discount = item.discount ?? 0;",
  "    sum += item.price * item.quantity * (1 - discount);",
  "  }",
  "  return Math.round(sum * 100) / 100;",
  "}",
  "",
  "export function itemCount(cart: Cart): number {",
  "  return cart.items.reduce((count, item) => count + item.quantity, 0);",
  "}",
  "",
  "export function heaviest(items: readonly Item[]): Item | undefined {",
  "  return [...items].sort((a, b) => b.weight - a.weight)[0];",
  "}",
  "",
  "export function total(items: readonly Item[]): number {",
  "  return ",
].join("\n");
const AFTER_CURSOR = "\n}\n\nexport function tax(total: number): number {\n  return total * 0.2;\n}\n";

export const CURSOR = { before: BEFORE_CURSOR, after: AFTER_CURSOR };

/** The relay's settings for the streaming runs, against the upstream stand-in at `upstreamUrl`. */
export const relaySettings = (upstreamUrl: string): Record<string, string> => ({
  TAB_RELAY_UPSTREAM_URL: upstreamUrl,
  TAB_RELAY_UPSTREAM_MODEL: "bench",
  TAB_RELAY_UPSTREAM_API: "chat",
  TAB_RELAY_RATE_LIMITS: "reads=10000000,writes=10000000",
  // Every request must really stream through the provider, not come out of the cache.
  TAB_RELAY_CACHE_ENTRIES: "0",
  TAB_RELAY_LOG_LEVEL: "warn",
});

/** The same hole-filling request as an OpenAI chat body, about the size of the one the relay sends upstream. */
function chatBody(): string {
  return JSON.stringify({
    model: "bench",
    stream: true,
    max_tokens: 500,
    temperature: 0.2,
    messages: [
      {
        role: "system",
        content:
          "You are an inline completion engine inside an editor. The user's text contains the marker {{CURSOR}} where the cursor is. " +
          "Predict the text the user is most likely to type next at the cursor.\n\nRules:\n" +
          "- Reply with only the text to insert at the cursor. No code fences, no quotes, no explanations, no preamble.\n" +
          "- Never repeat the text before or after {{CURSOR}}; your reply is inserted between them exactly as written.\n" +
          "- Keep whitespace, indentation and line breaks exactly as they must appear in the result.\n" +
          "- Be brief: complete the current line, sentence or block, not the whole document.\n" +
          "- If nothing sensible fits, reply with nothing.\n\nThe text is typescript source code in src/cart.ts.",
      },
      { role: "user", content: `${BEFORE_CURSOR}{{CURSOR}}${AFTER_CURSOR}` },
    ],
  });
}

const FIRST_FRAGMENT = "providerFirstFragmentMeanMs";
const HANDLED = "completionRequestMeanMs";

/**
 * Reads the relay's own /metrics around a window: how long its provider took to the first fragment
 * (fetch plus the upstream) and how long it held each completion request, as means over the window.
 * Together with the TTFB seen by the client, this splits the relay's time into provider and the rest.
 */
function relayMetricsProbe(relayUrl: string): WindowProbe {
  const read = async () => {
    const text = await (await fetch(`${relayUrl}/metrics`)).text();
    const total = (prefix: string, filter = "") =>
      text
        .split("\n")
        .filter((line) => line.startsWith(prefix) && line.includes(filter))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
    return {
      firstSum: total("tab_relay_upstream_first_fragment_seconds_sum"),
      firstCount: total("tab_relay_upstream_first_fragment_seconds_count"),
      handledSum: total("tab_relay_http_request_duration_seconds_sum", "/tab/chat/completions"),
      handledCount: total("tab_relay_http_request_duration_seconds_count", "/tab/chat/completions"),
    };
  };
  let before: Awaited<ReturnType<typeof read>> | undefined;
  return {
    async begin() {
      before = await read().catch(() => undefined);
    },
    async end() {
      const after = await read().catch(() => undefined);
      if (!before || !after) return {};
      const mean = (sum: number, count: number) => (count > 0 ? (sum * 1000) / count : Number.NaN);
      const out: Record<string, number> = {};
      const first = mean(after.firstSum - before.firstSum, after.firstCount - before.firstCount);
      const handled = mean(after.handledSum - before.handledSum, after.handledCount - before.handledCount);
      if (Number.isFinite(first)) out[FIRST_FRAGMENT] = first;
      if (Number.isFinite(handled)) out[HANDLED] = handled;
      return out;
    },
  };
}

interface Cell {
  path: PathName;
  result: LoadResult;
}

/**
 * Each cell is measured in rounds, the three paths taking turns, so a burst of other work on the machine
 * lands on all of them rather than on whichever happened to run then. Later rounds warm up only briefly:
 * each window opens fresh connections.
 */
function timing(context: BenchContext, concurrency: number) {
  if (context.quick) return { firstWarmupMs: 400, warmupMs: 200, sliceMs: 700, rounds: 2 };
  return { firstWarmupMs: concurrency === 1 ? 1_500 : 2_000, warmupMs: 300, sliceMs: 2_000, rounds: 4 };
}

async function checkTarget(target: StreamTarget): Promise<void> {
  const { status, text } = await fetchStream(target);
  if (status !== 200 || !text.endsWith("data: [DONE]\n\n") || !/"content":"[^"]/.test(text)) {
    throw new Error(`${target.name} does not stream a completion (status ${status}):\n${text.slice(0, 500)}`);
  }
}

export const streamingSection: BenchSection = {
  id: "streaming",
  title: "Streaming completions: upstream vs pass-through proxy vs relay",
  async run(context: BenchContext): Promise<SectionReport> {
    const started: { stop(): Promise<void> }[] = [];
    const cells: Cell[] = [];
    let memory: RelayMemory | undefined;
    try {
      context.progress("starting the upstream stand-in, the pass-through proxy and the relay (each its own process)");
      const upstream: RunningUpstream = await startUpstream(context, REPLY);
      started.push(upstream.server);
      const proxy: RunningProxy = await startProxy(context, new URL(upstream.url).origin);
      started.push(proxy.server);
      const expressProxy: RunningProxy = await startProxy(context, new URL(upstream.url).origin, "express");
      started.push(expressProxy.server);
      const relay = await startBenchRelay(context, {
        settings: relaySettings(upstream.url),
        cpuProfileDir: context.cpuProfileDir,
      });
      started.push(relay);

      const targets: Record<PathName, StreamTarget> = {
        upstream: { name: "upstream", url: `${upstream.url}/chat/completions`, headers: {}, body: chatBody() },
        proxy: { name: "proxy", url: `${proxy.url}/v1/chat/completions`, headers: {}, body: chatBody() },
        express: { name: "express", url: `${expressProxy.url}/v1/chat/completions`, headers: {}, body: chatBody() },
        relay: cartCompletionTarget(relay, "relay", CURSOR),
      };
      for (const path of PATHS) await checkTarget(targets[path]);
      // CPU time per stream of each server explains a throughput ratio better than the ratio alone.
      const pids: Record<PathName, number> = {
        upstream: upstream.server.pid,
        proxy: proxy.server.pid,
        express: expressProxy.server.pid,
        relay: relay.server.pid,
      };

      for (const concurrency of CONCURRENCIES) {
        const plan = timing(context, concurrency);
        context.progress(
          `${concurrency} in flight: ${plan.rounds} rounds of ${plan.sliceMs / 1000} s per path, the paths taking turns`,
        );
        const slices: Record<PathName, LoadSlice[]> = { upstream: [], proxy: [], express: [], relay: [] };
        for (let round = 0; round < plan.rounds; round++) {
          for (const path of PATHS) {
            const slice = await runSlice(targets[path], {
              concurrency,
              warmupMs: round === 0 ? plan.firstWarmupMs : plan.warmupMs,
              durationMs: plan.sliceMs,
              processes: pids,
              ...(path === "relay" ? { probe: relayMetricsProbe(relay.url) } : {}),
            });
            slices[path].push(slice);
            const rate = slice.ttfbMs.length / (slice.elapsedMs / 1000);
            context.progress(
              `  round ${round + 1}/${plan.rounds}, ${PATH_LABELS[path]}: ${rate.toFixed(0)} streams/s${slice.errors > 0 ? `, ${slice.errors} errors` : ""}`,
            );
          }
        }
        for (const path of PATHS) {
          const result = combineSlices(path, concurrency, slices[path]);
          cells.push({ path, result });
          const cpu = result.cpuUsPerStream[path];
          context.progress(
            `${PATH_LABELS[path]}, ${concurrency} in flight: ${result.completed} streams, ${result.streamsPerSecond.toFixed(0)}/s, ` +
              `TTFB p50 ${formatMs(result.ttfbMs.p50)} ms p99 ${formatMs(result.ttfbMs.p99)} ms` +
              (cpu === undefined ? "" : `, ${path} CPU ${cpu.toFixed(0)} µs/stream`) +
              (result.probe[FIRST_FRAGMENT] === undefined
                ? ""
                : `, provider first fragment ${formatMs(result.probe[FIRST_FRAGMENT])} ms mean`) +
              (result.errors > 0 ? `, ${result.errors} ERRORS (first: ${result.firstError})` : ""),
          );
        }
      }
      // What the relay holds after serving every stream of the section (warm-ups included), for issue 23's bound.
      memory = { completions: await completionsServed(relay.url), rssMb: rssMb(relay.server.pid) };
      context.progress(`relay RSS after ${memory.completions} completions: ${memory.rssMb.toFixed(1)} MB`);
    } finally {
      // Stopping the relay is also what makes it write its CPU profile.
      for (const server of started.reverse()) await server.stop();
    }
    return report(cells, memory, context);
  },
};

/** The relay's own count of completion requests it has answered, from its /metrics. */
async function completionsServed(relayUrl: string): Promise<number> {
  const text = await (await fetch(`${relayUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter(
      (line) =>
        line.startsWith("tab_relay_http_request_duration_seconds_count") && line.includes("/tab/chat/completions"),
    )
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}

interface RelayMemory {
  completions: number;
  rssMb: number;
}

function report(cells: readonly Cell[], memory: RelayMemory | undefined, context: BenchContext): SectionReport {
  const find = (path: PathName, concurrency: number): LoadResult => {
    const cell = cells.find((c) => c.path === path && c.result.concurrency === concurrency);
    if (!cell) throw new Error(`no measurement for ${path} at ${concurrency}`);
    return cell.result;
  };
  const ratio = (value: number, baseline: number) => `${(value / baseline).toFixed(2)}×`;

  const rows = CONCURRENCIES.flatMap((concurrency) => {
    const proxy = find("proxy", concurrency);
    return PATHS.map((path) => {
      const r = find(path, concurrency);
      return [
        PATH_LABELS[path],
        String(concurrency),
        formatMs(r.ttfbMs.p50),
        formatMs(r.ttfbMs.p99),
        r.streamsPerSecond.toFixed(0),
        path === "proxy"
          ? "1.00×"
          : `${ratio(r.ttfbMs.p50, proxy.ttfbMs.p50)} (${signed(r.ttfbMs.p50 - proxy.ttfbMs.p50)} ms)`,
        path === "proxy" ? "1.00×" : ratio(r.streamsPerSecond, proxy.streamsPerSecond),
        cpuCell(r.cpuUsPerStream[path]),
        String(r.errors),
      ];
    });
  });

  const relay1 = find("relay", 1);
  const proxy1 = find("proxy", 1);
  const relay50 = find("relay", 50);
  const proxy50 = find("proxy", 50);
  const ttfbGap = relay1.ttfbMs.p50 - proxy1.ttfbMs.p50;
  const throughputRatio = relay50.streamsPerSecond / proxy50.streamsPerSecond;
  const errors = cells.reduce((sum, c) => sum + c.result.errors, 0);
  const goals: Goal[] = [
    {
      description: "Relay TTFB p50 at 1 stream, over the proxy's",
      target: "≤ +1 ms",
      measured: `${signed(ttfbGap)} ms (${formatMs(relay1.ttfbMs.p50)} vs ${formatMs(proxy1.ttfbMs.p50)})`,
      pass: ttfbGap <= 1 && relay1.errors === 0,
    },
    {
      description: "Relay streams/s at 50 streams, against the proxy's",
      target: "≥ 0.50×",
      measured: `${throughputRatio.toFixed(2)}× (${relay50.streamsPerSecond.toFixed(0)} vs ${proxy50.streamsPerSecond.toFixed(0)})`,
      pass: throughputRatio >= 0.5 && relay50.errors === 0,
    },
  ];

  return {
    tables: [
      {
        caption: `Time to first byte and completed streams per second (upstream reply: ${REPLY.kind === "reply" ? REPLY.chunks : 0} chunks, no delays)`,
        columns: [
          "Path",
          "Streams in flight",
          "TTFB p50 (ms)",
          "TTFB p99 (ms)",
          "Streams/s",
          "p50 vs proxy",
          "Streams/s vs proxy",
          "Server CPU/stream (µs)",
          "Errors",
        ],
        rows,
      },
    ],
    goals,
    notes: [
      "Load generator, upstream stand-in, proxy and relay each run in their own process; all connections are keep-alive.",
      "TTFB: from starting the request to the first byte of the response body. Streams/s: streams ended with [DONE] per second.",
      "Server CPU/stream: user + system CPU time of the process under test (the upstream, the proxy or the relay) per completed stream.",
      ...CONCURRENCIES.flatMap((concurrency) => {
        const relay = find("relay", concurrency);
        const provider = relay.probe[FIRST_FRAGMENT];
        if (provider === undefined) return [];
        return [
          `At ${concurrency} in flight the relay's mean TTFB is ${formatMs(relay.ttfbMs.mean)} ms; ${formatMs(provider)} ms of it (mean, from the relay's /metrics) is its provider waiting for the first fragment ` +
            `(calling the upstream directly: ${formatMs(find("upstream", concurrency).ttfbMs.mean)} ms mean TTFB), the rest is the relay's own work before the provider call and after the fragment.`,
        ];
      }),
      ...(errors > 0 ? [`${errors} requests failed; see the Errors column.`] : []),
      ...(context.quick ? ["--quick run: short windows, figures are indicative only."] : []),
    ],
    data: {
      upstreamReply: REPLY,
      relayAfterLoad: memory ?? null,
      requestBytes: {
        relay: Buffer.byteLength(cartCompletionBody("acme", CURSOR)),
        upstream: Buffer.byteLength(chatBody()),
      },
      cells: cells.map(({ path, result }) => ({
        path,
        concurrency: result.concurrency,
        completed: result.completed,
        errors: result.errors,
        firstError: result.firstError ?? null,
        elapsedMs: round(result.elapsedMs),
        streamsPerSecond: round(result.streamsPerSecond, 1),
        ttfbMs: roundSummary(result.ttfbMs),
        totalMs: roundSummary(result.totalMs),
        cpuUsPerStream: Object.fromEntries(
          Object.entries(result.cpuUsPerStream).map(([name, us]) => [name, round(us, 1)]),
        ),
        ttfbMeanMs: round(result.ttfbMs.mean),
        relayMetrics: Object.fromEntries(Object.entries(result.probe).map(([name, value]) => [name, round(value)])),
      })),
      ratiosToProxy: Object.fromEntries(
        CONCURRENCIES.map((concurrency) => {
          const proxy = find("proxy", concurrency);
          return [
            String(concurrency),
            Object.fromEntries(
              PATHS.map((path) => {
                const r = find(path, concurrency);
                return [
                  path,
                  {
                    ttfbP50: round(r.ttfbMs.p50 / proxy.ttfbMs.p50),
                    ttfbP50DeltaMs: round(r.ttfbMs.p50 - proxy.ttfbMs.p50),
                    streamsPerSecond: round(r.streamsPerSecond / proxy.streamsPerSecond),
                  },
                ];
              }),
            ),
          ];
        }),
      ),
    },
  };
}

function roundSummary(summary: LoadResult["ttfbMs"]) {
  return {
    p50: round(summary.p50),
    p99: round(summary.p99),
    mean: round(summary.mean),
    max: round(summary.max),
    samples: summary.samples,
  };
}

function cpuCell(us: number | undefined): string {
  return us === undefined ? "n/a" : us.toFixed(0);
}

function signed(value: number): string {
  return `${value >= 0 ? "+" : "−"}${formatMs(Math.abs(value))}`;
}
