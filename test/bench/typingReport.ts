/**
 * Turns a replay's records into the figures the issue asks for, and judges its two goals:
 * at most one request per typing pause, and every request made while the user kept typing aborted (or never sent).
 *
 * Terms. A *typing pause* is a pause the typist model planned (400-1500 ms at a line end or after punctuation), not
 * any gap longer than the debounce: the goal is about the person, so the pipeline must not define it. A request is
 * *made while the user kept typing* when it started in an ordinary keystroke gap; it honours the goal only if the
 * next keystroke aborted it. One that completed first means ghost text flashed up mid-word and a request was spent.
 */
import type { ReplayResult } from "./typingRun";

export interface Summary {
  readonly samples: number;
  readonly p50: number;
  readonly p90: number;
  readonly max: number;
}

export interface Goal {
  readonly description: string;
  readonly target: string;
  readonly measured: string;
  readonly pass: boolean;
}

export interface TypingFigures {
  readonly file: string;
  readonly charsInDocumentAtStart: number;
  readonly charsToType: number;
  readonly seed: number;
  readonly debounceMs: number;
  readonly typedCorrectly: boolean;
  readonly virtualSeconds: number;
  readonly skippedSeconds: number;
  readonly typingSpeedCharsPerSecond: number;
  readonly keystrokes: {
    readonly total: number;
    readonly characters: number;
    readonly typos: number;
    readonly backspaces: number;
    readonly acceptAll: number;
    readonly acceptLine: number;
  };
  readonly typingPauses: number;
  readonly requests: {
    readonly made: number;
    readonly per100Keystrokes: number;
    readonly neverSent: number;
    readonly completed: number;
    readonly aborted: number;
    readonly failed: number;
    readonly rateLimited: number;
    readonly timedOut: number;
    readonly inPauses: number;
    readonly maxPerPause: number;
    readonly madeWhileTyping: number;
    readonly abortedWhileTyping: number;
    readonly completedWhileTyping: number;
    /** In flight when the next keystroke came, yet not ended as aborted: the cancellation did not reach it. */
    readonly supersededNotAborted: number;
    readonly overlapping: number;
  };
  readonly cacheHits: number;
  readonly chars: { readonly typed: number; readonly accepted: number; readonly acceptedShare: number };
  readonly pauses: { readonly ghostFromRequest: number; readonly ghostFromCache: number; readonly noGhost: number };
  readonly pauseToGhostMs: Summary;
  readonly requestRoundTripMs: Summary;
  readonly goals: readonly Goal[];
  readonly warnings: readonly string[];
}

export function summarizeReplay(
  run: ReplayResult,
  meta: { file: string; start: number; seed: number; debounceMs: number },
): TypingFigures {
  const { actions, requests } = run;
  const count = (kind: string) => actions.filter((a) => a.kind === kind).length;
  const keystrokes = actions.length;
  const pauseIndexes = actions.flatMap((a, i) => (a.gap.kind === "pause" ? [i] : []));
  const perPause = pauseIndexes.map((i) => requests.filter((r) => r.action === i).length);
  const whileTyping = requests.filter((r) => r.gapKind === "typing");
  const outcome = (kind: string) => requests.filter((r) => r.outcome === kind).length;

  const typedChars = sumLength(actions.filter((a) => a.kind === "type"));
  const acceptedChars = sumLength(actions.filter((a) => a.kind === "acceptAll" || a.kind === "acceptLine"));
  const pauseActions = pauseIndexes.map((i) => actions[i]).filter((a) => a !== undefined);
  const fresh = pauseActions.filter((a) => a.shown !== undefined && !a.shown.fromCache);
  const typingMs = actions.reduce((total, a) => total + (a.gap.kind === "typing" ? a.gap.ms : 0), 0);
  const typingKeystrokes = actions.filter((a) => a.gap.kind === "typing").length;

  const madeWhileTyping = whileTyping.length;
  const abortedWhileTyping = whileTyping.filter((r) => r.outcome === "aborted").length;
  const maxPerPause = Math.max(0, ...perPause);
  const supersededNotAborted = requests.filter((r) => r.supersededInFlight && r.outcome !== "aborted").length;
  const goals: Goal[] = [
    {
      description: "requests per typing pause",
      target: "≤ 1",
      measured: `max ${maxPerPause} over ${pauseIndexes.length} pauses`,
      pass: maxPerPause <= 1,
    },
    {
      description: "requests made while the user kept typing are aborted (or never sent)",
      target: "all aborted",
      measured: `${abortedWhileTyping} of ${madeWhileTyping} aborted, ${madeWhileTyping - abortedWhileTyping} completed first; ${run.stats.debounceCancelled} never sent`,
      pass: abortedWhileTyping === madeWhileTyping,
    },
    {
      description: "a request in flight when the next keystroke arrives is aborted",
      target: "all",
      measured: `${supersededNotAborted} of ${requests.filter((r) => r.supersededInFlight).length} not aborted`,
      pass: supersededNotAborted === 0,
    },
  ];

  return {
    file: meta.file,
    charsInDocumentAtStart: meta.start,
    charsToType: run.target.length - meta.start,
    seed: meta.seed,
    debounceMs: meta.debounceMs,
    typedCorrectly: run.finalText === run.target,
    virtualSeconds: round(run.virtualMs / 1000, 1),
    skippedSeconds: round(run.skippedMs / 1000, 1),
    typingSpeedCharsPerSecond: round(typingKeystrokes / (typingMs / 1000), 2),
    keystrokes: {
      total: keystrokes,
      characters: count("type"),
      typos: count("typo"),
      backspaces: count("backspace"),
      acceptAll: count("acceptAll"),
      acceptLine: count("acceptLine"),
    },
    typingPauses: pauseIndexes.length,
    requests: {
      made: requests.length,
      per100Keystrokes: round((requests.length / Math.max(1, keystrokes)) * 100, 1),
      neverSent: run.stats.debounceCancelled,
      completed: outcome("ok"),
      aborted: outcome("aborted"),
      failed: outcome("failed") + outcome("unreachable"),
      rateLimited: requests.filter((r) => r.status === 429).length,
      timedOut: outcome("timeout"),
      inPauses: requests.length - madeWhileTyping,
      maxPerPause,
      madeWhileTyping,
      abortedWhileTyping,
      completedWhileTyping: whileTyping.filter((r) => r.outcome === "ok").length,
      supersededNotAborted,
      overlapping: run.overlapping,
    },
    cacheHits: run.stats.cacheHits,
    chars: {
      typed: typedChars,
      accepted: acceptedChars,
      acceptedShare: round(acceptedChars / Math.max(1, typedChars + acceptedChars), 3),
    },
    pauses: {
      ghostFromRequest: fresh.length,
      ghostFromCache: pauseActions.filter((a) => a.shown?.fromCache === true).length,
      noGhost: pauseActions.filter((a) => a.shown === undefined).length,
    },
    pauseToGhostMs: summarize(fresh.map((a) => (a.shown?.at ?? a.at) - a.at)),
    requestRoundTripMs: summarize(
      requests.flatMap((r) => (r.outcome === "ok" && r.endedAt !== undefined ? [r.endedAt - r.startedAt] : [])),
    ),
    goals,
    warnings: [...new Set(run.warnings)].slice(0, 20),
  };
}

