import {
  API_PREFIX,
  ErrorEnvelope,
  RelayError,
  TAB_COMPLETIONS_PATH,
  codeForStatus,
  parseRetryAfterMs,
  readCompletionStream,
  type CompletionRequest,
  type TabContext,
  type TabUsageBatch,
} from "@tab-relay/shared";
import type { Settings } from "./settings";
import type { Clock, FetchLike } from "./types";

export const COMPLETIONS_PATH = API_PREFIX + TAB_COMPLETIONS_PATH;
export const USAGE_EVENTS_PATH = `${API_PREFIX}/tab/events`;

export type RequestOutcome =
  | {
      readonly kind: "ok";
      readonly text: string;
      /** `done`: the stream ended; `first line`: a single-line context had its line; `timeout`: the complete lines so far. */
      readonly ended: "done" | "first line" | "timeout";
      readonly status: number;
      readonly firstChunkMs: number | undefined;
      readonly durationMs: number;
      /** The answer's `id`, which usage reports name the suggestion by; absent when no chunk arrived. */
      readonly completionId?: string;
    }
  | RequestUnanswered
  | (RequestFailed & { readonly retryAfterMs: number | undefined });

/** How a request to the relay ends without an answer: stopped (typing on, the timeout), or the relay not reached. */
export type RequestUnanswered =
  | { readonly kind: "aborted" | "timeout"; readonly durationMs: number }
  | { readonly kind: "unreachable"; readonly message: string; readonly durationMs: number };

/** The relay answered with an error (its envelope's code and message), or with an answer the client refuses. */
export interface RequestFailed {
  readonly kind: "failed";
  readonly status: number | undefined;
  readonly code: string;
  readonly message: string;
  readonly durationMs: number;
}

export interface RelayRequest {
  readonly relayUrl: string;
  readonly apiKey: string;
  readonly body: CompletionRequest;
  readonly timeoutMs: number;
  /** Stop at the first newline: ghost text mid-line can only be one line. */
  readonly singleLine: boolean;
  /** Aborted when the user types on; the HTTP request is aborted with it. */
  readonly signal: AbortSignal;
}

/**
 * One request's cancellation, shared by completions and next edits: its own controller, aborted when the caller's
 * signal aborts (the person typed on) or when `timeoutMs` passes on `clock`, whichever comes first. `stopped` says
 * which; `release()` clears the timer and the listener, and must run when the request ends.
 */
export interface RequestStop {
  readonly signal: AbortSignal;
  readonly stopped: "cancelled" | "timeout" | undefined;
  abort(): void;
  release(): void;
}

export function stopOnCancelOrTimeout(clock: Clock, cancel: AbortSignal, timeoutMs: number): RequestStop {
  const controller = new AbortController();
  let stopped: "cancelled" | "timeout" | undefined;
  const onCancel = () => {
    stopped ??= "cancelled";
    controller.abort();
  };
  cancel.addEventListener("abort", onCancel, { once: true });
  const timer = clock.setTimeout(() => {
    stopped ??= "timeout";
    controller.abort();
  }, timeoutMs);
  return {
    signal: controller.signal,
    get stopped() {
      return stopped;
    },
    abort: () => controller.abort(),
    release() {
      clock.clearTimeout(timer);
      cancel.removeEventListener("abort", onCancel);
    },
  };
}

/** The relay's `{error: {code, message}}` in a failed answer's body, or the status's code when it is not there. */
export function errorOfBody(status: number, body: string): { code: string; message: string } {
  try {
    const envelope = ErrorEnvelope.safeParse(JSON.parse(body));
    if (envelope.success) return { code: envelope.data.error.code, message: envelope.data.error.message };
  } catch {
    // A proxy's HTML error page: the status alone has to do.
  }
  return { code: codeForStatus(status), message: `HTTP ${status}` };
}

export function buildRequestBody(settings: Settings, tabContext: TabContext): CompletionRequest {
  const body: CompletionRequest = { model: settings.model, stream: true, tab_context: tabContext };
  if (settings.maxCompletionTokens !== undefined) body.max_completion_tokens = settings.maxCompletionTokens;
  return body;
}

/**
 * POSTs one streaming completion request and reads the SSE answer until it is complete enough to show.
 * Never throws: every way a request can end is a RequestOutcome.
 */
