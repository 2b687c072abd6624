/**
 * `npm run bench:context`: what the extension spends building `tab_context` with code from other files, on a
 * workspace of 200 real TypeScript files (this repository's, and zod's sources from node_modules), 20 of them open
 * in tabs, a few edited. Each request follows a keystroke typed at the cursor, so the cost of rebuilding the
 * windows a keystroke touched is in the figures, as it is in the editor. Reports p50/p99/max build time per
 * request, the characters and bytes sent, and the work done off the request path (reading files in, applying
 * edits). Three scenarios: the 20 open tabs only; after the user has also opened every other file of the
 * workspace once, so RecentFiles is at its bound of files; and the same with the bound of files lifted, so that
 * all 200 files are held and only the bound of characters applies (the slowest requests it can be made to do).
 *
 * Build time is wall-clock time, as the editor waits it. On a machine busier than it has cores (the load average
 * is printed with the figures), wall-clock percentiles include waiting for a core; so each request is built twice
 * more right away, and the best of the three tells the work apart from the wait. The repeats find the windows
 * already rebuilt, so they are a little cheaper than the first build, on which the goal is judged. Requests
 * during which V8 collected garbage are counted too: a collection is real (the extension host collects as well).
 *
 * Goals (issue 12), judged on the first two scenarios (the third lifts a default bound to stress the code): p99
 * build time under 5 ms; no surrounding_context over the budget, in any scenario. Figures also go to
 * test-output/bench/context.json. Exits 0 whether goals pass or not (it is a measurement), 1 when a request broke
 * its budget.
 *
 * Flags: --requests <n> (per scenario, default 2000), --seed <n>, --budget <chars> (default: the setting's default).
 */
import { readFileSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { execFileSync } from "node:child_process";
import { dirname, join, relative } from "node:path";
import { PerformanceObserver, performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { buildTabContext } from "../../extension/src/core/context";
import {
  DEFAULT_RECENT_FILES_LIMITS,
  RecentFiles,
  type Position,
  type RecentFilesLimits,
} from "../../extension/src/core/recentFiles";
import { buildRequestBody } from "../../extension/src/core/request";
import { DEFAULT_SETTINGS, type Settings } from "../../extension/src/core/settings";
import type { CompletionInput } from "../../extension/src/core/types";
import { parseSnippets } from "../../shared/src/protocol/snippets";
import { formatMs, round, summarize, type LatencySummary } from "./stats";
import { seededRandom } from "./typingTypist";

const root = fileURLToPath(new URL("../..", import.meta.url));
const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "2000" },
    seed: { type: "string", default: "1" },
    budget: { type: "string" },
  },
  strict: true,
});
const requests = Number(values.requests);
const seed = Number(values.seed);
const budget = values.budget === undefined ? DEFAULT_SETTINGS.surroundingContextChars : Number(values.budget);
if (!(requests > 0) || !Number.isInteger(seed) || !(budget >= 0)) {
  console.error("usage: bench:context [--requests n] [--seed n] [--budget chars]");
  process.exit(2);
}

const WORKSPACE_FILES = 200;
const FROM_THIS_REPOSITORY = 150;
const OPEN_TABS = 20;
/** Requests before the measured ones, so compiling the hot path is not in the figures. */
const WARM_UP = 300;
const P99_GOAL_MS = 5;
/** What the VS Code adapter reads each side of the cursor (WINDOW_CHARS in inlineCompletionProvider.ts). */
const WINDOW_CHARS = 32_768;

interface WorkspaceFile {
  readonly path: string;
  readonly uri: string;
  readonly text: string;
}

const random = seededRandom(seed);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const settings: Settings = {
  ...DEFAULT_SETTINGS,
  relayUrl: "http://127.0.0.1:8787",
  workspaceSlug: "bench",
  surroundingContextChars: budget,
};
const clock = { time: 1_700_000_000_000, now: () => clock.time };

const workspace = loadWorkspace();
const open = chooseOpenTabs(workspace);
console.log(
  `# Context building: ${workspace.length} files (${sumChars(workspace).toLocaleString("en-US")} characters), ${open.length} open, budget ${budget} characters\n`,
);
const loadAtStart = loadavg()[0] ?? 0;
/** When each garbage collection ran, on performance.now()'s clock. */
const collections: { start: number; end: number }[] = [];
const gcObserver = new PerformanceObserver((list) => {
  for (const entry of list.getEntries())
    collections.push({ start: entry.startTime, end: entry.startTime + entry.duration });
});
gcObserver.observe({ entryTypes: ["gc"] });

