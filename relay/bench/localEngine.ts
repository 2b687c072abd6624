// Micro-benchmark of the built-in `local` provider plus the postprocessor at full context size
// (16,384 chars before the cursor, 16,384 after, 32,768 of surrounding context), over varied cursor positions
// in real TypeScript source. Run: npx tsx relay/bench/localEngine.ts [samples]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { TAB_LIMITS, type TabContext } from "@tab-relay/shared";
import { createPostprocessor } from "../src/completion/postprocess";
import { countTokens as countGptTokens } from "../src/completion/tokens";
import { createLocalProvider } from "../src/providers/local";

export interface LocalEngineBenchOptions {
  /** Measured calls (after a short warm-up). Default 2000. */
  samples?: number;
  /** Output budget per call. Default the API maximum, 500. */
  maxTokens?: number;
  /** Token counter handed to the postprocessor. Default the relay's (o200k BPE). */
  countTokens?: (text: string) => number;
}

export interface LocalEngineBenchResult {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  samples: number;
  /** The same in CPU time of this process, which other load on the machine does not inflate. */
  cpuP50Ms: number;
  cpuP99Ms: number;
  /** Share of calls that produced a non-empty suggestion, to show the engine did real work. */
  nonEmptyRate: number;
}

const SURFACES = ["code", "code", "code", "notes", "messages", "docs"] as const;
const WARM_UP = 50;

/** Real declarations source long enough for full-size, non-overlapping windows around each cursor. */
function loadSource(): string {
  const require = createRequire(import.meta.url);
  const files = [
    "typescript/lib/lib.es5.d.ts",
    "typescript/lib/lib.es2015.core.d.ts",
    "typescript/lib/lib.es2015.promise.d.ts",
  ];
  return files.map((file) => readFileSync(require.resolve(file), "utf8")).join("\n");
}

function contextAt(source: string, index: number): TabContext {
  const before = TAB_LIMITS.activeTextBeforeCursor;
  const after = TAB_LIMITS.activeTextAfterCursor;
  const surrounding = TAB_LIMITS.surroundingContext;
  const span = before + after + surrounding;
  // Spread cursors over the source with a stride coprime to its length, so neighbouring samples differ.
  const cursor = before + ((index * 7_919) % (source.length - span));
  const surroundingStart = (cursor + after + index * 104_729) % (source.length - surrounding);
  const surface = SURFACES[index % SURFACES.length] ?? "code";
  return {
    surface,
    workspace_slug: "bench",
    entity_id: `file-${index}`,
    document_type: "plaintext",
    active_text_before_cursor: source.slice(cursor - before, cursor),
    active_text_after_cursor: source.slice(cursor, cursor + after),
    surrounding_context: source.slice(surroundingStart, surroundingStart + surrounding),
  };
}

async function completeOnce(
  context: TabContext,
  maxTokens: number,
  countTokens: (text: string) => number,
): Promise<string> {
  const provider = createLocalProvider();
  const post = createPostprocessor({ context, maxTokens, countTokens });
  const controller = new AbortController();
  let text = "";
  await provider.complete({ context, maxTokens, temperature: 0.2 }, controller.signal, (fragment) => {
    text += post.push(fragment);
    return post.done ? false : undefined;
  });
  return text + post.end();
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
}

export async function benchLocalEngine(options: LocalEngineBenchOptions = {}): Promise<LocalEngineBenchResult> {
  const samples = options.samples ?? 2_000;
  const maxTokens = options.maxTokens ?? TAB_LIMITS.maxCompletionTokens;
  const countTokens = options.countTokens ?? countGptTokens;
  const source = loadSource();

  for (let index = 0; index < WARM_UP; index++)
    await completeOnce(contextAt(source, samples + index), maxTokens, countTokens);

  const times: number[] = [];
  const cpuTimes: number[] = [];
  let nonEmpty = 0;
  for (let index = 0; index < samples; index++) {
    const context = contextAt(source, index);
    const cpuStarted = process.cpuUsage();
    const started = performance.now();
    const text = await completeOnce(context, maxTokens, countTokens);
    times.push(performance.now() - started);
    const cpu = process.cpuUsage(cpuStarted);
    cpuTimes.push((cpu.user + cpu.system) / 1_000);
    if (text !== "") nonEmpty++;
  }
  times.sort((a, b) => a - b);
  cpuTimes.sort((a, b) => a - b);
  return {
    p50Ms: percentile(times, 0.5),
    p99Ms: percentile(times, 0.99),
    maxMs: times[times.length - 1] ?? Number.NaN,
    samples,
    cpuP50Ms: percentile(cpuTimes, 0.5),
    cpuP99Ms: percentile(cpuTimes, 0.99),
    nonEmptyRate: samples === 0 ? 0 : nonEmpty / samples,
  };
}

const invokedDirectly = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  const samples = process.argv[2] === undefined ? undefined : Number(process.argv[2]);
  const result = await benchLocalEngine(samples === undefined ? {} : { samples });
  const ms = (value: number) => `${value.toFixed(3)} ms`;
  console.log(
    `local engine + postprocessor, full-size context, ${result.samples} cursors: ` +
      `p50 ${ms(result.p50Ms)}, p99 ${ms(result.p99Ms)}, max ${ms(result.maxMs)} ` +
      `(CPU p50 ${ms(result.cpuP50Ms)}, p99 ${ms(result.cpuP99Ms)}), non-empty ${(result.nonEmptyRate * 100).toFixed(1)}%`,
  );
}
