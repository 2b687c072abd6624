/** The Insights view's DOM-free parts: the days of a range, daily series with gaps filled, and the CSV export. */
import type { TabUsageFigures, TabUsageRow } from "@tab-relay/shared/api";

export const RANGES = [7, 30, 90] as const;
export type RangeDays = (typeof RANGES)[number];

/** `since` (inclusive) and `until` (exclusive) as the API takes them: the last `days` UTC days, today included. */
export function rangeOf(days: number, now: Date): { since: string; until: string; days: string[] } {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const list: string[] = [];
  for (let i = days - 1; i >= 0; i--) list.push(isoDay(today - i * 86_400_000));
  return { since: list[0] ?? isoDay(today), until: isoDay(today + 86_400_000), days: list };
}

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export interface DailySeries {
  days: string[];
  shown: number[];
  accepted: number[];
  /** Percent, null on a day with nothing shown. */
  rate: (number | null)[];
  p50: (number | null)[];
  p90: (number | null)[];
}

/** One value a day for every day of the range; a day without a row had nothing (zero, or a gap for ratios). */
export function dailySeries(days: string[], rows: readonly TabUsageRow[]): DailySeries {
  const byDay = new Map(rows.map((row) => [row.key, row]));
  const at = (day: string) => byDay.get(day);
  return {
    days,
    shown: days.map((day) => at(day)?.suggestions_shown ?? 0),
    accepted: days.map((day) => at(day)?.acceptances ?? 0),
    rate: days.map((day) => percent(at(day)?.acceptance_rate ?? null)),
    p50: days.map((day) => at(day)?.time_to_ghost_ms.p50 ?? null),
    p90: days.map((day) => at(day)?.time_to_ghost_ms.p90 ?? null),
  };
}

/** A rate as a percentage with one decimal, as the tables show it. */
export function percent(rate: number | null): number | null {
  return rate === null ? null : Math.round(rate * 1000) / 10;
}

export function hasData(totals: TabUsageFigures): boolean {
  return totals.requests > 0 || totals.suggestions_shown > 0 || totals.next_edits.shown > 0;
}

/** The next edits' line under the totals: what was shown, applied, dismissed or typed over, and how soon it showed. */
export function nextEditsLine(totals: TabUsageFigures): string {
  const n = totals.next_edits;
  if (n.shown === 0) return "Next edits: none shown in this range.";
  const rate = n.acceptance_rate === null ? "" : ` (${percent(n.acceptance_rate)}%)`;
  const time = n.mean_time_to_show_ms === null ? "" : ` · mean time to show: ${n.mean_time_to_show_ms} ms`;
  return (
    `Next edits shown: ${n.shown} · applied: ${n.accepted}${rate} · dismissed: ${n.dismissed}` +
    ` · typed over: ${n.typed_over} · characters applied: ${n.chars_accepted}${time}`
  );
}

const CSV_COLUMNS = [
  "requests",
  "suggestions_shown",
  "acceptances",
  "partial_acceptances",
  "dismissals",
  "typed_over",
  "acceptance_rate",
  "chars_accepted",
  "lines_accepted",
  "cache_hits",
  "errors",
  "rate_limited",
] as const;

/** Appended after the completion columns, so a spreadsheet reading columns by position still finds those. */
const NEXT_EDIT_CSV_COLUMNS = [
  "shown",
  "accepted",
  "dismissed",
  "typed_over",
  "acceptance_rate",
  "chars_accepted",
  "mean_time_to_show_ms",
] as const;

export interface CsvSection {
  /** `day`, `language` or `person`. */
  group: string;
  rows: readonly TabUsageRow[];
}

/** The tables' figures as one CSV (RFC 4180), a row per day, language and person, with a header. */
export function usageCsv(sections: readonly CsvSection[]): string {
  const header = [
    "group",
    "key",
    "name",
    ...CSV_COLUMNS,
    "time_to_ghost_p50_ms",
    "time_to_ghost_p90_ms",
    ...NEXT_EDIT_CSV_COLUMNS.map((column) => `next_edits_${column}`),
  ];
  const lines = [header.join(",")];
  for (const { group, rows } of sections)
    for (const row of rows)
      lines.push(
        [
          group,
          row.key,
          row.name ?? "",
          ...CSV_COLUMNS.map((column) => row[column] ?? ""),
          row.time_to_ghost_ms.p50 ?? "",
          row.time_to_ghost_ms.p90 ?? "",
          ...NEXT_EDIT_CSV_COLUMNS.map((column) => row.next_edits[column] ?? ""),
        ]
          .map(csvField)
          .join(","),
      );
  return `${lines.join("\r\n")}\r\n`;
}

function csvField(value: string | number): string {
  const text = String(value);
  // A leading =, +, - or @ would be read as a formula by a spreadsheet: a person's name is not to be run.
  const safe = /^[=+\-@\t\r]/.test(text) && typeof value === "string" ? `'${text}` : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
