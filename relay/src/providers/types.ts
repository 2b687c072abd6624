import type { TabContext } from "@tab-relay/shared";
import type { AbortLike } from "../aborter";

/** What a provider is asked for: the validated editor context and the generation settings. */
export interface CompletionInput {
  context: TabContext;
  /** Upper bound on output tokens (already clamped to 1..500). */
  maxTokens: number;
  temperature: number;
}

/**
 * Receives a provider's text as it arrives, synchronously; fragments that arrived together come in one call.
 * Returning `false` says nothing more is wanted: the provider stops and releases its upstream request.
 */
export type TextSink = (text: string) => boolean | void;

/**
 * A source of continuations. `complete` pushes raw text fragments into `onText` in order (the relay
 * postprocesses them) and settles when the text has ended. It must stop promptly once `signal` aborts
 * (rejecting with the signal's reason), and it reports failures as RelayError UPSTREAM_ERROR (502) or
 * UPSTREAM_TIMEOUT (504). A push, not an async iterator: the hot path then costs no promise per fragment.
 */
export interface ModelProvider {
  readonly name: string;
  /**
   * Text that ends a completion wherever it appears in the raw output (a model's file separator or FIM tokens,
   * which it may write as text): the postprocessor cuts the output there.
   */
  readonly stopSequences?: readonly string[];
  /**
   * The text is a fill-in-the-middle continuation the model writes after its own FIM tokens (the embedded engine),
   * never a chat answer, so the postprocessor does not look for chat wrapping.
   */
  readonly fillInTheMiddle?: boolean;
  /**
   * A completion request for this provider has been authenticated and its body is on its way: a provider whose work
   * runs in another process may get that process ready (the embedded engine wakes its child). It promises nothing:
   * the request may still be refused, or answered from the cache.
   */
  prepare?(): void;
  complete(input: CompletionInput, signal: AbortLike, onText: TextSink): Promise<void>;
}
