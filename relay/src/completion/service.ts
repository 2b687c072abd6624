import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import { type CompletionRequest, type FinishReason, RelayError, TAB_DEFAULTS, TAB_LIMITS } from "@tab-relay/shared";
import type { AbortLike } from "../aborter";
import type { Logger } from "../logger";
import type { Metrics } from "../metrics";
import type { ModelProvider } from "../providers/types";
import { type Postprocessor, createPostprocessor } from "./postprocess";
import { countTokens } from "./tokens";

/** Where a completion goes as it is produced: the route turns it into SSE frames or one JSON body. */
export interface CompletionSink {
  /** The provider (or the cache) has answered; called once, before any text. */
  start(): void;
  text(text: string): void;
  /** The answer comes from the cache; called before `start`. */
  cached?(): void;
  /** The model's own text, fragment by fragment, before postprocessing; only for a sink that asks for it. */
  raw?(text: string): void;
}

export interface CompletionService {
  /** Runs one completion into `sink` and resolves with why it finished; rejects with a RelayError or the abort reason. */
  run(request: CompletionRequest, signal: AbortLike, sink: CompletionSink): Promise<FinishReason>;
  /** A request is authenticated and its body is on its way (ModelProvider.prepare). */
  prepare(): void;
}

interface CachedCompletion {
  text: string;
  /** What the model answered before postprocessing, for a later request that asks for it. */
  raw: string;
  finishReason: FinishReason;
}

export function createCompletionService(deps: {
  provider: ModelProvider;
  metrics: Metrics;
  logger: Logger;
  cacheEntries: number;
}): CompletionService {
  const cache = deps.cacheEntries > 0 ? new LRUCache<string, CachedCompletion>({ max: deps.cacheEntries }) : undefined;
  const { provider, metrics } = deps;
  const labels = { provider: provider.name };
  // Each completion counts under these: built once rather than as a new object per call.
  const hitLabels = { result: "hit" };
  const missLabels = { result: "miss" };
  const okLabels = { ...labels, outcome: "ok" };
  const abortedLabels = { ...labels, outcome: "aborted" };
  const errorLabels = { ...labels, outcome: "error" };

  const prepare = provider.prepare?.bind(provider);
  return {
    prepare: prepare ?? (() => undefined),
    async run(request, signal, sink) {
      const maxTokens = request.max_completion_tokens ?? TAB_LIMITS.maxCompletionTokens;
      const key = cache ? cacheKey(provider.name, request, maxTokens) : "";
      const hit = cache?.get(key);
      metrics.cache.inc(hit ? hitLabels : missLabels);
      if (hit) {
        sink.cached?.();
        sink.start();
        if (hit.raw !== "") sink.raw?.(hit.raw);
        if (hit.text !== "") sink.text(hit.text);
        return hit.finishReason;
      }

      // Made once the request is on its way to the model rather than before: a provider that answers later (the
      // engine child, a model server) works in the meantime, so its set-up is off the first token's path.
      let made: Postprocessor | undefined;
      const postprocessor = (): Postprocessor =>
        (made ??= createPostprocessor({
          context: request.tab_context,
          maxTokens,
          countTokens,
          ...(provider.stopSequences ? { stops: provider.stopSequences } : {}),
          ...(provider.fillInTheMiddle ? { chatWrapping: false } : {}),
        }));
      const started = process.hrtime.bigint();
      const elapsed = () => Number(process.hrtime.bigint() - started) / 1e9;
      let answered = false;
      let text = "";
      let raw = "";
      try {
        const input = { context: request.tab_context, maxTokens, temperature: TAB_DEFAULTS.temperature };
        // Returning false once the postprocessor is done (suffix reached, token limit) makes the provider release
        // its upstream request; the client's signal covers disconnects and shutdown.
        // A provider may answer before `complete` returns (the local engine does), hence `postprocessor()` there too.
        const completing = provider.complete(input, signal, (fragment) => {
          if (!answered) {
            answered = true;
            metrics.upstreamFirstByte.observe(labels, elapsed());
            sink.start();
          }
          raw += fragment;
          sink.raw?.(fragment);
          const post = postprocessor();
          const out = post.push(fragment);
          if (out !== "") {
            text += out;
            sink.text(out);
          }
          return post.done ? false : undefined;
        });
        const post = postprocessor();
        await completing;
        if (!answered) sink.start();
        const rest = post.end();
        if (rest !== "") {
          text += rest;
          sink.text(rest);
        }
        metrics.upstreamRequests.inc(okLabels);
        metrics.upstreamDuration.observe(labels, elapsed());
        cache?.set(key, { text, raw, finishReason: post.finishReason });
        return post.finishReason;
      } catch (error) {
        if (signal.aborted) {
          metrics.upstreamRequests.inc(abortedLabels);
          throw signal.reason;
        }
        const failure =
          error instanceof RelayError
            ? error
            : new RelayError("UPSTREAM_ERROR", "The model provider failed", { cause: error });
        metrics.upstreamRequests.inc(errorLabels);
        metrics.upstreamErrors.inc({ ...labels, code: failure.code });
        deps.logger.warn("provider failed", { provider: provider.name, code: failure.code, error: failure.message });
        throw failure;
      }
    },
  };
}

/** The full request context decides the answer, so all of it (hashed) is the key; the workspace is part of it. */
function cacheKey(providerName: string, request: CompletionRequest, maxTokens: number): string {
  return createHash("sha256")
    .update(`${providerName}\u0000${request.model ?? TAB_DEFAULTS.model}\u0000${maxTokens}\u0000`)
    .update(JSON.stringify(request.tab_context))
    .digest("base64url");
}
