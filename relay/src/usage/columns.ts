/** The counters migration 0008 added; 0007 created the others, and keeps creating only those. */
export const NEXT_EDIT_COUNTERS = [
  "next_edits_shown",
  "next_edits_accepted",
  "next_edits_dismissed",
  "next_edits_typed_over",
  "next_edit_chars_shown",
  "next_edit_chars_accepted",
  /** Sum of the reported times from the pause to the next edit on screen: their mean is this over next_edits_shown. */
  "next_edit_show_ms",
] as const;

/**
 * The counters of one daily usage row (workspace × day × user × language × model), and its time-to-ghost-text
 * histogram: every column adds up, so relays sharing a database merge their counts with one additive upsert and a
 * report sums rows of any grouping.
 */
export const USAGE_COUNTERS = [
  "requests",
  "cache_hits",
  "errors",
  "rate_limited",
  "shown",
  "accepted",
  "accepted_partial",
  "dismissed",
  "typed_over",
  "shown_chars",
  "accepted_chars",
  "shown_lines",
  "accepted_lines",
  // From migration 0008 on: next edits the extension showed and what became of them, apart from completions.
  ...NEXT_EDIT_COUNTERS,
] as const;
export type UsageCounter = (typeof USAGE_COUNTERS)[number];

/**
 * Upper bounds (ms, inclusive) of the time-to-ghost-text buckets; a last bucket holds everything above. Percentiles
 * read from it are the bound of the bucket they fall in: exact enough to tell 150 ms from 400 ms, and fixed in size.
 */
export const GHOST_BOUNDS_MS = [50, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2500, 5000] as const;

type GhostIndex = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12;
export type GhostColumn = `ghost_ms_b${GhostIndex}`;
export const GHOST_COLUMNS: readonly GhostColumn[] = Array.from(
  { length: GHOST_BOUNDS_MS.length + 1 },
  (_, i) => `ghost_ms_b${i}` as GhostColumn,
);

export const USAGE_COLUMNS: readonly (UsageCounter | GhostColumn)[] = [...USAGE_COUNTERS, ...GHOST_COLUMNS];

export type UsageCounts = Record<UsageCounter | GhostColumn, number>;

export function emptyCounts(): UsageCounts {
  const counts = {} as UsageCounts;
  for (const column of USAGE_COLUMNS) counts[column] = 0;
  return counts;
}

export function ghostColumn(ms: number): GhostColumn {
  let i = 0;
  while (i < GHOST_BOUNDS_MS.length && ms > (GHOST_BOUNDS_MS[i] as number)) i++;
  return GHOST_COLUMNS[i] as GhostColumn;
}

/**
 * The `fraction` percentile (0.5, 0.9) of a row's histogram, as its bucket's upper bound; above the last bound it is
 * the largest time an event may report. Null with no events.
 */
export function ghostPercentile(counts: UsageCounts, fraction: number, overflowMs: number): number | null {
  let total = 0;
  for (const column of GHOST_COLUMNS) total += counts[column];
  if (total === 0) return null;
  const rank = Math.ceil(total * fraction);
  let seen = 0;
  for (let i = 0; i < GHOST_COLUMNS.length; i++) {
    seen += counts[GHOST_COLUMNS[i] as GhostColumn];
    if (seen >= rank) return i < GHOST_BOUNDS_MS.length ? (GHOST_BOUNDS_MS[i] as number) : overflowMs;
  }
  return overflowMs;
}
