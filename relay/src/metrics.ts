/** A small Prometheus registry: counters and histograms with labels, rendered in the text exposition format. */
type Labels = Record<string, string>;

interface Series {
  labels: Labels;
  value: number;
  buckets?: number[];
  sum?: number;
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
    for (let i = 0; i < this.bucketBounds.length; i++) if (value <= (this.bucketBounds[i] as number)) buckets[i] = (buckets[i] ?? 0) + 1;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const series of this.series.values()) {
      if (this.type === "counter") {
        lines.push(`${this.name}${labelText(series.labels)} ${series.value}`);
        continue;
      }
      this.bucketBounds.forEach((bound, i) => {
        lines.push(`${this.name}_bucket${labelText({ ...series.labels, le: String(bound) })} ${series.buckets?.[i] ?? 0}`);
      });
      lines.push(`${this.name}_bucket${labelText({ ...series.labels, le: "+Inf" })} ${series.value}`);
      lines.push(`${this.name}_sum${labelText(series.labels)} ${series.sum ?? 0}`);
      lines.push(`${this.name}_count${labelText(series.labels)} ${series.value}`);
    }
    return lines.join("\n");
  }
}

function labelText(labels: Labels): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return "";
  return `{${entries.map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`).join(",")}}`;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createMetrics() {
  const metrics = {
    httpRequests: new Metric("tab_relay_http_requests_total", "HTTP requests by route, method and status.", "counter"),
    httpDuration: new Metric("tab_relay_http_request_duration_seconds", "HTTP request duration by route, method and status.", "histogram", LATENCY_BUCKETS),
    upstreamRequests: new Metric("tab_relay_upstream_requests_total", "Provider requests by provider and outcome.", "counter"),
    upstreamErrors: new Metric("tab_relay_upstream_errors_total", "Provider failures by provider and error code.", "counter"),
    upstreamDuration: new Metric("tab_relay_upstream_duration_seconds", "Provider time to complete a suggestion.", "histogram", LATENCY_BUCKETS),
    upstreamFirstByte: new Metric("tab_relay_upstream_first_fragment_seconds", "Provider time to the first fragment.", "histogram", LATENCY_BUCKETS),
    rateLimited: new Metric("tab_relay_rate_limited_total", "Requests refused with 429, by limit class.", "counter"),
    cache: new Metric("tab_relay_completion_cache_total", "Completion cache lookups by result (hit or miss).", "counter"),
  };
  return {
    ...metrics,
    render(): string {
      return `${Object.values(metrics).map((m) => m.render()).join("\n")}\n`;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
