import { SSE_DONE, encodeSseEvent, type ChatCompletionChunk } from "@tab-relay/shared";
import type { Clock, FetchLike } from "../types";

/** One scripted answer. Delays run on the injected clock, so tests decide when bytes arrive. */
export type FetchStep =
  | {
      readonly kind: "sse";
      /** Time until the response headers arrive. */
      readonly latencyMs?: number;
      /** Content deltas, each arriving `delayMs` after the previous one. */
      readonly chunks: readonly { readonly content: string; readonly delayMs?: number }[];
      /** Ends with `data: [DONE]` unless false. */
      readonly done?: boolean;
    }
  | {
      readonly kind: "error";
      readonly status: number;
      readonly code: string;
      readonly message: string;
      readonly headers?: Record<string, string>;
      readonly latencyMs?: number;
    }
  | { readonly kind: "network"; readonly message: string; readonly latencyMs?: number }
  /** Never answers; only an abort ends it. */
  | { readonly kind: "hang" };

export interface RecordedCall {
  readonly url: string;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body: unknown;
  readonly signal: AbortSignal;
  readonly at: number;
}

/** One chat.completion.chunk frame as the relay sends it. */
export function chunkFrame(content: string | undefined, finishReason: "stop" | "length" | null = null): string {
  const chunk: ChatCompletionChunk = {
    id: "cmpl-test",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "tab-v1",
    choices: [{ index: 0, delta: content === undefined ? {} : { content }, finish_reason: finishReason }],
  };
  return encodeSseEvent({ data: JSON.stringify(chunk) });
}

export const DONE_FRAME = encodeSseEvent({ data: SSE_DONE });

/**
 * A scripted `fetch`: answers calls with the steps given, in order, records every call, and fails loudly (throws
 * and remembers it in `unexpected`) when a call arrives after the script ran out.
 */
export class FakeFetch {
  readonly calls: RecordedCall[] = [];
  readonly unexpected: string[] = [];
  readonly aborted: RecordedCall[] = [];
  private readonly steps: FetchStep[];

  constructor(
    private readonly clock: Clock,
    steps: readonly FetchStep[] = [],
  ) {
    this.steps = [...steps];
  }

  script(...steps: FetchStep[]): this {
    this.steps.push(...steps);
    return this;
  }

  get remainingSteps(): number {
    return this.steps.length;
  }

  /** Throws if a call came after the script ran out, or if scripted steps were never used. */
  assertDone(): void {
    if (this.unexpected.length > 0) throw new Error(`FakeFetch: unexpected calls: ${this.unexpected.join("; ")}`);
    if (this.steps.length > 0) throw new Error(`FakeFetch: ${this.steps.length} scripted step(s) never used`);
  }

  readonly fetch: FetchLike = (url, init) => {
    const call: RecordedCall = {
      url,
      method: init.method,
      headers: init.headers,
      body: init.body === undefined ? undefined : (JSON.parse(init.body) as unknown),
      signal: init.signal,
      at: this.clock.now(),
    };
    this.calls.push(call);
    init.signal.addEventListener("abort", () => this.aborted.push(call), { once: true });
    const step = this.steps.shift();
    if (step === undefined) {
      const message = `FakeFetch: call #${this.calls.length} to ${url} but the script ran out`;
      this.unexpected.push(message);
      return Promise.reject(new Error(message));
    }
    return this.answer(step, init.signal);
  };

  private answer(step: FetchStep, signal: AbortSignal): Promise<Response> {
    if (step.kind === "hang") return new Promise((_, reject) => onAbort(signal, () => reject(abortError())));
    return new Promise((resolve, reject) => {
      const handle = this.clock.setTimeout(() => {
        if (step.kind === "network") reject(new TypeError("fetch failed", { cause: new Error(step.message) }));
        else if (step.kind === "error") {
          const headers = { "content-type": "application/json", ...step.headers };
          resolve(
            new Response(JSON.stringify({ error: { code: step.code, message: step.message } }), {
              status: step.status,
              headers,
            }),
          );
        } else
          resolve(
            new Response(this.sseStream(step, signal), {
              status: 200,
              headers: { "content-type": "text/event-stream" },
            }),
          );
      }, step.latencyMs ?? 0);
      onAbort(signal, () => {
        this.clock.clearTimeout(handle);
        reject(abortError());
      });
    });
  }

  private sseStream(step: Extract<FetchStep, { kind: "sse" }>, signal: AbortSignal): ReadableStream<Uint8Array> {
    const encoder = new TextEncoder();
    const clock = this.clock;
    let handle: unknown;
    return new ReadableStream<Uint8Array>({
      start(controller) {
        let i = 0;
        const next = () => {
          const chunk = step.chunks[i++];
          if (chunk === undefined) {
            if (step.done !== false) controller.enqueue(encoder.encode(chunkFrame(undefined, "stop") + DONE_FRAME));
            controller.close();
            return;
          }
          handle = clock.setTimeout(() => {
            controller.enqueue(encoder.encode(chunkFrame(chunk.content)));
            next();
          }, chunk.delayMs ?? 0);
        };
        next();
        onAbort(signal, () => {
          clock.clearTimeout(handle);
          controller.error(abortError());
        });
      },
      cancel() {
        clock.clearTimeout(handle);
      },
    });
  }
}

function onAbort(signal: AbortSignal, callback: () => void): void {
  if (signal.aborted) callback();
  else signal.addEventListener("abort", callback, { once: true });
}

function abortError(): Error {
  return new DOMException("This operation was aborted", "AbortError");
}
