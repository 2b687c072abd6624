/**
 * `npm run bench`: measures the relay as real processes and prints progress, a Markdown table for the
 * README, and PASS/FAIL for each goal; the figures also go to test-output/bench/relay.json.
 * Flags: --quick (short windows), --only streaming,local-engine (run some sections), --cpu-prof (the
 * relay writes V8 CPU profiles to test-output/bench/profiles), --check (`npm run bench:check`: also exit 3 when a
 * figure of issue 23's table is past its floor, hotPath.ts).
 * Exits 0 when goals fail (it is a measurement) and 1 only when a section could not be measured.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { hotPathReport } from "./hotPath";
import { localEngineSection } from "./localEngineSection";
import { mentionsSection } from "./mentionsSection";
import { killAllSync, stopAll } from "./processes";
import {
  type BenchContext,
  type BenchSection,
  type Goal,
  type SectionReport,
  goalsTable,
  markdownTable,
} from "./sections";
import { cleanEnv } from "./servers";
import { scaleOutSection } from "./scaleOutSection";
import { startupSection } from "./startupSection";
import { round } from "./stats";
import { streamingSection } from "./streamingSection";
import { upstreamModesSection } from "./upstreamModesSection";
import { webhookSection } from "./webhookSection";

/** In the order they run; the local engine runs last, once no server is left competing for the CPU. */
const SECTIONS: readonly BenchSection[] = [
  startupSection,
  streamingSection,
  webhookSection,
  scaleOutSection,
  mentionsSection,
  upstreamModesSection,
  localEngineSection,
];

const root = fileURLToPath(new URL("../..", import.meta.url));
const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    "cpu-prof": { type: "boolean", default: false },
    check: { type: "boolean", default: false },
  },
  strict: true,
});
const only = values.only?.split(",").map((id) => id.trim());
const unknown = only?.filter((id) => !SECTIONS.some((s) => s.id === id)) ?? [];
if (unknown.length > 0) {
  console.error(`unknown section(s) ${unknown.join(", ")}; sections: ${SECTIONS.map((s) => s.id).join(", ")}`);
  process.exit(2);
}
const sections = SECTIONS.filter((s) => !only || only.includes(s.id));
const outDir = join(root, "test-output/bench");

const begun = performance.now();
const progress = (message: string) =>
  console.log(`[bench ${((performance.now() - begun) / 1000).toFixed(1).padStart(5)} s] ${message}`);
const context: BenchContext = {
  root,
  baseEnv: cleanEnv(process.env),
  quick: values.quick === true,
  cpuProfileDir: values["cpu-prof"] ? join(outDir, "profiles") : undefined,
  progress,
};

for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
  ["SIGHUP", 129],
] as const) {
  process.once(signal, () => {
    killAllSync();
    process.exit(code);
  });
}
process.once("exit", killAllSync);

const machine = {
  node: process.version,
  platform: `${process.platform} ${process.arch}`,
  cpu: cpus()[0]?.model ?? "unknown",
  cores: cpus().length,
  memoryGb: Math.round(totalmem() / 2 ** 30),
  // Other work on the machine skews every figure; a high load average marks a run to repeat.
  loadAverageBefore: round(loadavg()[0] ?? 0, 2),
};
progress(
  `node ${machine.node}, ${machine.cores} × ${machine.cpu}, load average ${machine.loadAverageBefore}${context.quick ? ", --quick" : ""}`,
);

interface Outcome {
  section: BenchSection;
  report?: SectionReport;
  error?: string;
}
const outcomes: Outcome[] = [];
for (const [index, section] of sections.entries()) {
  progress(`[${index + 1}/${sections.length}] ${section.title}`);
  try {
    outcomes.push({ section, report: await section.run(context) });
  } catch (error) {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    progress(`section ${section.id} could not be measured: ${message}`);
    outcomes.push({ section, error: message });
  } finally {
    await stopAll();
  }
}
progress("done");

const loadAverageAfter = round(loadavg()[0] ?? 0, 2);
const markdown: string[] = [
  `Measured on ${machine.cores} × ${machine.cpu}, Node ${machine.node}, ${new Date().toISOString().slice(0, 10)}; ` +
    `1-minute load average ${machine.loadAverageBefore} before and ${loadAverageAfter} after the run.`,
  "",
];
for (const { section, report, error } of outcomes) {
  markdown.push(`#### ${section.title}`, "");
  if (!report) {
    markdown.push(`Not measured: ${error?.split("\n")[0] ?? "unknown error"}`, "");
    continue;
  }
  for (const table of report.tables) markdown.push(`${table.caption}:`, "", markdownTable(table), "");
  for (const note of report.notes) markdown.push(`- ${note}`);
  if (report.notes.length > 0) markdown.push("");
}
const dataOf = (id: string) => outcomes.find((o) => o.section.id === id)?.report?.data;
const hotPath = hotPathReport(dataOf("streaming"), dataOf("startup"));
if (hotPath)
  markdown.push(
    `#### Issue 23: the completion path against its floor`,
    "",
    `${hotPath.table.caption}:`,
    "",
    markdownTable(hotPath.table),
    "",
  );
const goals: Goal[] = [...outcomes.flatMap((o) => o.report?.goals ?? []), ...(hotPath?.goals ?? [])];
if (goals.length > 0) markdown.push(markdownTable(goalsTable(goals)), "");

console.log("\n----- Markdown for the README -----\n");
console.log(markdown.join("\n"));
console.log("----- end of Markdown -----\n");

mkdirSync(outDir, { recursive: true });
const jsonPath = join(outDir, "relay.json");
writeFileSync(
  jsonPath,
  `${JSON.stringify(
    {
      measuredAt: new Date().toISOString(),
      machine: { ...machine, loadAverageAfter },
      quick: context.quick,
      sections: outcomes.map(({ section, report, error }) => ({
        id: section.id,
        title: section.title,
        ...(report ? { goals: report.goals, data: report.data } : { error }),
      })),
      goals,
      hotPath: hotPath ? { table: hotPath.table, floors: hotPath.floors } : null,
    },
    null,
    2,
  )}\n`,
);

for (const goal of goals)
  console.log(`${goal.pass ? "PASS" : "FAIL"}  ${goal.description}: ${goal.measured} (target ${goal.target})`);
const failed = goals.filter((g) => !g.pass);
const broken = outcomes.filter((o) => o.error !== undefined);
if (failed.length > 0 || broken.length > 0) {
  const bar = "!".repeat(72);
  console.log(`\n${bar}`);
  if (failed.length > 0)
    console.log(
      `!!! FAIL: ${failed.length} of ${goals.length} goals missed: ${failed.map((g) => g.description).join("; ")}`,
    );
  if (broken.length > 0)
    console.log(`!!! ${broken.length} section(s) could not be measured: ${broken.map((o) => o.section.id).join(", ")}`);
  console.log(bar);
} else {
  console.log(`\nAll ${goals.length} goals met.`);
}
if (values.check) {
  console.log("\nFloors (npm run bench:check, test/bench/hotPath.ts):");
  for (const floor of hotPath?.floors ?? [])
    console.log(`${floor.pass ? "PASS" : "FAIL"}  ${floor.description}: ${floor.measured} (floor ${floor.target})`);
  if (!hotPath) console.log("FAIL  the streaming and startup sections must both be measured for the check");
}
if (context.cpuProfileDir) console.log(`CPU profiles: ${context.cpuProfileDir}`);
console.log(`Results: ${jsonPath}`);
const pastFloor = values.check && (!hotPath || hotPath.floors.some((f) => !f.pass));
process.exitCode = broken.length > 0 ? 1 : pastFloor ? 3 : 0;
