/**
 * The repository replay of `npm run bench:typing`: real files of two real projects typed with their neighbours
 * open, each in three configurations against the same relay and local engine:
 * - "today": what the extension sent before issue 12 (typingBaseline.ts): 500 characters of the document's own far
 *   parts and the head of the other visible editor;
 * - "own file": today's core with no code from other files (the document's far parts, up to the 6,000-character
 *   budget), as for a document RecentFiles does not hold;
 * - "other files": today's core with a RecentFiles holding the neighbours and the typed document as it changes.
 *
 * The projects: this repository as committed (git HEAD, so what others are editing does not move the figures)
 * and zod's classic package area, vendored in test/bench/data/zod. The typed files are a fixed list, chosen
 * before any result was seen: in each project, code written against its neighbours (tests beside their module,
 * modules built on imports) and code that stands alone. Each is typed from halfway in, at most TYPED_MAX_CHARS
 * characters, with the same seed in every configuration.
 *
 * Reported per project and in total: characters accepted of those written, the time the extension spends in its
 * context source per request (first build, and best of three), the characters of surrounding_context and the
 * bytes of each request against the budget, and, from the request bodies the relay received, why: whether the
 * line being written was in what was sent at all, and whether surrounding_context made the suggestion.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { join, relative } from "node:path";
import { performance } from "node:perf_hooks";
import type { TabContext } from "@tab-relay/shared";
import { parseSnippets } from "../../shared/src/protocol/snippets";
import { TypingRhythm } from "../../extension/src/core/debounce";
import { RecentFiles, changeAt } from "../../extension/src/core/recentFiles";
import type { RelatedContextSource } from "../../extension/src/core/relatedContext";
import { DEFAULT_SETTINGS } from "../../extension/src/core/settings";
import { LEGACY_BUDGET_CHARS, LegacyContext, visibleHead } from "./typingBaseline";
import { type Project, languageOf, neighboursOf, typedRange } from "./typingRepo";
import {
  type ConfigFigures,
  type ConfigName,
  type FileRun,
  type RequestSample,
  CONFIGS,
  CONFIG_DESCRIPTIONS,
  combine,
  perFileTable,
  repoGoals,
  repoTable,
  summarizeConfig,
  whyTable,
} from "./typingRepoReport";
import type { ReplayClock } from "./typingClock";
import { type Goal, goalsTable, summarizeReplay } from "./typingReport";
import { type DocumentChange, replayTyping } from "./typingRun";
import { explainRequest, lineAt } from "./typingExplain";
import { DEFAULT_TYPIST } from "./typingTypist";

/** This repository's typed files, in replay order, with why each is there. */
const THIS_REPOSITORY: readonly string[] = [
  // Stands alone; the typing bench's default file.
  "relay/src/rateLimit/memoryStore.ts",
  // Its test, written right after it.
  "relay/src/rateLimit/memoryStore.test.ts",
  // A state machine that stands alone; the typing bench's other default file.
  "extension/src/core/status.ts",
  // Stands alone.
  "extension/src/core/debounce.ts",
  // Tests beside their modules.
  "extension/src/core/tokens.test.ts",
  "extension/src/core/globs.test.ts",
  "extension/src/core/cache.test.ts",
  "shared/src/protocol/snippets.test.ts",
  // Stands alone: a parser.
  "shared/src/sse/sseDecoder.ts",
  // Built on its imports: an upstream mode, and a route over the store and the key helpers.
  "relay/src/providers/upstream/modes/infill.ts",
  "relay/src/routes/apiKeys.ts",
  // A test beside its module.
  "relay/src/providers/upstream/context.test.ts",
];

/**
 * zod's typed files: every module of the classic area that holds code of its own (not a re-exporting index),
 * then every fifth of its vendored tests in alphabetical order.
 */