function sumLength(items: readonly { text: string }[]): number {
  return items.reduce((total, item) => total + item.text.length, 0);
}

/** Nearest-rank percentiles; NaN when there are no samples. */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted.length === 0 ? Number.NaN : (sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1] as number);
  return { samples: sorted.length, p50: round(at(50), 1), p90: round(at(90), 1), max: round(at(100), 1) };
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

const ms = (s: Summary) => (s.samples === 0 ? "n/a" : `${s.p50} / ${s.p90} / ${s.max} ms (${s.samples})`);

/** The figures as a two-column Markdown table, one row per figure, for the terminal and the README. */
export function figuresTable(f: TypingFigures): string {
  const r = f.requests;
  const rows: [string, string][] = [
    [
      "keystrokes (typed / typos / backspaces / Tab / Accept Line)",
      `${f.keystrokes.total} (${f.keystrokes.characters} / ${f.keystrokes.typos} / ${f.keystrokes.backspaces} / ${f.keystrokes.acceptAll} / ${f.keystrokes.acceptLine})`,
    ],
    ["typing pauses", String(f.typingPauses)],
    ["requests made", String(r.made)],
    ["requests per 100 keystrokes", String(r.per100Keystrokes)],
    ["keystrokes whose request was never sent (debounce cancelled)", String(r.neverSent)],
    [
      "requests completed / aborted / failed (429) / timed out",
      `${r.completed} / ${r.aborted} / ${r.failed} (${r.rateLimited}) / ${r.timedOut}`,
    ],
    ["requests made in typing pauses (max per pause)", `${r.inPauses} (${r.maxPerPause})`],
    [
      "requests made while the user kept typing: aborted / completed first",
      `${r.madeWhileTyping}: ${r.abortedWhileTyping} / ${r.completedWhileTyping}`,
    ],
    ["cache hits (typing through)", String(f.cacheHits)],
    [
      "characters typed / accepted (share accepted)",
      `${f.chars.typed} / ${f.chars.accepted} (${(f.chars.acceptedShare * 100).toFixed(1)} %)`,
    ],
    [
      "pauses with ghost text: from a request / from the cache / none",
      `${f.pauses.ghostFromRequest} / ${f.pauses.ghostFromCache} / ${f.pauses.noGhost}`,
    ],
    ["pause to ghost text, p50 / p90 / max (samples)", ms(f.pauseToGhostMs)],
    ["relay round trip of completed requests, p50 / p90 / max", ms(f.requestRoundTripMs)],
  ];
  return markdown(["measure", "value"], rows);
}

export function goalsTable(goals: readonly Goal[]): string {
  return markdown(
    ["goal", "target", "measured", "result"],
    goals.map((g) => [g.description, g.target, g.measured, g.pass ? "PASS" : "**FAIL**"]),
  );
}

/** One row per run: what the debounce changes, side by side. */
export function sweepTable(runs: readonly TypingFigures[]): string {
  return markdown(
    [
      "file",
      "debounce",
      "requests / 100 keystrokes",
      "made mid-typing: aborted / completed",
      "cache hits",
      "chars accepted",
      "pause to ghost p50 / p90",
      "goals",
    ],
    runs.map((f) => [
      f.file,
      `${f.debounceMs} ms`,
      String(f.requests.per100Keystrokes),
      `${f.requests.madeWhileTyping}: ${f.requests.abortedWhileTyping} / ${f.requests.completedWhileTyping}`,
      String(f.cacheHits),
      `${f.chars.accepted} of ${f.chars.typed + f.chars.accepted}`,
      f.pauseToGhostMs.samples === 0 ? "n/a" : `${f.pauseToGhostMs.p50} / ${f.pauseToGhostMs.p90} ms`,
      f.goals.every((g) => g.pass) ? "PASS" : `**FAIL** (${f.goals.filter((g) => !g.pass).length})`,
    ]),
  );
}

function markdown(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [line(columns), line(columns.map(() => "---")), ...rows.map(line)].join("\n");
}
