import { TAB_LIMITS } from "@tab-relay/shared";
import type { BenchContext, BenchSection, SectionReport } from "./sections";
import { formatMs, round } from "./stats";

const GOAL_P99_MS = 5;

export const localEngineSection: BenchSection = {
  id: "local-engine",
  title: "Local engine (no upstream) at full context size",
  async run(context: BenchContext): Promise<SectionReport> {
    const sizes = `${TAB_LIMITS.activeTextBeforeCursor} / ${TAB_LIMITS.activeTextAfterCursor} / ${TAB_LIMITS.surroundingContext}`;
    const samples = context.quick ? 500 : 2_000;
    context.progress(
      `local engine + postprocessor: ${samples} cursors, ${sizes} characters before / after / around the cursor`,
    );
    // Loaded here, so a broken engine module costs this section only, not the whole run.
    const { benchLocalEngine } = await import("../../relay/bench/localEngine");
    const result = await benchLocalEngine({ samples });
    context.progress(
      `  p50 ${formatMs(result.p50Ms)} ms, p99 ${formatMs(result.p99Ms)} ms, max ${formatMs(result.maxMs)} ms, ${(result.nonEmptyRate * 100).toFixed(0)}% non-empty`,
    );
    return {
      tables: [
        {
          caption: "Local engine prediction time at full context size",
          columns: [
            "Context chars (before / after / surrounding)",
            "p50 (ms)",
            "p99 (ms)",
            "max (ms)",
            "Cursors",
            "Non-empty",
          ],
          rows: [
            [
              sizes,
              formatMs(result.p50Ms),
              formatMs(result.p99Ms),
              formatMs(result.maxMs),
              String(result.samples),
              `${(result.nonEmptyRate * 100).toFixed(0)}%`,
            ],
          ],
        },
      ],
      goals: [
        {
          description: "Local engine p99 at full context",
          target: `< ${GOAL_P99_MS} ms`,
          measured: `${formatMs(result.p99Ms)} ms`,
          pass: result.p99Ms < GOAL_P99_MS,
        },
      ],
      notes: [
        "Engine plus postprocessor, in the benchmark's own process after every server has stopped (relay/bench/localEngine.ts).",
      ],
      data: {
        contextChars: {
          before: TAB_LIMITS.activeTextBeforeCursor,
          after: TAB_LIMITS.activeTextAfterCursor,
          surrounding: TAB_LIMITS.surroundingContext,
        },
        p50Ms: round(result.p50Ms),
        p99Ms: round(result.p99Ms),
        maxMs: round(result.maxMs),
        samples: result.samples,
        nonEmptyRate: round(result.nonEmptyRate),
      },
    };
  },
};
