/**
 * `tab-relay doctor --model NAME|FILE`: loads the model into the embedded engine the way `start --model` does (its
 * own supervised child process, the same settings), then reports the llama.cpp build in use, the FIM tokens the
 * prompt is built from, and one timed completion. Nothing is downloaded: a registry name must already be in
 * DATA/models, and the engine already installed.
 */
import { resolve } from "node:path";
import type { Clock } from "../clock";
import type { EngineConfig } from "../config";
import { EngineLoadError, type ForkChild, createEngine } from "../engine/engine";
import { NODE_LLAMA_CPP_VERSION, engineInstalled, engineModuleUrl, notInstalledMessage } from "../engine/install";
import { type ModelEntry, findModel, listModels } from "../engine/models";
import type { CompletionStats, EngineInfo } from "../engine/protocol";
import { silentLogger } from "../logger";
import type { CheckResult, CheckStatus, DoctorCheck } from "./checks";

export interface EngineCheckDeps {
  engine: Readonly<EngineConfig>;
  dataDir: string;
  registry: readonly ModelEntry[];
  fork: ForkChild;
  clock: Clock;
  /** How long the one completion may take (a large model on a slow CPU needs a while). */
  completionTimeoutMs?: number;
}

const NAME = "engine";
/** A cursor inside a function body: any FIM code model has something to say here. */
const SAMPLE = { before: "function add(a, b) {\n  return", after: "\n}\n" };
const MAX_TOKENS = 16;
const SAMPLE_NOTE = `the model's raw text at the cursor in "function add(a, b) {⏎  return|⏎}", before the relay's postprocessing`;

/** The model's file: a registry name already pulled, or a path; undefined with the reason when there is none. */
async function modelFile(
  spec: string,
  dataDir: string,
  registry: readonly ModelEntry[],
): Promise<{ path: string } | { problem: string }> {
  const entry = findModel(registry, spec.trim());
  if (entry === undefined) return { path: resolve(spec) };
  const listed = (await listModels(dataDir, [entry]))[0]!;
  if (listed.state.kind === "present") return { path: listed.path };
  return {
    problem: `${entry.name} is not downloaded into ${resolve(dataDir, "models")}${listed.state.kind === "partial" ? " (a partial download is there)" : ""}: run \`tab-relay models pull ${entry.name}\` first (doctor downloads nothing)`,
  };
}

function fimLine(fim: EngineInfo["fim"]): string {
  if (fim.template !== undefined) return `FIM template (TAB_RELAY_FIM_TEMPLATE): ${fim.template}`;
  const parts = [`prefix ${fim.prefix}`, `suffix ${fim.suffix}`, `middle ${fim.middle}`];
  if (fim.fileSeparator) parts.push(`file separator ${fim.fileSeparator}`);
  if (fim.repoName) parts.push(`repository name ${fim.repoName}`);
  return `FIM tokens (GGUF metadata): ${parts.join(", ")}`;
}