const scenarios = [
  await runScenario("20 open tabs", false),
  await runScenario("20 open tabs, every workspace file opened once before", true),
  await runScenario(
    "stress, not judged on time: every file opened before, and no bound on the number of files held",
    true,
    { maxFiles: Number.MAX_SAFE_INTEGER },
    false,
  ),
];
gcObserver.disconnect();
const failed = scenarios.filter((s) => !s.goals.every((goal) => goal.pass));
const overBudget = scenarios.some((s) => s.bytes.maxContextChars > budget);
const out = join(root, "test-output/bench/context.json");
mkdirSync(dirname(out), { recursive: true });
const load = { cores: availableParallelism(), atStart: round(loadAtStart, 2), atEnd: round(loadavg()[0] ?? 0, 2) };
writeFileSync(
  out,
  `${JSON.stringify({ node: process.version, seed, budget, requests, workspaceFiles: workspace.length, openTabs: open.length, load, scenarios }, null, 2)}\n`,
);
console.log(
  `load average ${load.atStart} at the start, ${load.atEnd} at the end, on ${load.cores} cores${Math.max(load.atStart, load.atEnd) > load.cores ? ": busier than its cores, so wall-clock p99 includes waiting for a core" : ""}`,
);
console.log(`\nfigures in ${out}`);
console.log(failed.length === 0 ? "PASS: all goals met" : `FAIL: ${failed.map((s) => s.name).join("; ")}`);
process.exit(overBudget ? 1 : 0);

interface Goal {
  readonly description: string;
  readonly measured: string;
  readonly pass: boolean;
}

interface ScenarioFigures {
  readonly name: string;
  readonly held: { readonly files: number; readonly chars: number; readonly windows: number };
  readonly buildMs: LatencySummary;
  /** The same request built twice more right after: the best of the three is the work without waiting for a core. */
  readonly bestOfThreeMs: LatencySummary;
  /** Requests during which a garbage collection ran, and the build time of the others. */
  readonly withCollection: number;
  readonly buildMsWithoutCollection: LatencySummary;
  readonly offRequestPath: { readonly openFileMs: LatencySummary; readonly keystrokeMs: LatencySummary };
  readonly bytes: {
    readonly contextCharsP50: number;
    readonly maxContextChars: number;
    readonly requestBytesP50: number;
    readonly requestBytesMax: number;
    readonly snippetsPerRequest: number;
    readonly requestsWithOtherFiles: number;
  };
  readonly goals: readonly Goal[];
}

