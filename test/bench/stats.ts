/** Summary statistics over latency samples in milliseconds. */

export interface LatencySummary {
  p50: number;
  p99: number;
  mean: number;
  max: number;
  samples: number;
}

/** Nearest-rank percentile of an ascending array; NaN when there are no samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((total, value) => total + value, 0);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length,
    max: sorted.length === 0 ? Number.NaN : (sorted[sorted.length - 1] as number),
    samples: sorted.length,
  };
}

/** Rounds for display and JSON: three significant decimals are more than the noise allows. */
export function round(value: number, digits = 3): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function formatMs(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  return value < 10 ? value.toFixed(3) : value.toFixed(1);
}