export function engineCheck(deps: EngineCheckDeps): DoctorCheck {
  const spec = deps.engine.model;
  const result = (status: CheckStatus, summary: string, lines: string[], details: Record<string, unknown>) =>
    ({
      name: NAME,
      status,
      summary,
      lines: [`Embedded engine: ${spec}`, ...lines.map((line) => `  ${line}`)],
      details: { model: spec, ...details },
    }) satisfies CheckResult;
  const failed = (summary: string, details: Record<string, unknown> = {}) =>
    result("failed", summary, [`FAILED: ${summary}`], details);

  return {
    name: NAME,
    async run(progress) {
      const file = await modelFile(spec, deps.dataDir, deps.registry);
      if ("problem" in file) return failed(file.problem);
      if (!(await engineInstalled(deps.engine.dir))) return failed(notInstalledMessage(resolve(deps.engine.dir)));
      progress(`Embedded engine: loading ${file.path} (node-llama-cpp ${NODE_LLAMA_CPP_VERSION})`);
      let stats: CompletionStats | undefined;
      const engine = createEngine({
        settings: {
          modelPath: file.path,
          moduleUrl: engineModuleUrl(deps.engine.dir),
          sequences: 1,
          queue: 0,
          threads: deps.engine.threads,
          contextSize: deps.engine.contextSize,
          gpu: deps.engine.gpu,
          ...(deps.engine.fimTemplate === undefined ? {} : { fimTemplate: deps.engine.fimTemplate }),
        },
        logger: silentLogger,
        clock: deps.clock,
        fork: deps.fork,
        observer: { completed: (s) => (stats = s) },
      });
      try {
        let info: EngineInfo;
        try {
          info = await engine.started;
        } catch (error) {
          const reason = error instanceof EngineLoadError ? error.reason : "other";
          return failed(error instanceof Error ? error.message : String(error), { path: file.path, reason });
        }
        const loaded = [
          `loaded "${info.model}" from ${info.path} in ${info.loadMs} ms`,
          `llama.cpp build in use: ${info.binary} (node-llama-cpp ${NODE_LLAMA_CPP_VERSION}, --gpu ${deps.engine.gpu}), ${info.threads} thread${info.threads === 1 ? "" : "s"}, context ${info.contextSize} tokens`,
          fimLine(info.fim),
        ];
        const about = {
          path: info.path,
          model_name: info.model,
          binary: info.binary,
          threads: info.threads,
          context_size: info.contextSize,
          load_ms: info.loadMs,
          fim: info.fim,
        };
        progress(`Embedded engine: one completion of at most ${MAX_TOKENS} tokens`);
        const controller = new AbortController();
        const timer = deps.clock.setTimeout(
          () => controller.abort(new Error("no answer in time")),
          deps.completionTimeoutMs ?? 120_000,
        );
        const started = deps.clock.now();
        let firstMs: number | undefined;
        let text = "";
        try {
          await engine.provider.complete(
            {
              context: {
                surface: "code",
                workspace_slug: "doctor",
                entity_id: "doctor",
                document_type: "plaintext",
                code_language: "javascript",
                active_text_before_cursor: SAMPLE.before,
                active_text_after_cursor: SAMPLE.after,
              },
              maxTokens: MAX_TOKENS,
              temperature: 0.2,
            },
            controller.signal,
            (fragment) => {
              firstMs ??= deps.clock.now() - started;
              text += fragment;
            },
          );
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          return result(
            "failed",
            `the model loaded, but its completion failed: ${message}`,
            [...loaded, `FAILED: one completion: ${message}`],
            about,
          );
        } finally {
          deps.clock.clearTimeout(timer);
        }
        const totalMs = deps.clock.now() - started;
        const tokens = stats?.generatedTokens ?? 0;
        // The engine's own clock for the model's speed (text reaches here in chunks, a few tokens at a time).
        const firstToken = stats?.firstTokenMs ?? firstMs;
        const decodeMs = stats && stats.firstTokenMs !== undefined ? stats.generationMs - stats.firstTokenMs : 0;
        const perSecond = tokens > 1 && decodeMs > 0 ? (tokens - 1) / (decodeMs / 1000) : undefined;
        const completion = {
          first_token_ms: firstToken === undefined ? null : Math.round(firstToken),
          first_text_ms: firstMs === undefined ? null : Math.round(firstMs),
          total_ms: Math.round(totalMs),
          prompt_tokens: stats?.promptTokens ?? null,
          tokens,
          tokens_per_second: perSecond === undefined ? null : Math.round(perSecond * 10) / 10,
          text,
        };
        return result(
          "ok",
          `${info.model} on ${info.binary}: first token after ${completion.first_token_ms ?? "–"} ms`,
          [
            ...loaded,
            `one completion: first token after ${completion.first_token_ms ?? "–"} ms, ${tokens} token${tokens === 1 ? "" : "s"} in ${completion.total_ms} ms${perSecond === undefined ? "" : ` (${completion.tokens_per_second} tokens/s after the first)`}: ${JSON.stringify(text)}`,
            `(${SAMPLE_NOTE})`,
          ],
          { ...about, completion },
        );
      } finally {
        await engine.close();
      }
    },
  };
}