async function runScenario(
  name: string,
  browseEverything: boolean,
  limits: Partial<RecentFilesLimits> = {},
  judged = true,
): Promise<ScenarioFigures> {
  const files = new RecentFiles(clock, limits);
  // The benchmark's own copy of every file, as lines, so that a keystroke costs it no more than the editor's.
  const mirrors = new Map(workspace.map((file) => [file.uri, file.text.split("\n")]));
  const openFileMs: number[] = [];
  const keystrokeMs: number[] = [];
  const openFile = (file: WorkspaceFile) => {
    const started = performance.now();
    files.open({ uri: file.uri, path: file.path, scheme: "file" }, file.text);
    openFileMs.push(performance.now() - started);
  };
  if (browseEverything) for (const file of workspace) openFile(file);
  for (const file of open) openFile(file);

  // A few files edited here and there before the measured typing starts, some minutes apart.
  for (const file of open.slice(0, 4)) {
    for (let i = 0; i < 3; i++) typeAt(file, randomPosition(file), "edited()");
    clock.time += 60_000;
  }

  const buildMs: number[] = [];
  const bestOfThreeMs: number[] = [];
  const spans: { start: number; end: number; ms: number }[] = [];
  const contextChars: number[] = [];
  const requestBytes: number[] = [];
  let snippets = 0;
  let withOtherFiles = 0;
  let active = pick(open);
  let cursor = randomPosition(active);
  for (let i = 0; i < WARM_UP + requests; i++) {
    // Every 50 requests the user moves to another open file and another place in it.
    if (i % 50 === 0) {
      active = pick(open);
      files.open({ uri: active.uri, path: active.path, scheme: "file" }, lines(active).join("\n"));
      cursor = randomPosition(active);
    }
    const typed = pick(["x", "(", " ", "\n", "e", "."]);
    typeAt(active, cursor, typed);
    cursor =
      typed === "\n" ? { line: cursor.line + 1, character: 0 } : { line: cursor.line, character: cursor.character + 1 };
    clock.time += 150;

    const input = inputAt(active, cursor);
    const started = performance.now();
    const context = buildTabContext(input, settings, files);
    const elapsed = performance.now() - started;
    if (i < WARM_UP) continue;
    buildMs.push(elapsed);
    spans.push({ start: started, end: started + elapsed, ms: elapsed });
    let best = elapsed;
    for (let again = 0; again < 2; again++) {
      const repeated = performance.now();
      buildTabContext(input, settings, files);
      best = Math.min(best, performance.now() - repeated);
    }
    bestOfThreeMs.push(best);
    const surrounding = context.surrounding_context ?? "";
    contextChars.push(surrounding.length);
    requestBytes.push(Buffer.byteLength(JSON.stringify(buildRequestBody(settings, context))));
    const parsed = parseSnippets(surrounding);
    snippets += parsed.length;
    if (parsed.some((snippet) => snippet.path !== active.path)) withOtherFiles++;
  }

  // Observers report after the fact; let them catch up before the spans are matched with collections.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const clean = spans.filter((span) => !collections.some((gc) => gc.start < span.end && gc.end > span.start));
  const held = files.paths();
  const windows = held.reduce((sum, path) => sum + files.heldWindows(`file:///workspace/${path}`).length, 0);
  const build = summarize(buildMs);
  const maxContextChars = Math.max(...contextChars);
  const figures: ScenarioFigures = {
    name,
    held: { files: held.length, chars: files.heldChars, windows },
    buildMs: roundSummary(build),
    bestOfThreeMs: roundSummary(summarize(bestOfThreeMs)),
    withCollection: spans.length - clean.length,
    buildMsWithoutCollection: roundSummary(summarize(clean.map((span) => span.ms))),
    offRequestPath: {
      openFileMs: roundSummary(summarize(openFileMs)),
      keystrokeMs: roundSummary(summarize(keystrokeMs)),
    },
    bytes: {
      contextCharsP50: summarize(contextChars).p50,
      maxContextChars,
      requestBytesP50: summarize(requestBytes).p50,
      requestBytesMax: Math.max(...requestBytes),
      snippetsPerRequest: round(snippets / requests, 2),
      requestsWithOtherFiles: round(withOtherFiles / requests, 3),
    },
    goals: [
      ...(judged
        ? [
            {
              description: `context building p99 under ${P99_GOAL_MS} ms`,
              measured: `${formatMs(build.p99)} ms`,
              pass: build.p99 < P99_GOAL_MS,
            },
          ]
        : []),
      {
        description: "no surrounding_context over the budget",
        measured: `largest ${maxContextChars} of ${budget} characters`,
        pass: maxContextChars <= budget,
      },
    ],
  };
  printScenario(figures);
  return figures;

  function lines(file: WorkspaceFile): string[] {
    return mirrors.get(file.uri) ?? [];
  }

  function randomPosition(file: WorkspaceFile): Position {
    const all = lines(file);
    const line = Math.floor(random() * all.length);
    return { line, character: Math.floor(random() * ((all[line] ?? "").length + 1)) };
  }

  /** Types `inserted` at `at`, in the mirror and in RecentFiles, as VS Code reports a keystroke. */
  function typeAt(file: WorkspaceFile, at: Position, inserted: string): void {
    const all = lines(file);
    const line = all[at.line] ?? "";
    all.splice(at.line, 1, ...`${line.slice(0, at.character)}${inserted}${line.slice(at.character)}`.split("\n"));
    const started = performance.now();
    files.edit(file.uri, [{ range: { start: at, end: at }, text: inserted }]);
    keystrokeMs.push(performance.now() - started);
  }

  /**
   * What the adapter passes: 32,768 characters of the document each side of the cursor (here, whole lines up to
   * that), the cursor's offset in them, and its line in the document.
   */
  function inputAt(file: WorkspaceFile, at: Position): CompletionInput {
    const all = lines(file);
    let first = at.line;
    for (let chars = 0; first > 0 && chars < WINDOW_CHARS; first--) chars += (all[first - 1] ?? "").length + 1;
    let last = at.line + 1;
    for (let chars = 0; last < all.length && chars < WINDOW_CHARS; last++) chars += (all[last] ?? "").length + 1;
    const before = all.slice(first, at.line);
    const text = all.slice(first, last).join("\n");
    const offset = before.reduce((sum, line) => sum + line.length + 1, 0) + at.character;
    return {
      uri: file.uri,
      relativePath: file.path,
      scheme: "file",
      languageId: "typescript",
      title: file.path.slice(file.path.lastIndexOf("/") + 1),
      text,
      offset,
      cursorLine: at.line,
    };
  }
}

