/**
 * The Insights view: suggestions shown and accepted, the acceptance rate and the time to ghost text per day (uPlot
 * charts), a table per language and one per person, over 7, 30 or 90 days, with a CSV export. Owners and admins see the
 * workspace; anyone else sees their own usage, as GET /tab/usage answers.
 */
import uPlot from "uplot";
import { clearError, errorSlot, h, headed } from "../../dom";
import type { TabUsageReport, TabUsageRow } from "@tab-relay/shared/api";
import { installLine, SET_API_KEY_COMMAND } from "../../vscodeSetup";
import {
  type DailySeries,
  RANGES,
  type RangeDays,
  dailySeries,
  hasData,
  nextEditsLine,
  percent,
  rangeOf,
  usageCsv,
} from "./figures";
import type { InsightsHost } from "./host";

const CHART_HEIGHT = 200;

interface ChartSpec {
  testid: string;
  title: string;
  unit: string;
  series: { label: string; key: keyof Omit<DailySeries, "days">; color: string }[];
}

const CHARTS: ChartSpec[] = [
  {
    testid: "chart-suggestions",
    title: "Suggestions shown and accepted per day",
    unit: "",
    series: [
      { label: "Shown", key: "shown", color: "#4493f8" },
      { label: "Accepted", key: "accepted", color: "#3fb950" },
    ],
  },
  {
    testid: "chart-rate",
    title: "Acceptance rate per day",
    unit: "%",
    series: [{ label: "Acceptance rate", key: "rate", color: "#bc8cff" }],
  },
  {
    testid: "chart-latency",
    title: "Time to ghost text per day",
    unit: " ms",
    series: [
      { label: "p50", key: "p50", color: "#d29922" },
      { label: "p90", key: "p90", color: "#f85149" },
    ],
  },
];

const dash = (value: number | null) => (value === null ? "–" : String(value));

function figureCells(row: TabUsageRow): HTMLTableCellElement[] {
  const cells: [string, string][] = [
    ["shown", String(row.suggestions_shown)],
    ["accepted", String(row.acceptances)],
    ["rate", row.acceptance_rate === null ? "–" : `${percent(row.acceptance_rate)}%`],
    ["typed-over", String(row.typed_over)],
    ["dismissed", String(row.dismissals)],
    ["chars-accepted", String(row.chars_accepted)],
    ["p50", dash(row.time_to_ghost_ms.p50)],
    ["p90", dash(row.time_to_ghost_ms.p90)],
    ["next-edits", String(row.next_edits.shown)],
    ["next-edits-accepted", String(row.next_edits.accepted)],
  ];
  return cells.map(([name, text]) => h("td", { "data-cell": name }, text));
}

function usageTable(testid: string, first: string, rows: TabUsageRow[], label: (row: TabUsageRow) => string) {
  const head = [
    first,
    "Shown",
    "Accepted",
    "Rate",
    "Typed over",
    "Dismissed",
    "Characters accepted",
    "p50 ms",
    "p90 ms",
    "Next edits",
    "Next edits applied",
  ];
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "usage-table", "data-testid": testid },
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          head.map((text) => h("th", { scope: "col" }, text)),
        ),
      ),
      h(
        "tbody",
        null,
        rows.length
          ? rows.map((row) =>
              h(
                "tr",
                { "data-key": row.key },
                h("th", { scope: "row", "data-cell": "key" }, label(row)),
                figureCells(row),
              ),
            )
          : h("tr", null, h("td", { colspan: head.length, class: "muted" }, "Nothing in this range.")),
      ),
    ),
  );
}

function emptyState(self: boolean): HTMLElement {
  return h(
    "div",
    { class: "empty-state", "data-testid": "insights-empty" },
    h("p", null, self ? "You have no Tab usage in this range yet." : "No Tab usage in this range yet."),
    h(
      "ol",
      null,
      h("li", null, "Install this relay's extension in VS Code: ", h("code", null, installLine(location.origin))),
      h(
        "li",
        null,
        `Set this relay's URL and workspace in its settings, then run “${SET_API_KEY_COMMAND}” with your key.`,
      ),
      h(
        "li",
        null,
        "Keep ",
        h("code", null, "tabRelay.reportUsage"),
        " on (the default) and VS Code's telemetry not off: the extension then reports what became of each suggestion, without code.",
      ),
    ),
  );
}

function sortedByShown(rows: TabUsageRow[]): TabUsageRow[] {
  return [...rows].sort((a, b) => b.suggestions_shown - a.suggestions_shown || a.key.localeCompare(b.key));
}

