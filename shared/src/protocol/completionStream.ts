import { RelayError, isErrorCode } from "../errors";
import { readSseEvents } from "../sse/sseDecoder";
import { ChatCompletionChunk, ErrorEnvelope, SSE_DONE, type FinishReason } from "./completion";

export type CompletionStreamEvent =
  { type: "delta"; content: string } | { type: "done"; finishReason: FinishReason | null };

/**
 * Reads the relay's completion SSE stream as deltas then one `done`.
 * A mid-stream `event: error` frame is thrown as a RelayError; a stream that ends without `[DONE]` is an error too.
 * `onChunk` sees every parsed chunk, for callers that need more than the text (the extension's usage reports need
 * the completion `id`).
 */
export async function* readCompletionStream(
  body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
  onChunk?: (chunk: ChatCompletionChunk) => void,
): AsyncGenerator<CompletionStreamEvent> {
  let finishReason: FinishReason | null = null;
  for await (const event of readSseEvents(body)) {
    if (event.data === SSE_DONE) {
      yield { type: "done", finishReason };
      return;
    }
    const json = parseJson(event.data);
    const failure = ErrorEnvelope.safeParse(json);
    if (event.event === "error" || failure.success) {
      const { code, message } = failure.success ? failure.data.error : { code: "UPSTREAM_ERROR", message: event.data };
      throw new RelayError(isErrorCode(code) ? code : "UPSTREAM_ERROR", message);
    }
    const parsed = ChatCompletionChunk.safeParse(json);
    if (!parsed.success)
      throw new RelayError("UPSTREAM_ERROR", `Malformed completion chunk: ${event.data.slice(0, 200)}`);
    const chunk = parsed.data;
    onChunk?.(chunk);
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.finish_reason) finishReason = choice.finish_reason;
    if (choice.delta.content) yield { type: "delta", content: choice.delta.content };
  }
  throw new RelayError("UPSTREAM_ERROR", "Completion stream ended without [DONE]");
}

function parseJson(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}