const ZOD: readonly string[] = [
  ...["coerce", "errors", "parse", "compat", "in-out", "deep-partial", "from-json-schema", "schemas"].map(
    (name) => `src/v4/classic/${name}.ts`,
  ),
  ...["apply", "continuability", "file", "hash", "lazy", "pickomit", "primitive", "registries", "stringbool"].map(
    (name) => `src/v4/classic/tests/${name}.test.ts`,
  ),
];

/** Where in each file the typist starts, and how much they type at most: a bounded, comparable stretch of each. */
export const TYPED_FROM = 0.5;
export const TYPED_MAX_CHARS = 2_000;

export interface ReplayRelay {
  readonly url: string;
  readonly apiKey: string;
  readonly workspace: { readonly slug: string };
  startRun(): ReplayClock;
}

export interface RepoReplayOptions {
  readonly root: string;
  readonly relay: ReplayRelay;
  readonly seed: number;
  readonly debounceMs: number;
  /** Gaps the extension has learned, so every run starts from the same rhythm. */
  readonly learnedGaps: readonly number[];
  readonly maxChars?: number;
  readonly progress: (message: string) => void;
}

export interface ProjectFigures {
  readonly name: string;
  readonly files: number;
  readonly configs: Readonly<Record<ConfigName, ConfigFigures>>;
  readonly runs: readonly FileRun[];
}

export function loadProjects(root: string): Project[] {
  return [
    {
      name: "this repository",
      files: repositoryFiles(root),
      packages: { "@tab-relay/shared": "shared/src/index.ts" },
      typed: THIS_REPOSITORY,
    },
    {
      name: "zod (classic)",
      files: vendoredFiles(join(root, "test/bench/data/zod")),
      // zod's root entry, src/index.ts (not vendored), only re-exports src/v4/classic/external.ts.
      packages: { "zod/v4": "src/v4/index.ts", zod: "src/v4/classic/external.ts" },
      typed: ZOD,
    },
  ];
}

