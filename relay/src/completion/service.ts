import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import { type CompletionRequest, type FinishReason, RelayError, TAB_DEFAULTS, TAB_LIMITS } from "@tab-relay/shared";
import type { Logger } from "../logger";
import type { Metrics } from "../metrics";
import type { ModelProvider } from "../providers/types";
import { createPostprocessor } from "./postprocess";
import { countTokens } from "./tokens";

/** What the route turns into SSE frames or one JSON body. `start` comes once the provider has answered. */
export type CompletionEvent =
  | { type: "start" }
  | { type: "text"; text: string }
  | { type: "end"; finishReason: FinishReason };

export interface CompletionService {
  run(request: CompletionRequest, signal: AbortSignal): AsyncGenerator<CompletionEvent>;
}

interface CachedCompletion {
  text: string;
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

  return {
    async *run(request, signal) {
      const maxTokens = request.max_completion_tokens ?? TAB_LIMITS.maxCompletionTokens;
      const key = cache ? cacheKey(provider.name, request, maxTokens) : "";
      const hit = cache?.get(key);
      metrics.cache.inc({ result: hit ? "hit" : "miss" });
      if (hit) {
        yield { type: "start" };
        if (hit.text !== "") yield { type: "text", text: hit.text };
        yield { type: "end", finishReason: hit.finishReason };
        return;
      }

      const post = createPostprocessor({ context: request.tab_context, maxTokens, countTokens });
      const started = process.hrtime.bigint();
      const elapsed = () => Number(process.hrtime.bigint() - started) / 1e9;
      let answered = false;
      let text = "";
      try {
        const input = { context: request.tab_context, maxTokens, temperature: TAB_DEFAULTS.temperature };
        // Leaving this loop early (suffix reached, token limit) returns the provider's generator, which releases
        // its upstream request; the client's signal covers disconnects and shutdown.
        for await (const fragment of provider.stream(input, signal)) {
          if (!answered) {
            answered = true;
            metrics.upstreamFirstByte.observe(labels, elapsed());
            yield { type: "start" };
          }
          const out = post.push(fragment);
          if (out !== "") {
            text += out;
            yield { type: "text", text: out };
          }
          if (post.done) break;
        }
        if (!answered) yield { type: "start" };
        const rest = post.end();
        if (rest !== "") {
          text += rest;
          yield { type: "text", text: rest };
        }
        metrics.upstreamRequests.inc({ ...labels, outcome: "ok" });
        metrics.upstreamDuration.observe(labels, elapsed());
        cache?.set(key, { text, finishReason: post.finishReason });
        yield { type: "end", finishReason: post.finishReason };
      } catch (error) {
        if (signal.aborted) {
          metrics.upstreamRequests.inc({ ...labels, outcome: "aborted" });
          throw error;
        }
        const failure = error instanceof RelayError ? error : new RelayError("UPSTREAM_ERROR", "The model provider failed", { cause: error });
        metrics.upstreamRequests.inc({ ...labels, outcome: "error" });
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
