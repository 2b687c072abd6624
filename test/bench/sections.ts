/**
 * The benchmark is a list of sections. Each measures one thing and returns tables and goals; the runner
 * prints them, writes them to JSON and renders them as Markdown. A new measurement (webhook events/s,
 * two relays on PostgreSQL) is a new section in `relayBench.ts`'s list.
 */
import type { ServerEnvironment } from "./servers";

export interface BenchContext extends ServerEnvironment {
  /** Shorter warm-ups and windows, for a quick look; the figures are noisier. */
  quick: boolean;
  /** When set, relays write V8 CPU profiles here. */
  cpuProfileDir: string | undefined;
  progress(message: string): void;
}

export interface Table {
  caption: string;
  columns: readonly string[];
  rows: readonly (readonly string[])[];
}

export interface Goal {
  description: string;
  target: string;
  measured: string;
  pass: boolean;
}

export interface SectionReport {
  tables: Table[];
  goals: Goal[];
  /** Plain lines printed under the tables, such as what a ratio means or what ran where. */
  notes: string[];
  /** Everything measured, unrounded where it matters, for `test-output/bench/relay.json`. */
  data: unknown;
}

export interface BenchSection {
  id: string;
  title: string;
  run(context: BenchContext): Promise<SectionReport>;
}

export function markdownTable(table: Table): string {
  const escape = (cell: string) => cell.replace(/\|/g, "\\|");
  const lines = [
    `| ${table.columns.map(escape).join(" | ")} |`,
    `|${table.columns.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`,
    ...table.rows.map((row) => `| ${row.map(escape).join(" | ")} |`),
  ];
  return lines.join("\n");
}

export function goalsTable(goals: readonly Goal[]): Table {
  return {
    caption: "Goals",
    columns: ["Goal", "Target", "Measured", "Result"],
    rows: goals.map((goal) => [goal.description, goal.target, goal.measured, goal.pass ? "PASS" : "**FAIL**"]),
  };
}