export async function replayProject(project: Project, options: RepoReplayOptions): Promise<ProjectFigures> {
  const runs: FileRun[] = [];
  const maxChars = options.maxChars ?? TYPED_MAX_CHARS;
  for (const config of CONFIGS) {
    // One editor per configuration: its own clock line, and (with other files) its own RecentFiles that keeps
    // what was opened and typed before, as one VS Code window does across the files of a project.
    let clock: ReplayClock | undefined;
    const files = new RecentFiles({ now: () => clock?.now() ?? 0 });
    for (const [i, path] of project.typed.entries()) {
      const text = project.files.get(path);
      if (text === undefined) throw new Error(`${project.name}: ${path} is not in the project`);
      const { start, end } = typedRange(text, TYPED_FROM, maxChars);
      const uri = fileUri(project, path);
      const neighbours = neighboursOf(project, path);
      const buildMs: number[] = [];
      const buildBestMs: number[] = [];
      const requests: RequestSample[] = [];
      clock = options.relay.startRun();
      const document = text.slice(0, start);
      const target = text.slice(0, end);
      let source: RelatedContextSource | undefined;
      let onChange: ((change: DocumentChange) => void) | undefined;
      if (config === "today") {
        const beside = neighbours.at(-1);
        const visible = beside === undefined ? [] : [visibleHead(beside, project.files.get(beside) ?? "")];
        const legacy = new LegacyContext(path, document, visible, {
          before: DEFAULT_SETTINGS.contextCharsBefore,
          after: DEFAULT_SETTINGS.contextCharsAfter,
        });
        source = legacy;
        onChange = (change) => legacy.change(change);
      } else if (config === "other files") {
        for (const neighbour of neighbours)
          files.open(
            { uri: fileUri(project, neighbour), path: neighbour, scheme: "file" },
            project.files.get(neighbour) ?? "",
          );
        files.open({ uri, path, scheme: "file" }, document);
        source = files;
        onChange = (change) => files.edit(uri, [changeAt(change.text, change.offset, change.deleted, change.inserted)]);
      }
      // The length of the document, and whether it is the file's text so far (not while a typo stands).
      let typed = document.length;
      let onCourse = true;
      const follow = (change: DocumentChange) => {
        typed = change.offset + change.inserted.length;
        onCourse =
          change.deleted === 0
            ? onCourse && target.startsWith(change.inserted, change.offset)
            : target.startsWith(change.text.slice(0, change.offset));
        onChange?.(change);
      };
      const seed = options.seed + i;
      const result = await replayTyping({
        relayUrl: options.relay.url,
        apiKey: options.relay.apiKey,
        workspaceSlug: options.relay.workspace.slug,
        clock,
        text,
        start,
        end,
        path,
        uri,
        languageId: languageOf(path),
        debounceMs: options.debounceMs,
        typist: DEFAULT_TYPIST,
        seed,
        rhythm: new TypingRhythm(options.learnedGaps),
        settings: config === "today" ? { surroundingContextChars: LEGACY_BUDGET_CHARS } : {},
        ...(source ? { relatedContext: timed(source, buildMs, buildBestMs) } : {}),
        onChange: follow,
        onRequest: (body) => {
          const context = (JSON.parse(body) as { tab_context: TabContext }).tab_context;
          const surrounding = context.surrounding_context ?? "";
          const otherFiles = parseSnippets(surrounding).some(
            (snippet) => snippet.path !== undefined && snippet.path !== path,
          );
          const at = lineAt(target, typed);
          const explanation = onCourse ? explainRequest(context, at.line, at.rest) : undefined;
          requests.push({
            contextChars: surrounding.length,
            bodyBytes: Buffer.byteLength(body),
            otherFiles,
            explanation,
          });
        },
      });
      const figures = summarizeReplay(result, { file: path, start, seed, debounceMs: options.debounceMs });
      runs.push({
        config,
        file: path,
        neighbours,
        figures,
        buildMs,
        buildBestMs,
        requests,
        budget: config === "today" ? LEGACY_BUDGET_CHARS : DEFAULT_SETTINGS.surroundingContextChars,
      });
      options.progress(
        `${project.name}, ${config}: ${path}: ${figures.chars.accepted} of ${figures.chars.typed + figures.chars.accepted} characters accepted`,
      );
    }
  }
  const configs = Object.fromEntries(
    CONFIGS.map((config) => [config, summarizeConfig(runs.filter((run) => run.config === config))]),
  ) as Record<ConfigName, ConfigFigures>;
  return { name: project.name, files: project.typed.length, configs, runs };
}

/**
 * The source, with the time of each request's call into it: all of building tab_context but slicing the document,
 * in wall-clock time, as the editor waits it. On a machine busier than it has cores that includes waiting for a
 * core, so the same call is made twice more right away and the best of the three tells the work from the wait
 * (as npm run bench:context does); the repeats find the windows already cut, so they are a little cheaper.
 * CPU time cannot tell them apart here: the process's count includes the in-process relay's worker threads.
 */
function timed(source: RelatedContextSource, first: number[], best: number[]): RelatedContextSource {
  return {
    holds: (uri) => source.holds(uri),
    relatedContext: (request) => {
      let started = performance.now();
      const context = source.relatedContext(request);
      const elapsed = performance.now() - started;
      let fastest = elapsed;
      for (let again = 0; again < 2; again++) {
        started = performance.now();
        source.relatedContext(request);
        fastest = Math.min(fastest, performance.now() - started);
      }
      first.push(elapsed);
      best.push(fastest);
      return context;
    },
  };
}

function fileUri(project: Project, path: string): string {
  return `file:///work/${project.name.replace(/\W+/g, "-")}/${path}`;
}