export async function requestCompletion(
  deps: { fetch: FetchLike; clock: Clock },
  request: RelayRequest,
): Promise<RequestOutcome> {
  const { clock } = deps;
  const started = clock.now();
  const elapsed = () => clock.now() - started;
  if (request.signal.aborted) return { kind: "aborted", durationMs: 0 };

  const stop = stopOnCancelOrTimeout(clock, request.signal, request.timeoutMs);

  let text = "";
  let firstChunkAt: number | undefined;
  let completionId: string | undefined;
  const ok = (value: string, ended: "done" | "first line" | "timeout", status: number): RequestOutcome => ({
    kind: "ok",
    text: value,
    ended,
    status,
    firstChunkMs: firstChunkAt === undefined ? undefined : firstChunkAt - started,
    durationMs: elapsed(),
    ...(completionId === undefined ? {} : { completionId }),
  });

  let status = 0;
  let consumed = false;
  try {
    let response: Response;
    try {
      response = await deps.fetch(`${request.relayUrl}${COMPLETIONS_PATH}`, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Accept: "text/event-stream",
          Authorization: `Bearer ${request.apiKey}`,
        },
        body: JSON.stringify(request.body),
        signal: stop.signal,
      });
    } catch (error) {
      if (stop.stopped !== undefined)
        return { kind: stop.stopped === "cancelled" ? "aborted" : "timeout", durationMs: elapsed() };
      return { kind: "unreachable", message: describe(error), durationMs: elapsed() };
    }
    status = response.status;
    if (!response.ok) {
      const outcome = await failure(response, clock, elapsed);
      consumed = true;
      return outcome;
    }
    if (response.body === null) return failed(status, "UPSTREAM_ERROR", "Response has no body", elapsed());

    for await (const event of readCompletionStream(response.body, (chunk) => (completionId ??= chunk.id))) {
      if (event.type === "done") {
        consumed = true;
        return ok(text, "done", status);
      }
      firstChunkAt ??= clock.now();
      text += event.content;
      const newline = request.singleLine ? text.indexOf("\n") : -1;
      if (newline !== -1) return ok(text.slice(0, newline), "first line", status);
    }
    return failed(status, "UPSTREAM_ERROR", "Completion stream ended early", elapsed());
  } catch (error) {
    if (stop.stopped === "cancelled") return { kind: "aborted", durationMs: elapsed() };
    if (stop.stopped === "timeout") {
      // Whole lines that arrived in time are worth showing; a half line is not.
      const lastNewline = request.singleLine ? -1 : text.lastIndexOf("\n");
      return lastNewline > 0
        ? ok(text.slice(0, lastNewline), "timeout", status)
        : { kind: "timeout", durationMs: elapsed() };
    }
    if (error instanceof RelayError) return failed(status, error.code, error.message, elapsed());
    return failed(status, "UPSTREAM_ERROR", describe(error), elapsed());
  } finally {
    stop.release();
    // Releases the connection when the stream was left early (first line, or an error).
    if (!consumed) stop.abort();
  }
}

export type SendOutcome =
  | { readonly kind: "ok"; readonly status: number }
  | { readonly kind: "unreachable"; readonly message: string }
  | Extract<RequestOutcome, { kind: "failed" }>;

/**
 * POSTs one batch of usage events. Never throws; a failure carries the relay's code and its Retry-After, read the
 * same way as for completions.
 */
export async function sendUsageBatch(
  deps: { fetch: FetchLike; clock: Clock },
  request: { relayUrl: string; apiKey: string; batch: TabUsageBatch; timeoutMs: number },
): Promise<SendOutcome> {
  const { clock } = deps;
  const started = clock.now();
  const controller = new AbortController();
  const timer = clock.setTimeout(() => controller.abort(), request.timeoutMs);
  try {
    const response = await deps.fetch(`${request.relayUrl}${USAGE_EVENTS_PATH}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${request.apiKey}` },
      body: JSON.stringify(request.batch),
      signal: controller.signal,
    });
    if (!response.ok) return (await failure(response, clock, () => clock.now() - started)) as SendOutcome;
    await response.body?.cancel().catch(() => undefined);
    return { kind: "ok", status: response.status };
  } catch (error) {
    return { kind: "unreachable", message: controller.signal.aborted ? "timed out" : describe(error) };
  } finally {
    clock.clearTimeout(timer);
  }
}

async function failure(response: Response, clock: Clock, elapsed: () => number): Promise<RequestOutcome> {
  const body = await response.text().catch(() => "");
  const { code, message } = errorOfBody(response.status, body);
  return {
    kind: "failed",
    status: response.status,
    code,
    message,
    retryAfterMs: parseRetryAfterMs(response.headers.get("retry-after"), clock.now()),
    durationMs: elapsed(),
  };
}

function failed(status: number, code: string, message: string, durationMs: number): RequestOutcome {
  return {
    kind: "failed",
    status: status === 0 ? undefined : status,
    code,
    message,
    retryAfterMs: undefined,
    durationMs,
  };
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}