export function renderInsights(page: HTMLElement, host: InsightsHost): () => void {
  const error = errorSlot();
  const content = h("div", { class: "insights-content", "data-testid": "insights-content" });
  const csv = h("button", { type: "button", "data-testid": "insights-csv", hidden: true }, "Export CSV");
  const buttons = RANGES.map((days) =>
    h(
      "button",
      { type: "button", "data-testid": `insights-range-${days}`, "data-days": days, "aria-pressed": "false" },
      `${days} days`,
    ),
  );
  const ranges = h("div", { class: "row", role: "group", "aria-label": "Range" }, buttons, csv);
  page.append(
    h(
      "p",
      { class: "muted", "data-testid": "insights-intro" },
      "Tab's suggestions: how many were shown and accepted, and how soon they appeared. Days are UTC. ",
    ),
    ranges,
    error,
    content,
  );
  const intro = page.querySelector<HTMLElement>('[data-testid="insights-intro"]');

  let charts: uPlot[] = [];
  let generation = 0;
  let csvText = "";
  let csvName = "";
  const resize = new ResizeObserver(() => {
    for (const chart of charts) chart.setSize({ width: chartWidth(chart.root.parentElement), height: CHART_HEIGHT });
  });

  function chartWidth(box: Element | null): number {
    return Math.max(240, Math.floor(box?.clientWidth ?? 600));
  }

  function destroyCharts(): void {
    for (const chart of charts) chart.destroy();
    charts = [];
    resize.disconnect();
  }

  function chart(spec: ChartSpec, series: DailySeries): HTMLElement {
    const box = h("div", {
      class: "chart",
      "data-testid": spec.testid,
      "data-series": JSON.stringify({
        days: series.days,
        ...Object.fromEntries(spec.series.map((s) => [s.key, series[s.key]])),
      }),
    });
    const section = headed(spec.title, "h2", box);
    const axisColor = getComputedStyle(page).color;
    const x = series.days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
    // Drawn once the box is in the page, so it has a width to fill.
    requestAnimationFrame(() => {
      if (!box.isConnected) return;
      const plot = new uPlot(
        {
          width: chartWidth(box),
          height: CHART_HEIGHT,
          tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
          // From zero, with room above the highest point so its marker is not cut off.
          scales: { y: { range: (_u, min, max) => [0, Math.max(max ?? 0, min ?? 0, 1) * 1.15] } },
          axes: [
            { stroke: axisColor, grid: { stroke: "rgba(128,128,128,0.2)" } },
            {
              stroke: axisColor,
              grid: { stroke: "rgba(128,128,128,0.2)" },
              size: 64,
              values: (_u, ticks) => ticks.map((tick) => `${tick}${spec.unit}`),
            },
          ],
          series: [
            { label: "Day", value: (_u, ts) => (ts === null ? "" : new Date(ts * 1000).toISOString().slice(0, 10)) },
            ...spec.series.map((s) => ({
              label: s.label,
              stroke: s.color,
              width: 2,
              points: { show: true, size: 5 },
              spanGaps: false,
              value: (_u: uPlot, v: number | null) => (v === null ? "–" : `${v}${spec.unit}`),
            })),
          ],
        },
        [x, ...spec.series.map((s) => series[s.key])] as uPlot.AlignedData,
        box,
      );
      charts.push(plot);
      resize.observe(box);
    });
    return section;
  }

  async function load(days: RangeDays): Promise<void> {
    const mine = ++generation;
    for (const button of buttons) button.setAttribute("aria-pressed", String(button.dataset.days === String(days)));
    page.dataset.range = String(days);
    page.dataset.state = "loading";
    clearError(error);
    const range = rangeOf(days, new Date());
    const get = (group_by: string) =>
      host.api<TabUsageReport>("GET", "/tab/usage", { query: { since: range.since, until: range.until, group_by } });
    try {
      const [byDay, byLanguage, byUser] = await Promise.all([get("day"), get("language"), get("user")]);
      if (mine !== generation) return;
      destroyCharts();
      const self = byDay.scope === "self";
      if (intro)
        intro.textContent = self
          ? "Your own use of Tab: how many suggestions were shown and accepted, and how soon they appeared. Days are UTC."
          : "The workspace's use of Tab: how many suggestions were shown and accepted, and how soon they appeared. Days are UTC.";
      const series = dailySeries(range.days, byDay.rows);
      const languages = sortedByShown(byLanguage.rows);
      const people = sortedByShown(byUser.rows);
      csvText = usageCsv([
        { group: "day", rows: byDay.rows },
        { group: "language", rows: languages },
        { group: "person", rows: people },
      ]);
      csvName = `tab-usage-${range.since}-to-${range.days.at(-1) ?? range.since}.csv`;
      const t = byDay.totals;
      content.replaceChildren(
        hasData(t) ? "" : emptyState(self),
        h(
          "p",
          { "data-testid": "insights-totals" },
          `Shown: ${t.suggestions_shown} · accepted: ${t.acceptances}`,
          t.acceptance_rate === null ? "" : ` (${percent(t.acceptance_rate)}%)`,
          ` · typed over: ${t.typed_over} · dismissed: ${t.dismissals} · requests: ${t.requests}`,
        ),
        h("p", { "data-testid": "insights-next-edits" }, nextEditsLine(t)),
        h(
          "div",
          { class: "charts" },
          CHARTS.map((spec) => chart(spec, series)),
        ),
        headed(
          "By language",
          "h2",
          usageTable("insights-languages", "Language", languages, (row) => row.key),
        ),
        headed(
          self ? "You" : "By person",
          "h2",
          usageTable("insights-people", "Person", people, (row) => row.name ?? `someone no longer here (${row.key})`),
        ),
      );
      csv.hidden = false;
      page.dataset.state = hasData(t) ? "ready" : "empty";
    } catch (failure) {
      if (mine !== generation) return;
      page.dataset.state = "error";
      host.showError(error, failure);
    }
  }

  csv.addEventListener("click", () => {
    const url = URL.createObjectURL(new Blob([csvText], { type: "text/csv;charset=utf-8" }));
    const link = h("a", { href: url, download: csvName, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    // Chromium reads the blob after this task; a minute is long enough and frees it soon after.
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  });
  for (const button of buttons)
    button.addEventListener("click", () => void load(Number(button.dataset.days) as RangeDays));
  void load(30);
  return () => {
    generation = -1;
    destroyCharts();
  };
}
