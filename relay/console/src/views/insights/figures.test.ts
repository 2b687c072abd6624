import assert from "node:assert/strict";
import { test } from "node:test";
import type { TabUsageRow } from "@tab-relay/shared/api";
import { dailySeries, hasData, nextEditsLine, rangeOf, usageCsv } from "./figures";

function row(key: string, figures: Partial<TabUsageRow> = {}): TabUsageRow {
  return {
    key,
    requests: 0,
    cache_hits: 0,
    errors: 0,
    rate_limited: 0,
    suggestions_shown: 0,
    acceptances: 0,
    partial_acceptances: 0,
    dismissals: 0,
    typed_over: 0,
    acceptance_rate: null,
    chars_shown: 0,
    chars_accepted: 0,
    lines_shown: 0,
    lines_accepted: 0,
    time_to_ghost_ms: { p50: null, p90: null },
    active_users: 0,
    next_edits: {
      shown: 0,
      accepted: 0,
      dismissed: 0,
      typed_over: 0,
      acceptance_rate: null,
      chars_shown: 0,
      chars_accepted: 0,
      mean_time_to_show_ms: null,
    },
    ...figures,
  };
}

test("a range is the last N UTC days, today included, with until the day after", () => {
  const range = rangeOf(7, new Date("2026-03-01T23:30:00Z"));
  assert.deepEqual(range.days, [
    "2026-02-23",
    "2026-02-24",
    "2026-02-25",
    "2026-02-26",
    "2026-02-27",
    "2026-02-28",
    "2026-03-01",
  ]);
  assert.equal(range.since, "2026-02-23");
  assert.equal(range.until, "2026-03-02");
});

test("days without a row count zero suggestions and leave a gap in the rate and latency", () => {
  const days = ["2026-02-27", "2026-02-28"];
  const series = dailySeries(days, [
    row("2026-02-28", {
      suggestions_shown: 3,
      acceptances: 2,
      acceptance_rate: 2 / 3,
      time_to_ghost_ms: { p50: 200, p90: 500 },
    }),
  ]);
  assert.deepEqual(series, {
    days,
    shown: [0, 3],
    accepted: [0, 2],
    rate: [null, 66.7],
    p50: [null, 200],
    p90: [null, 500],
  });
});

test("the CSV quotes commas and quotes, and keeps a name from being read as a spreadsheet formula", () => {
  const csv = usageCsv([
    { group: "day", rows: [row("2026-02-28", { suggestions_shown: 2, acceptances: 1, acceptance_rate: 0.5 })] },
    { group: "person", rows: [row("usr_1", { name: '=HYPERLINK("x"), "Bob"' })] },
  ]);
  const lines = csv.split("\r\n");
  assert.equal(lines[0]?.split(",").slice(0, 5).join(","), "group,key,name,requests,suggestions_shown");
  assert.equal(lines[1], "day,2026-02-28,,0,2,1,0,0,0,0.5,0,0,0,0,0,,,0,0,0,0,,0,");
  assert.equal(lines[2], `person,usr_1,"'=HYPERLINK(""x""), ""Bob""",0,0,0,0,0,0,,0,0,0,0,0,,,0,0,0,0,,0,`);
  assert.equal(lines[3], "");
});

test("next edits get their own line, CSV columns after the completion ones, and count as data on their own", () => {
  const next_edits = {
    shown: 4,
    accepted: 3,
    dismissed: 1,
    typed_over: 0,
    acceptance_rate: 0.75,
    chars_shown: 40,
    chars_accepted: 31,
    mean_time_to_show_ms: 18,
  };
  const only = row("2026-02-28", { next_edits });
  assert.equal(
    nextEditsLine(only),
    "Next edits shown: 4 · applied: 3 (75%) · dismissed: 1 · typed over: 0 · characters applied: 31 · mean time to show: 18 ms",
  );
  assert.equal(nextEditsLine(row("2026-02-28")), "Next edits: none shown in this range.");
  assert.equal(hasData(only), true, "a range with only next edits is not the empty state");
  assert.equal(hasData(row("2026-02-28")), false);
  const [header, line] = usageCsv([{ group: "day", rows: [only] }]).split("\r\n");
  assert.deepEqual(header?.split(",").slice(-7), [
    "next_edits_shown",
    "next_edits_accepted",
    "next_edits_dismissed",
    "next_edits_typed_over",
    "next_edits_acceptance_rate",
    "next_edits_chars_accepted",
    "next_edits_mean_time_to_show_ms",
  ]);
  assert.deepEqual(line?.split(",").slice(-7), ["4", "3", "1", "0", "0.75", "31", "18"]);
});
