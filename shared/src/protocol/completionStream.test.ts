import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RelayError } from "../errors";
import { encodeSseEvent } from "../sse/sseEncoder";
import type { ChatCompletionChunk } from "./completion";
import { readCompletionStream, type CompletionStreamEvent } from "./completionStream";

const utf8 = new TextEncoder();

function chunk(content: string | undefined, finishReason: "stop" | "length" | null = null): string {
  const value: ChatCompletionChunk = {
    id: "tab-1",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "tab-v1",
    choices: [{ index: 0, delta: content === undefined ? {} : { content }, finish_reason: finishReason }],
  };
  return encodeSseEvent({ data: JSON.stringify(value) });
}

/** The wire text as a byte stream cut into pieces of `size` bytes, as a network would deliver it. */
async function* bytes(wire: string, size = 7): AsyncGenerator<Uint8Array> {
  const all = utf8.encode(wire);
  for (let i = 0; i < all.length; i += size) yield all.slice(i, i + size);
}

async function read(wire: string): Promise<CompletionStreamEvent[]> {
  const out: CompletionStreamEvent[] = [];
  for await (const event of readCompletionStream(bytes(wire))) out.push(event);
  return out;
}

describe("readCompletionStream", () => {
  test("yields each delta's content, then done with the finish reason", async () => {
    const wire = chunk("const ") + chunk("x = 1;") + chunk(undefined, "length") + encodeSseEvent({ data: "[DONE]" });
    assert.deepEqual(await read(wire), [
      { type: "delta", content: "const " },
      { type: "delta", content: "x = 1;" },
      { type: "done", finishReason: "length" },
    ]);
  });

  test("done carries a null finish reason when no chunk gave one, and comments and empty deltas are skipped", async () => {
    const wire = ": keep-alive\n\n" + chunk("") + chunk("héllo 😀") + encodeSseEvent({ data: "[DONE]" });
    assert.deepEqual(await read(wire), [
      { type: "delta", content: "héllo 😀" },
      { type: "done", finishReason: null },
    ]);
  });

  test("a mid-stream error frame is thrown as a RelayError with its code, after the deltas before it", async () => {
    const wire =
      chunk("partial") +
      encodeSseEvent({
        event: "error",
        data: JSON.stringify({ error: { code: "UPSTREAM_TIMEOUT", message: "Upstream took too long" } }),
      });
    const seen: CompletionStreamEvent[] = [];
    await assert.rejects(
      async () => {
        for await (const event of readCompletionStream(bytes(wire))) seen.push(event);
      },
      (error: unknown) =>
        error instanceof RelayError &&
        error.code === "UPSTREAM_TIMEOUT" &&
        error.status === 504 &&
        error.message === "Upstream took too long",
    );
    assert.deepEqual(seen, [{ type: "delta", content: "partial" }]);
  });

  test("an error envelope without the event name is an error too", async () => {
    const wire = encodeSseEvent({
      data: JSON.stringify({ error: { code: "RATE_LIMIT_EXCEEDED", message: "slow down" } }),
    });
    await assert.rejects(
      read(wire),
      (error: unknown) => error instanceof RelayError && error.code === "RATE_LIMIT_EXCEEDED",
    );
  });

  test("an error frame with an unknown code becomes UPSTREAM_ERROR", async () => {
    const wire = encodeSseEvent({
      event: "error",
      data: JSON.stringify({ error: { code: "SOMETHING_NEW", message: "?" } }),
    });
    await assert.rejects(
      read(wire),
      (error: unknown) => error instanceof RelayError && error.code === "UPSTREAM_ERROR",
    );
  });

  test("an error frame whose data is not JSON is an UPSTREAM_ERROR carrying that text", async () => {
    const wire = encodeSseEvent({ event: "error", data: "model overloaded" });
    await assert.rejects(
      read(wire),
      (error: unknown) =>
        error instanceof RelayError && error.code === "UPSTREAM_ERROR" && error.message === "model overloaded",
    );
  });

  test("a chunk that is not a completion chunk is an UPSTREAM_ERROR, not a validation dump", async () => {
    for (const data of ["{not json", JSON.stringify({ choices: "nope" })]) {
      await assert.rejects(
        read(encodeSseEvent({ data })),
        (error: unknown) =>
          error instanceof RelayError &&
          error.code === "UPSTREAM_ERROR" &&
          /Malformed completion chunk/.test(error.message),
      );
    }
  });

  test("a stream that ends without [DONE] throws UPSTREAM_ERROR", async () => {
    await assert.rejects(
      read(chunk("cut off")),
      (error: unknown) =>
        error instanceof RelayError && error.code === "UPSTREAM_ERROR" && /\[DONE\]/.test(error.message),
    );
    await assert.rejects(read(""), (error: unknown) => error instanceof RelayError && error.code === "UPSTREAM_ERROR");
  });

  test("reads a ReadableStream body as well", async () => {
    const wire = utf8.encode(chunk("ok") + encodeSseEvent({ data: "[DONE]" }));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(wire.slice(0, 10));
        controller.enqueue(wire.slice(10));
        controller.close();
      },
    });
    const events: CompletionStreamEvent[] = [];
    for await (const event of readCompletionStream(stream)) events.push(event);
    assert.deepEqual(events, [
      { type: "delta", content: "ok" },
      { type: "done", finishReason: null },
    ]);
  });
});