function printScenario(f: ScenarioFigures): void {
  const ms = (s: LatencySummary) => `${formatMs(s.p50)} / ${formatMs(s.p99)} / ${formatMs(s.max)}`;
  console.log(`## ${f.name}\n`);
  console.log(
    `Held: ${f.held.files} files, ${f.held.chars.toLocaleString("en-US")} characters, ${f.held.windows.toLocaleString("en-US")} windows; ${f.buildMs.samples} requests measured\n`,
  );
  console.log("| measure | p50 / p99 / max |");
  console.log("|---|---|");
  console.log(`| building tab_context per request (ms) | ${ms(f.buildMs)} |`);
  console.log(`| the same request, best of three builds (ms) | ${ms(f.bestOfThreeMs)} |`);
  console.log(
    `| first builds of the ${f.buildMsWithoutCollection.samples} requests during which no garbage was collected (ms) | ${ms(f.buildMsWithoutCollection)} |`,
  );
  console.log(`| surrounding_context (characters) | ${f.bytes.contextCharsP50} / – / ${f.bytes.maxContextChars} |`);
  console.log(`| request body (bytes, JSON) | ${f.bytes.requestBytesP50} / – / ${f.bytes.requestBytesMax} |`);
  console.log(`| off the request path: taking in one file (ms) | ${ms(f.offRequestPath.openFileMs)} |`);
  console.log(`| off the request path: one keystroke's edit (ms) | ${ms(f.offRequestPath.keystrokeMs)} |`);
  console.log(
    `\n${f.bytes.snippetsPerRequest} snippets per request; ${Math.round(f.bytes.requestsWithOtherFiles * 100)} % of requests carry code from another file\n`,
  );
  console.log("| goal | measured | |");
  console.log("|---|---|---|");
  for (const goal of f.goals)
    console.log(`| ${goal.description} | ${goal.measured} | ${goal.pass ? "PASS" : "FAIL"} |`);
  console.log("");
}

function roundSummary(s: LatencySummary): LatencySummary {
  return { p50: round(s.p50), p99: round(s.p99), mean: round(s.mean), max: round(s.max), samples: s.samples };
}

/**
 * 150 TypeScript files of this repository and 50 of zod's sources, both spread evenly over their sorted lists so
 * every package is represented; none over the 1 MB that RecentFiles would refuse.
 */
function loadWorkspace(): WorkspaceFile[] {
  const own = execFileSync("git", ["ls-files", "*.ts"], { cwd: root, encoding: "utf8" })
    .split("\n")
    .filter((path) => path !== "")
    .sort();
  const zodRoot = join(root, "node_modules/zod");
  const zod = listTs(zodRoot)
    .filter((path) => !path.endsWith(".d.ts"))
    .map((path) => relative(root, path))
    .sort();
  const chosen = [...spread(own, FROM_THIS_REPOSITORY), ...spread(zod, WORKSPACE_FILES - FROM_THIS_REPOSITORY)];
  return chosen
    .filter((path) => statSync(join(root, path)).size <= DEFAULT_RECENT_FILES_LIMITS.maxFileBytes)
    .map((path) => ({ path, uri: `file:///workspace/${path}`, text: readFileSync(join(root, path), "utf8") }));
}

function listTs(dir: string): string[] {
  return execFileSync("find", [dir, "-name", "*.ts", "-type", "f"], { encoding: "utf8" })
    .split("\n")
    .filter((path) => path !== "");
}

function spread<T>(items: readonly T[], count: number): T[] {
  if (items.length <= count) return [...items];
  return Array.from({ length: count }, (_, i) => items[Math.floor((i * items.length) / count)] as T);
}

/** The tabs a developer of the extension's core would have open: its neighbours first, then a few elsewhere. */
function chooseOpenTabs(files: readonly WorkspaceFile[]): WorkspaceFile[] {
  const near = files.filter((file) => file.path.startsWith("extension/src/core/"));
  const far = files.filter((file) => !file.path.startsWith("extension/src/core/"));
  const chosen = new Set<WorkspaceFile>();
  while (chosen.size < Math.min(12, near.length)) chosen.add(pick(near));
  while (chosen.size < OPEN_TABS) chosen.add(pick(far));
  return [...chosen];
}

function sumChars(files: readonly WorkspaceFile[]): number {
  return files.reduce((sum, file) => sum + file.text.length, 0);
}
