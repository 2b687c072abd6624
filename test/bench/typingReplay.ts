/**
 * `npm run bench:typing`: types real source files keystroke by keystroke at a human pace through the extension's
 * core pipeline against a real relay (in-process, real HTTP), and reports requests per 100 keystrokes, cache hits,
 * characters accepted vs. typed, pause-to-ghost-text time, and PASS/FAIL for the goals. Figures also go to
 * test-output/bench/typing.json. Exits 0 whether goals pass or not (it is a measurement), 1 when a replay broke.
 *
 * Time: the typing runs on a ReplayClock (see typingClock.ts), which skips idle time but runs in real time while a
 * request is in flight. So minutes of typing replay in seconds, the debounce and the typist's schedule are exact and
 * seeded, and the network is the real thing: a keystroke that arrives before the relay answered aborts a real
 * request, and pause-to-ghost times are the debounce plus a round trip measured on the wire. Where the relay answers
 * in about the time the typist takes anyway, a real race decides, so counts can differ by a few between runs.
 *
 * Three parts: the local engine at the extension's default debounce (the figures the goals are judged on); the same
 * typing at longer debounces, for the trade-off; and a slow model (the relay's OpenAI provider against a stand-in
 * that answers after SLOW_MODEL_MS), where requests are still in flight when the typist goes on, so the aborts
 * are exercised end to end.
 *
 * Then the repository replay (typingRepoReplay.ts): real files of this repository and of zod typed with their
 * neighbours open, each with what the extension sent before issue 12, with no code from other files, and with it.
 *
 * Flags: --file <path> (repeatable; default: the files below), --from <0..1> (share of the file already in the
 * document; default 0.5), --chars <n> (type at most this many characters; in the repository replay, per file),
 * --seed <n>, --debounce <ms> (default: the extension's setting), --quick (local engine at the given debounce only),
 * --repo (the repository replay only).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { DEFAULT_SETTINGS } from "../../extension/src/core/settings";
import { TypingRhythm } from "../../extension/src/core/debounce";
import { systemClock } from "../../relay/src/clock";
import { startTestRelay } from "../support/relayHarness";
import { startUpstreamStandIn } from "../support/upstreamStandIn";
import { ReplayClock } from "./typingClock";
import { type TypingFigures, figuresTable, goalsTable, summarizeReplay, sweepTable } from "./typingReport";
import { type RepoReplayFigures, runRepositoryReplay } from "./typingRepoReplay";
import { replayTyping } from "./typingRun";
import { DEFAULT_TYPIST } from "./typingTypist";

/**
 * Files typed by default: the one the issue names, and a larger one with the repetition real code has (similar
 * cases in a switch), which is what the local engine predicts from. Each starts half-written: the typist writes
 * the second half, so the engine has the first half to draw on, as when extending a file.
 */
const DEFAULT_FILES = ["relay/src/rateLimit/memoryStore.ts", "extension/src/core/status.ts"];
/**
 * Debounce values compared after the main run. The typist's keystroke gaps reach 165 ms, so this shows what a
 * longer wait buys (fewer requests made mid-word) and what it costs (later ghost text at every pause).
 */
const SWEEP_MS = [160, 200];
/** A hosted model's time to first token is a few hundred milliseconds. */
const SLOW_MODEL_MS = 300;

const root = fileURLToPath(new URL("../..", import.meta.url));
const { values } = parseArgs({
  options: {
    file: { type: "string", multiple: true },
    from: { type: "string", default: "0.5" },
    chars: { type: "string" },
    seed: { type: "string", default: "1" },
    debounce: { type: "string" },
    quick: { type: "boolean", default: false },
    repo: { type: "boolean", default: false },
  },
  strict: true,
});
const from = Number(values.from);
const seed = Number(values.seed);
const maxChars = values.chars === undefined ? Number.POSITIVE_INFINITY : Number(values.chars);
const debounceMs = values.debounce === undefined ? DEFAULT_SETTINGS.debounceMs : Number(values.debounce);
if (!(from >= 0 && from < 1) || !Number.isInteger(seed) || !(debounceMs >= 0) || !(maxChars > 0)) {
  console.error(
    "usage: bench:typing [--file path]... [--from 0..1] [--chars n] [--seed n] [--debounce ms] [--quick | --repo]",
  );
  process.exit(2);
}
const files = values.file ?? DEFAULT_FILES;
const sweep = values.quick ? [] : SWEEP_MS.filter((ms) => ms !== debounceMs);

