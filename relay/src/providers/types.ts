import type { TabContext } from "@tab-relay/shared";

/** What a provider is asked for: the validated editor context and the generation settings. */
export interface CompletionInput {
  context: TabContext;
  /** Upper bound on output tokens (already clamped to 1..500). */
  maxTokens: number;
  temperature: number;
}

/**
 * A source of continuations. `stream` yields raw text fragments in order; the relay postprocesses them.
 * It must stop promptly once `signal` aborts (rejecting with the signal's reason or an AbortError), and it
 * reports failures as RelayError UPSTREAM_ERROR (502) or UPSTREAM_TIMEOUT (504).
 */
export interface ModelProvider {
  readonly name: string;
  stream(input: CompletionInput, signal: AbortSignal): AsyncIterable<string>;
}