/** This repository's TypeScript files as committed at HEAD (one `git cat-file --batch` for all of them). */
function repositoryFiles(root: string): Map<string, string> {
  const paths = execFileSync("git", ["ls-files", "-z", "--", "*.ts"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((path) => path !== "");
  const committed = execFileSync("git", ["ls-tree", "-r", "-z", "--name-only", "HEAD"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  })
    .split("\0")
    .filter((path) => path !== "");
  const wanted = new Set(paths);
  const chosen = committed.filter((path) => wanted.has(path)).sort();
  const out = execFileSync("git", ["cat-file", "--batch"], {
    cwd: root,
    input: chosen.map((path) => `HEAD:${path}\n`).join(""),
    maxBuffer: 256 * 1024 * 1024,
  });
  const files = new Map<string, string>();
  let at = 0;
  for (const path of chosen) {
    const headerEnd = out.indexOf(10, at);
    const header = out.subarray(at, headerEnd).toString("utf8");
    const size = Number(header.split(" ")[2]);
    if (!Number.isInteger(size)) throw new Error(`git cat-file: unexpected answer for ${path}: ${header}`);
    files.set(path, out.subarray(headerEnd + 1, headerEnd + 1 + size).toString("utf8"));
    at = headerEnd + 1 + size + 1;
  }
  return files;
}

/** The vendored files, each stored as `<path>.txt`, under their own paths. */
function vendoredFiles(folder: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith(".txt"))
        files.set(relative(folder, full).slice(0, -".txt".length), readFileSync(full, "utf8"));
    }
  };
  walk(folder);
  return files;
}

export interface RepoReplayFigures {
  readonly projects: readonly ProjectFigures[];
  readonly total: Readonly<Record<ConfigName, ConfigFigures>>;
  readonly goals: readonly Goal[];
  readonly typedCorrectly: boolean;
  readonly load: { readonly cores: number; readonly atStart: number; readonly atEnd: number };
}

/** Replays every project, prints the tables and the goals, and returns the figures. */
export async function runRepositoryReplay(options: RepoReplayOptions): Promise<RepoReplayFigures> {
  const loadAtStart = loadavg()[0] ?? 0;
  const projects: ProjectFigures[] = [];
  for (const project of loadProjects(options.root)) projects.push(await replayProject(project, options));
  const runs = projects.flatMap((project) => project.runs);
  const total = Object.fromEntries(CONFIGS.map((config) => [config, combine(runs, config)])) as Record<
    ConfigName,
    ConfigFigures
  >;
  const goals = repoGoals(total);
  const typedCorrectly = CONFIGS.every((config) => total[config].typedCorrectly);
  const maxChars = options.maxChars ?? TYPED_MAX_CHARS;
  console.log(
    `\n## Repository replay: ${runs.length / CONFIGS.length} files of ${projects.length} projects, each typed from ${TYPED_FROM * 100} % of the way in, at most ${maxChars} characters, in three configurations\n`,
  );
  for (const config of CONFIGS) console.log(`- ${config}: ${CONFIG_DESCRIPTIONS[config]}`);
  console.log(`\n${repoTable(projects, total)}\n`);
  console.log(`Why, over the requests made (the engine can only repeat text it was sent):\n\n${whyTable(total)}\n`);
  for (const project of projects)
    console.log(`### ${project.name}: characters accepted per file\n\n${perFileTable(project.runs)}\n`);
  console.log(goalsTable(goals));
  const load = {
    cores: availableParallelism(),
    atStart: Math.round(loadAtStart * 100) / 100,
    atEnd: Math.round((loadavg()[0] ?? 0) * 100) / 100,
  };
  const busy = Math.max(load.atStart, load.atEnd) > load.cores;
  console.log(
    `\nload average ${load.atStart} at the start, ${load.atEnd} at the end, on ${load.cores} cores${busy ? ": busier than its cores, so wall-clock p99 includes waiting for a core" : ""}`,
  );
  if (!typedCorrectly)
    console.log("BROKEN: a repository replay did not end with the file's text; its figures are not to be trusted");
  return { projects, total, goals, typedCorrectly, load };
}