const begun = performance.now();
const progress = (message: string) =>
  console.log(`[typing ${((performance.now() - begun) / 1000).toFixed(1).padStart(5)} s] ${message}`);

interface SlowModelFigures extends TypingFigures {
  readonly upstream: { readonly delayMs: number; readonly requests: number; readonly abandoned: number };
}
const runs: TypingFigures[] = [];
let slow: SlowModelFigures | undefined;

// One typist, one editor: the rhythm the extension learns (and remembers across restarts) carries over from
// the warm-up to every replay, as it does from file to file in one VS Code.
const rhythm = new TypingRhythm();
let repository: RepoReplayFigures | undefined;
const local = await startRelayOnReplayTime();
try {
  // A short unrecorded replay first, so compiling the relay's and the pipeline's hot paths is not in the figures.
  await typeFile(local, files[0] ?? "", seed - 1, debounceMs, 300);
  progress("warmed up");
  for (const ms of values.repo ? [] : [debounceMs, ...sweep]) {
    for (const [i, file] of files.entries()) {
      const figures = await typeFile(local, file, seed + i, ms);
      runs.push(figures);
      progress(`${file}, debounce ${ms} ms: ${figures.keystrokes.total} keystrokes, ${figures.requests.made} requests`);
      if (ms === debounceMs) printRun(`${file}, local engine`, figures);
    }
  }
  if (values.repo || !values.quick) {
    repository = await runRepositoryReplay({
      root,
      relay: local,
      seed,
      debounceMs,
      learnedGaps: rhythm.learned(),
      ...(values.chars === undefined ? {} : { maxChars }),
      progress,
    });
  }
} finally {
  await local.close();
}
if (sweep.length > 0 && !values.repo)
  console.log(`\n## The same typing at other debounce values\n\n${sweepTable(runs)}`);
if (!values.quick && !values.repo) slow = await slowModelRun(files[0] ?? "");

const judged = [...runs.filter((run) => run.debounceMs === debounceMs), ...(slow ? [slow] : [])];
const failed = [
  ...judged.flatMap((run) =>
    run.goals
      .filter((goal) => !goal.pass)
      .map((goal) => `${run.file}${run === slow ? " (slow model)" : ""}: ${goal.description} (${goal.measured})`),
  ),
  ...(repository?.goals ?? [])
    .filter((goal) => !goal.pass)
    .map((goal) => `repository replay: ${goal.description} (${goal.measured})`),
];
const broken =
  [...runs, ...(slow ? [slow] : [])].some((run) => !run.typedCorrectly) || repository?.typedCorrectly === false;
