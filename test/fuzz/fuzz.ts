// `npm run fuzz -- [--seconds N] [--seed S] [--case ID] [--concurrency C] [--default-limit-seconds N]`: the fuzz
// suite for as long as you like. The seed is printed first; `--seed S` runs the same cases again, and `--case ID`
// replays the one case a failure names. Exits 1 when anything failed.
import { parseArgs } from "node:util";
import { DEFAULT_SEED, formatFailures, formatSummary, runFuzz } from "./fuzzer";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "60" },
    seed: { type: "string", default: String(DEFAULT_SEED) },
    case: { type: "string" },
    concurrency: { type: "string", default: "6" },
    "default-limit-seconds": { type: "string" },
  },
});

function count(name: string, text: string, min: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    console.error(`--${name} must be an integer of at least ${min}, not ${JSON.stringify(text)}`);
    process.exit(2);
  }
  return value;
}

const seconds = count("seconds", values.seconds, 1);
const seed = count("seed", values.seed, 0);
// A tenth of the run, at least 5 s, goes to a relay with the default rate limits.
const defaultLimitSeconds =
  values["default-limit-seconds"] !== undefined
    ? count("default-limit-seconds", values["default-limit-seconds"], 0)
    : Math.max(5, Math.round(seconds / 10));
console.log(`fuzz seed ${seed} (replay with --seed ${seed})`);
const report = await runFuzz({
  seed,
  seconds: values.case !== undefined ? 0 : seconds,
  defaultLimitSeconds: values.case !== undefined ? 0 : defaultLimitSeconds,
  concurrency: count("concurrency", values.concurrency, 1),
  only: values.case,
  log: (line) => console.log(line),
});
console.log(formatSummary(report));
if (report.failures.size > 0) {
  console.log(formatFailures(report));
  process.exitCode = 1;
}
