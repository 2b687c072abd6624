/**
 * A small Prometheus registry for the relay's own counters and histograms (hot path: a map lookup and an add),
 * rendered in the text exposition format, followed by gauges read when /metrics is scraped and prom-client's
 * process and runtime figures.
 */
import { Gauge, Registry, collectDefaultMetrics } from "prom-client";

type Labels = Record<string, string>;

interface Series {
  labels: Labels;
  value: number;
  buckets?: number[];
  sum?: number;
  /**
   * The series' lines up to their values (`name{labels} `, one per bucket and sum and count for a histogram), built
   * on its first render: escaping labels on every scrape cost about a second per 8,000 series, all of it with the
   * event loop held.
   */
  prefixes?: string[];
}

class Metric {
  private readonly series = new Map<string, Series>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "histogram",
    private readonly bucketBounds: readonly number[] = [],
  ) {}

  private get(labels: Labels): Series {
    // A cheap key on the hot path; the escaped exposition text is only built when /metrics is read.
    let id = "";
    for (const key in labels) id += `${labels[key]}\u0001`;
    let series = this.series.get(id);
    if (!series) {
      series = { labels, value: 0 };
      if (this.type === "histogram") {
        series.buckets = this.bucketBounds.map(() => 0);
        series.sum = 0;
      }
      this.series.set(id, series);
    }
    return series;
  }

  inc(labels: Labels = {}, by = 1): void {
    this.get(labels).value += by;
  }

  observe(labels: Labels, value: number): void {
    const series = this.get(labels);
    series.value++;
    series.sum = (series.sum ?? 0) + value;
    const buckets = series.buckets ?? [];
    for (let i = 0; i < this.bucketBounds.length; i++)
      if (value <= (this.bucketBounds[i] as number)) buckets[i] = (buckets[i] ?? 0) + 1;
  }

  render(): string {
    let text = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} ${this.type}`;
    for (const series of this.series.values()) {
      const prefixes = (series.prefixes ??= this.prefixesOf(series.labels));
      if (this.type === "counter") {
        text += `\n${prefixes[0] as string}${series.value}`;
        continue;
      }
      const buckets = series.buckets ?? [];
      for (let i = 0; i < this.bucketBounds.length; i++) text += `\n${prefixes[i] as string}${buckets[i] ?? 0}`;
      const at = this.bucketBounds.length;
      text += `\n${prefixes[at] as string}${series.value}\n${prefixes[at + 1] as string}${series.sum ?? 0}\n${prefixes[at + 2] as string}${series.value}`;
    }
    return text;
  }

  private prefixesOf(labels: Labels): string[] {
    if (this.type === "counter") return [`${this.name}${labelText(labels)} `];
    return [
      ...this.bucketBounds.map((bound) => `${this.name}_bucket${labelText({ ...labels, le: String(bound) })} `),
      `${this.name}_bucket${labelText({ ...labels, le: "+Inf" })} `,
      `${this.name}_sum${labelText(labels)} `,
      `${this.name}_count${labelText(labels)} `,
    ];
  }
}

function labelText(labels: Labels): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return "";
  return `{${entries.map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`).join(",")}}`;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What the relay holds open and has waiting, read at scrape time only. */
export interface RelayState {
  /** Open now: console live sockets, Socket Mode sockets, completion streams (SSE). */
  sockets(): { console: number; socket_mode: number; sse: number };
  /** Pending outbox events, and when the oldest of them was created; one cheap query. */
  outbox(): Promise<{ pending: number; oldestCreatedAt: string | undefined }>;
  now(): number;
  /** The embedded engine, when one runs: completions waiting and running, and how long its model took to load. */
  engine?(): { queued: number; running: number; loadMs: number | undefined };
}

let runtime: Registry | undefined;

/**
 * prom-client's defaults (resident memory, CPU, event-loop lag, GC, handles, heap): one registry per process,
 * however many relays it runs (tests start dozens), since the figures are the process's and their monitors
 * (event-loop delay, GC observer) run for the process's life.
 */
function runtimeRegistry(): Registry {
  if (runtime === undefined) {
    runtime = new Registry();
    collectDefaultMetrics({ register: runtime });
  }
  return runtime;
}

/** Gauges for what `state` reports, collected on each scrape; both outbox gauges (and overlapping scrapes) share one read. */
function stateRegistry(getState: () => RelayState | undefined): Registry {
  const registry = new Registry();
  new Gauge({
    name: "tab_relay_open_sockets",
    help: "Connections held open now, by kind: console (live updates), socket_mode (agents), sse (completion streams).",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      const state = getState();
      if (state === undefined) return;
      for (const [kind, count] of Object.entries(state.sockets())) this.set({ kind }, count);
    },
  });
  let reading: Promise<{ pending: number; oldestCreatedAt: string | undefined } | undefined> | undefined;
  const readOutbox = (state: RelayState) => {
    // A database that does not answer makes the outbox series NaN (unknown) in this scrape rather than failing all of /metrics.
    reading ??= state
      .outbox()
      .catch(() => undefined)
      .finally(() => (reading = undefined));
    return reading;
  };
  new Gauge({
    name: "tab_relay_outbox_pending_events",
    help: "Webhook and Socket Mode events waiting in the outbox.",
    registers: [registry],
    async collect() {
      this.reset();
      const state = getState();
      const outbox = state && (await readOutbox(state));
      if (state !== undefined) this.set(outbox === undefined ? Number.NaN : outbox.pending);
    },
  });
  new Gauge({
    name: "tab_relay_outbox_oldest_pending_age_seconds",
    help: "How long the oldest pending outbox event has waited since it was created (0 with none pending).",
    registers: [registry],
    async collect() {
      this.reset();
      const state = getState();
      const outbox = state && (await readOutbox(state));
      if (state === undefined) return;
      if (outbox === undefined) return this.set(Number.NaN);
      const oldest = outbox.oldestCreatedAt === undefined ? Number.NaN : Date.parse(outbox.oldestCreatedAt);
      this.set(Number.isNaN(oldest) ? 0 : Math.max(0, (state.now() - oldest) / 1000));
    },
  });
  new Gauge({
    name: "tab_relay_engine_queue_depth",
    help: "Embedded engine completions by state: waiting for a sequence (queued) and running.",
    labelNames: ["state"],
    registers: [registry],
    collect() {
      const engine = getState()?.engine?.();
      if (engine === undefined) return;
      this.set({ state: "queued" }, engine.queued);
      this.set({ state: "running" }, engine.running);
    },
  });
  new Gauge({
    name: "tab_relay_engine_load_seconds",
    help: "How long the embedded engine's current child took to load its model.",
    registers: [registry],
    collect() {
      const loadMs = getState()?.engine?.().loadMs;
      if (loadMs !== undefined) this.set(loadMs / 1000);
    },
  });
  return registry;
}

export function createMetrics() {
  let state: RelayState | undefined;
  const scraped = stateRegistry(() => state);
  const metrics = {
    httpRequests: new Metric("tab_relay_http_requests_total", "HTTP requests by route, method and status.", "counter"),
    httpDuration: new Metric(
      "tab_relay_http_request_duration_seconds",
      "HTTP request duration by route, method and status.",
      "histogram",
      LATENCY_BUCKETS,
    ),
    upstreamRequests: new Metric(
      "tab_relay_upstream_requests_total",
      "Provider requests by provider and outcome.",
      "counter",
    ),
    upstreamErrors: new Metric(
      "tab_relay_upstream_errors_total",
      "Provider failures by provider and error code.",
      "counter",
    ),
    upstreamDuration: new Metric(
      "tab_relay_upstream_duration_seconds",
      "Provider time to complete a suggestion.",
      "histogram",
      LATENCY_BUCKETS,
    ),
    upstreamFirstByte: new Metric(
      "tab_relay_upstream_first_fragment_seconds",
      "Provider time to the first fragment.",
      "histogram",
      LATENCY_BUCKETS,
    ),
    signInsRefused: new Metric(
      "tab_relay_sign_ins_refused_total",
      "Console sign-ins refused, by reason (unknown_key, revoked_key, removed_user, no_console_scope).",
      "counter",
    ),
    controlTokensNeutralised: new Metric(
      "tab_relay_control_tokens_neutralised_total",
      "Completion requests whose client text held model control tokens, neutralised before the prompt was written.",
      "counter",
    ),
    upstreamLimits: new Metric(
      "tab_relay_upstream_limits_total",
      "Model-server answers stopped by a limit: deadline, progress, body, event, stream (TAB_RELAY_UPSTREAM_DEADLINE_MS, TAB_RELAY_UPSTREAM_MAX_*) or json (nesting or values too costly to parse).",
      "counter",
    ),
    rateLimited: new Metric("tab_relay_rate_limited_total", "Requests refused with 429, by limit class.", "counter"),
    cache: new Metric(
      "tab_relay_completion_cache_total",
      "Completion cache lookups by result (hit or miss).",
      "counter",
    ),
    tabSuggestionsShown: new Metric(
      "tab_relay_tab_suggestions_shown_total",
      "Suggestions the extension reported shown, by language.",
      "counter",
    ),
    tabSuggestionsAccepted: new Metric(
      "tab_relay_tab_suggestions_accepted_total",
      "Suggestions reported accepted, whole or in part, by language.",
      "counter",
    ),
    tabCharactersAccepted: new Metric(
      "tab_relay_tab_accepted_characters_total",
      "Characters of suggestions reported accepted, by language.",
      "counter",
    ),
    engineFirstToken: new Metric(
      "tab_relay_engine_time_to_first_token_seconds",
      "Embedded engine: from a completion reaching the engine to its first token.",
      "histogram",
      LATENCY_BUCKETS,
    ),
    engineTokensPerSecond: new Metric(
      "tab_relay_engine_tokens_per_second",
      "Embedded engine: decoding speed of each completion after its first token.",
      "histogram",
      [1, 2, 5, 10, 20, 50, 100, 200, 500],
    ),
    engineTokens: new Metric(
      "tab_relay_engine_tokens_total",
      "Embedded engine tokens by kind: prompt, evaluated (prompt tokens computed), reused (held from the last request), generated.",
      "counter",
    ),
    engineRestarts: new Metric(
      "tab_relay_engine_restarts_total",
      "Times the embedded engine's process stopped and was started again.",
      "counter",
    ),
    nextEdits: new Metric(
      "tab_relay_next_edits_total",
      "Next-edit answers by source (local, or the model format) and outcome: edits, or why there are none (no_change, ambiguous, and the model replies dropped: unparseable, outside_region, too_destructive).",
      "counter",
    ),
    deliveries: new Metric(
      "tab_relay_webhook_deliveries_total",
      "Outbox delivery attempts by outcome (delivered, retry: failed and scheduled again, failed: given up) and by transport (webhook, socket).",
      "counter",
    ),
  };
  return {
    ...metrics,
    /**
     * Where the scrape-time gauges read from; until set (tools that never serve), they are left out. A serving relay
     * also starts the runtime monitors here, so event-loop lag and GC are measured from its start, not its first scrape.
     */
    observe(source: RelayState): void {
      state = source;
      runtimeRegistry();
    },
    async render(): Promise<string> {
      const own = Object.values(metrics)
        .map((m) => m.render())
        .join("\n");
      const [gauges, process] = await Promise.all([scraped.metrics(), runtimeRegistry().metrics()]);
      return `${own}\n${gauges}${process}`;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
