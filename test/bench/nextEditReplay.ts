/**
 * npm run bench:next-edits [-- --commits n] [-- --json]: the local engine's next edits replayed over this
 * repository's own history (nextEditReplayRun.ts). Prints precision (the share of proposals that match what the
 * commit really did), recall per kind (rename, argument, literal) over the changes whose next change repeated
 * them, and the engine's latency against reading the request into lines in the same run. A terminal gets
 * readable lines, a pipe (or --json) gets JSON; progress goes to stderr.
 */
import { execFileSync } from "node:child_process";
import type { PropagationKind } from "../../relay/src/nextEdits/localEngine";
import { type ReplayEvent, parseHunks, replayFile } from "./nextEditReplayRun";
import { round, summarize } from "./stats";

const args = process.argv.slice(2);
const limitAt = args.indexOf("--commits");
const limit = limitAt >= 0 ? Number(args[limitAt + 1]) : Number.POSITIVE_INFINITY;
const asJson = args.includes("--json") || !process.stdout.isTTY;
const CODE = ["*.ts", "*.tsx", "*.js", "*.mjs", "*.cjs"];

function git(...argv: string[]): string {
  return execFileSync("git", argv, {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    stdio: ["ignore", "pipe", "ignore"],
  });
}

/** The contents of each `rev:path`, in order, from one `git cat-file --batch`; undefined where one is missing. */
function catFiles(specs: readonly string[]): (string | undefined)[] {
  const out = execFileSync("git", ["cat-file", "--batch"], {
    input: `${specs.join("\n")}\n`,
    maxBuffer: 1024 * 1024 * 1024,
    stdio: ["pipe", "pipe", "ignore"],
  });
  const files: (string | undefined)[] = [];
  let at = 0;
  while (at < out.length && files.length < specs.length) {
    const lineEnd = out.indexOf(10, at);
    const header = out.subarray(at, lineEnd).toString("utf8");
    at = lineEnd + 1;
    const size = /^\S+ blob (\d+)$/.exec(header)?.[1];
    if (size === undefined) {
      files.push(undefined);
      continue;
    }
    files.push(out.subarray(at, at + Number(size)).toString("utf8"));
    at += Number(size) + 1;
  }
  return files;
}

const commits = git("rev-list", "--no-merges", "HEAD")
  .split("\n")
  .filter((sha) => sha !== "")
  .slice(0, limit);
const events: ReplayEvent[] = [];
let files = 0;
const started = performance.now();
for (const [index, sha] of commits.entries()) {
  if (!asJson || process.stderr.isTTY)
    process.stderr.write(`\rcommit ${index + 1}/${commits.length}, ${events.length} edits replayed`);
  let diff: string;
  try {
    diff = git("diff", "-U0", "--no-color", "--no-renames", "--no-ext-diff", `${sha}^`, sha, "--", ...CODE);
  } catch {
    continue; // the root commit has no parent
  }
  const wanted: { path: string; changes: ReturnType<typeof parseHunks> }[] = [];
  for (const section of diff.split(/^diff --git /m).slice(1)) {
    if (/^(new|deleted) file mode/m.test(section) || section.includes("Binary files")) continue;
    const path = /^\+\+\+ b\/(.+)$/m.exec(section)?.[1];
    if (!path) continue;
    const changes = parseHunks(section);
    if (changes.length >= 2) wanted.push({ path, changes });
  }
  if (wanted.length === 0) continue;
  // Both versions of every file in one git call.
  const blobs = catFiles(wanted.flatMap(({ path }) => [`${sha}^:${path}`, `${sha}:${path}`]));
  wanted.forEach(({ path, changes }, i) => {
    const oldFile = blobs[2 * i];
    const newFile = blobs[2 * i + 1];
    if (oldFile === undefined || newFile === undefined) return;
    files++;
    events.push(...replayFile(path, oldFile.split("\n"), newFile.split("\n"), changes));
  });
}
if (!asJson || process.stderr.isTTY) process.stderr.write("\n");

const KINDS: PropagationKind[] = ["rename", "argument", "literal"];
const proposals = events.filter((e) => e.proposed);
const right = proposals.filter((e) => e.right);
const perKind = Object.fromEntries(
  KINDS.map((kind) => {
    const proposed = proposals.filter((e) => e.kind === kind);
    const opportunities = events.filter((e) => e.opportunity === kind);
    const found = opportunities.filter((e) => e.proposed && e.right && e.kind === kind);
    return [
      kind,
      {
        proposed: proposed.length,
        right: proposed.filter((e) => e.right).length,
        opportunities: opportunities.length,
        recall: opportunities.length === 0 ? null : round(found.length / opportunities.length),
      },
    ];
  }),
);
const engine = summarize(events.map((e) => e.engineMs));
const baseline = summarize(events.map((e) => e.parseMs));
const report = {
  commits: commits.length,
  files,
  edits: events.length,
  proposals: proposals.length,
  right: right.length,
  precision: proposals.length === 0 ? null : round(right.length / proposals.length),
  next_precision: proposals.length === 0 ? null : round(proposals.filter((e) => e.next).length / proposals.length),
  kinds: perKind,
  engine_ms: { p50: round(engine.p50, 4), p99: round(engine.p99, 4), max: round(engine.max, 3) },
  baseline_ms: { p50: round(baseline.p50, 4), p99: round(baseline.p99, 4) },
  engine_over_baseline_p50: round(engine.p50 / baseline.p50, 2),
  seconds: round((performance.now() - started) / 1000, 1),
};
if (args.includes("--explain"))
  for (const e of proposals) process.stderr.write(`${e.right ? "RIGHT" : "WRONG"} ${e.kind} ${e.detail ?? ""}\n`);
if (asJson) {
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} else {
  console.log(
    `${report.commits} commits, ${report.files} files, ${report.edits} edits replayed in ${report.seconds} s`,
  );
  console.log(
    `proposals ${report.proposals}, right ${report.right}: precision ${report.precision} (next change: ${report.next_precision})`,
  );
  for (const kind of KINDS) {
    const k = perKind[kind] as { proposed: number; right: number; opportunities: number; recall: number | null };
    console.log(
      `  ${kind}: proposed ${k.proposed}, right ${k.right}; recall ${k.recall} over ${k.opportunities} repeated changes`,
    );
  }
  console.log(
    `engine p50 ${report.engine_ms.p50} ms, p99 ${report.engine_ms.p99} ms (${report.engine_over_baseline_p50}x reading the request into lines)`,
  );
}
