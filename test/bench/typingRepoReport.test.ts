import assert from "node:assert/strict";
import { test } from "node:test";
import type { RequestExplanation } from "./typingExplain";
import { type ConfigName, type FileRun, acceptedRatio, combine, repoGoals, summarizeConfig } from "./typingRepoReport";
import type { TypingFigures } from "./typingReport";

const summary = { samples: 0, p50: Number.NaN, p90: Number.NaN, max: Number.NaN };

function figures(
  typed: number,
  accepted: number,
  taken: number,
  requests: number,
  typedCorrectly = true,
): TypingFigures {
  return {
    file: "f.ts",
    charsInDocumentAtStart: 0,
    charsToType: typed + accepted,
    seed: 1,
    debounceMs: 120,
    typedCorrectly,
    virtualSeconds: 1,
    skippedSeconds: 0,
    typingSpeedCharsPerSecond: 8,
    keystrokes: { total: typed + taken, characters: typed, typos: 0, backspaces: 0, acceptAll: taken, acceptLine: 0 },
    typingPauses: requests,
    requests: {
      made: requests,
      per100Keystrokes: 0,
      neverSent: 0,
      completed: requests,
      aborted: 0,
      failed: 0,
      rateLimited: 0,
      timedOut: 0,
      inPauses: requests,
      maxPerPause: 1,
      madeWhileTyping: 0,
      abortedWhileTyping: 0,
      completedWhileTyping: 0,
      supersededNotAborted: 0,
      overlapping: 0,
    },
    cacheHits: 0,
    chars: { typed, accepted, acceptedShare: accepted / (typed + accepted) },
    pauses: { ghostFromRequest: 0, ghostFromCache: 0, noGhost: 0 },
    pauseToGhostMs: summary,
    requestRoundTripMs: summary,
    goals: [],
    warnings: [],
  };
}

const explained = (
  line: RequestExplanation["line"],
  source: RequestExplanation["source"],
  rightLine = false,
): RequestExplanation => ({ line, source, rightLine });

function run(
  config: ConfigName,
  accepted: number,
  options: { buildMs?: number[]; contextChars?: number[]; budget?: number; explanations?: RequestExplanation[] } = {},
): FileRun {
  const contextChars = options.contextChars ?? [100, 200];
  return {
    config,
    file: "f.ts",
    neighbours: [],
    figures: figures(1_000 - accepted, accepted, accepted > 0 ? 1 : 0, contextChars.length),
    buildMs: (options.buildMs ?? []).map((ms) => ms * 10),
    buildBestMs: options.buildMs ?? [],
    requests: contextChars.map((chars, i) => ({
      contextChars: chars,
      bodyBytes: chars + 1_000,
      otherFiles: config === "other files",
      explanation: options.explanations?.[i],
    })),
    budget: options.budget ?? (config === "today" ? 500 : 6_000),
  };
}

test("a configuration's figures add up its files: characters, requests, bytes and what was over the budget", () => {
  const f = summarizeConfig([
    run("today", 30, { contextChars: [500, 400] }),
    run("today", 10, { contextChars: [501, 100] }),
  ]);
  assert.equal(f.files, 2);
  assert.equal(f.accepted, 40);
  assert.equal(f.typed, 1_960);
  assert.equal(f.acceptedShare, 0.02);
  assert.equal(f.requests, 4);
  assert.equal(f.suggestionsTaken, 2);
  assert.deepEqual(f.contextChars, { samples: 4, p50: 400, p99: 501, max: 501 });
  assert.equal(f.overBudget, 1);
  assert.equal(f.budget, 500);
  assert.equal(f.typedCorrectly, true);
});

test("the why counts are over the requests explained, by where the line was and where the suggestion came from", () => {
  const f = summarizeConfig([
    run("other files", 5, {
      contextChars: [1, 2, 3, 4],
      explanations: [
        explained("before the cursor", "from the document around the cursor", true),
        explained("only in surrounding_context", "from surrounding_context", true),
        explained("nowhere sent", "from surrounding_context"),
      ],
    }),
  ]);
  assert.equal(f.why.explained, 3, "a request sent while a typo stood is not explained");
  assert.deepEqual(f.why.line, {
    "before the cursor": 1,
    "only in surrounding_context": 1,
    "nowhere sent": 1,
    "too short": 0,
  });
  assert.deepEqual(f.why.source, { none: 0, "from the document around the cursor": 1, "from surrounding_context": 2 });
  assert.deepEqual(f.why.rightLine, {
    none: 0,
    "from the document around the cursor": 1,
    "from surrounding_context": 1,
  });
});

test("the ratio is (c) over (a) in characters accepted", () => {
  const today = summarizeConfig([run("today", 100)]);
  assert.equal(acceptedRatio(today, summarizeConfig([run("other files", 300)])), 3);
  assert.equal(acceptedRatio(today, summarizeConfig([run("other files", 150)])), 1.5);
  assert.equal(
    acceptedRatio(summarizeConfig([run("today", 0)]), summarizeConfig([run("other files", 10)])),
    Number.POSITIVE_INFINITY,
  );
});

test("the goals pass only at 3×, with (c)'s best-of-three builds under 5 ms at p99, and nothing over its budget", () => {
  const fast = Array.from({ length: 100 }, () => 0.5);
  const totals = (other: number, buildMs: number[], overChars = 6_000) => {
    const runs = [
      run("today", 100),
      run("own file", 120),
      run("other files", other, { buildMs, contextChars: [overChars] }),
    ];
    return {
      today: combine(runs, "today"),
      "own file": combine(runs, "own file"),
      "other files": combine(runs, "other files"),
    };
  };
  assert.deepEqual(
    repoGoals(totals(300, fast)).map((goal) => goal.pass),
    [true, true, true],
  );
  assert.deepEqual(
    repoGoals(totals(299, fast)).map((goal) => goal.pass),
    [false, true, true],
  );
  assert.deepEqual(
    repoGoals(totals(300, [...fast.slice(2), 6, 7])).map((goal) => goal.pass),
    [true, false, true],
  );
  assert.deepEqual(
    repoGoals(totals(300, fast, 6_001)).map((goal) => goal.pass),
    [true, true, false],
  );
  assert.equal(repoGoals(totals(300, []))[1]?.pass, false, "no build measured is no pass");
});