const realSeconds = Math.round((performance.now() - begun) / 100) / 10;
const out = join(root, "test-output/bench/typing.json");
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify({ node: process.version, realSeconds, typist: DEFAULT_TYPIST, debounceMs, runs, slowModel: slow, repository }, null, 2)}\n`,
);
console.log(`\nreplayed in ${realSeconds} s of real time; figures in ${out}`);
if (failed.length > 0) {
  const rule = "=".repeat(72);
  console.log(
    `\n${rule}\nFAIL at debounce ${debounceMs} ms: ${failed.length} goal(s) not met\n${failed.map((line) => `  - ${line}`).join("\n")}\n${rule}`,
  );
} else console.log(`\nPASS at debounce ${debounceMs} ms: all goals met`);
if (broken) console.log("BROKEN: a replay did not end with the file's text; its figures are not to be trusted");
process.exit(broken ? 1 : 0);

type Relay = Awaited<ReturnType<typeof startRelayOnReplayTime>>;

async function typeFile(
  relay: Relay,
  file: string,
  runSeed: number,
  ms: number,
  chars = maxChars,
): Promise<TypingFigures> {
  const text = readFileSync(join(root, file), "utf8");
  const start = lineStart(text, Math.floor(text.length * from));
  const end = lineEnd(text, Math.min(text.length, start + chars));
  const result = await replayTyping({
    relayUrl: relay.url,
    apiKey: relay.apiKey,
    workspaceSlug: relay.workspace.slug,
    clock: relay.startRun(),
    text,
    start,
    end,
    path: file,
    languageId: languageOf(file),
    debounceMs: ms,
    typist: DEFAULT_TYPIST,
    seed: runSeed,
    rhythm,
  });
  return summarizeReplay(result, { file, start, seed: runSeed, debounceMs: ms });
}

/** The relay forwards to a model that takes SLOW_MODEL_MS to answer; its suggestions are fixed text, never taken. */
async function slowModelRun(file: string): Promise<SlowModelFigures> {
  const upstream = await startUpstreamStandIn({
    behaviour: { kind: "reply", text: "/* stand-in */", headersDelayMs: SLOW_MODEL_MS },
  });
  const relay = await startRelayOnReplayTime({
    TAB_RELAY_UPSTREAM_URL: upstream.url,
    TAB_RELAY_UPSTREAM_MODEL: "stand-in-model",
  });
  try {
    const figures = await typeFile(relay, file, seed, debounceMs);
    // Counted on the model's side: requests it received, and those whose client (the relay) went away mid-answer.
    // Every one it answered in full should have been a request the typist waited for.
    const requests = upstream.requests.length;
    const abandoned = upstream.clientDisconnects();
    const answeredForNobody = Math.max(0, requests - abandoned - figures.requests.completed);
    const result: SlowModelFigures = {
      ...figures,
      upstream: { delayMs: SLOW_MODEL_MS, requests, abandoned },
      goals: [
        ...figures.goals,
        {
          description: "a request aborted by typing is abandoned at the model too",
          target: "0 answered for nobody",
          measured: `model received ${requests}, ${abandoned} abandoned, ${requests - abandoned} answered for ${figures.requests.completed} completed requests`,
          pass: answeredForNobody === 0,
        },
      ],
    };
    progress(`${file}, slow model: ${figures.keystrokes.total} keystrokes, ${figures.requests.made} requests`);
    printRun(`${file}, a model that answers after ${SLOW_MODEL_MS} ms`, result);
    return result;
  } finally {
    await relay.close();
    await upstream.close();
  }
}

function printRun(title: string, figures: TypingFigures): void {
  console.log(
    `\n## ${title}: ${figures.charsToType} characters typed after ${figures.charsInDocumentAtStart} already there (seed ${figures.seed})\n`,
  );
  console.log(
    `${figures.virtualSeconds} s of typing, ${figures.typingSpeedCharsPerSecond} keystrokes/s between pauses, debounce ${figures.debounceMs} ms\n`,
  );
  console.log(figuresTable(figures));
  console.log(`\n${goalsTable(figures.goals)}`);
  for (const warning of figures.warnings) console.log(`warning: ${warning}`);
  if (!figures.typedCorrectly) console.log("BROKEN: the document at the end is not the file's text");
}

/**
 * A relay whose clock is the current run's ReplayClock, so its fixed-window rate limits count requests per minute
 * of typing, not per second of replay.
 */
async function startRelayOnReplayTime(env: Record<string, string> = {}) {
  let clock = new ReplayClock(Date.now());
  const started = await startTestRelay({ env, clock: { ...systemClock, now: () => clock.now() } });
  return {
    ...started,
    startRun(): ReplayClock {
      // Each run starts where the last one's time ended, so time never goes backwards for the relay.
      clock = new ReplayClock(clock.now());
      return clock;
    },
  };
}

function lineStart(text: string, at: number): number {
  const newline = text.lastIndexOf("\n", at - 1);
  return newline === -1 ? 0 : newline + 1;
}

function lineEnd(text: string, at: number): number {
  if (at >= text.length) return text.length;
  const newline = text.indexOf("\n", at);
  return newline === -1 ? text.length : newline + 1;
}

function languageOf(file: string): string {
  if (/\.tsx?$/.test(file)) return "typescript";
  if (/\.[cm]?js$/.test(file)) return "javascript";
  if (file.endsWith(".md")) return "markdown";
  return "plaintext";
}
