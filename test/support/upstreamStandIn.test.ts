import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { readSseEvents } from "@tab-relay/shared";
import { splitText, startUpstreamStandIn, type UpstreamStandIn } from "./upstreamStandIn";

async function post(url: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

async function events(response: Response): Promise<unknown[]> {
  assert.ok(response.body);
  const out: unknown[] = [];
  for await (const event of readSseEvents(response.body))
    out.push(event.data === "[DONE]" ? "[DONE]" : JSON.parse(event.data));
  return out;
}

describe("upstream stand-in", () => {
  let upstream: UpstreamStandIn;
  before(async () => {
    upstream = await startUpstreamStandIn();
  });
  after(() => upstream.close());

  test("streams text_completion chunks that join to the scripted text, then [DONE]", async () => {
    upstream.enqueue({ kind: "reply", text: "fill the middle", chunks: 4 });
    const response = await post(`${upstream.url}/completions`, { model: "m", prompt: "a", suffix: "b", stream: true });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
    const all = await events(response);
    assert.equal(all.at(-1), "[DONE]");
    const chunks = all.slice(0, -1) as Array<{
      object: string;
      model: string;
      choices: Array<{ text: string; finish_reason: string | null }>;
    }>;
    assert.ok(chunks.every((chunk) => chunk.object === "text_completion" && chunk.model === "m"));
    assert.equal(chunks.map((chunk) => chunk.choices[0]?.text).join(""), "fill the middle");
    assert.equal(chunks.filter((chunk) => chunk.choices[0]?.text !== "").length, 4);
    assert.equal(chunks.at(-1)?.choices[0]?.finish_reason, "stop");
  });

  test("streams chat.completion.chunk deltas, with a role chunk first and usage when asked", async () => {
    upstream.enqueue({ kind: "reply", text: ["one ", "two"] });
    const response = await post(`${upstream.url}/chat/completions`, {
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const all = await events(response);
    const chunks = all.slice(0, -1) as Array<{
      object: string;
      choices: Array<{ delta: { role?: string; content?: string } }>;
      usage?: unknown;
    }>;
    assert.equal(chunks[0]?.choices[0]?.delta.role, "assistant");
    assert.deepEqual(
      chunks.map((chunk) => chunk.choices[0]?.delta.content).filter((content) => content),
      ["one ", "two"],
    );
    assert.ok(chunks.every((chunk) => chunk.object === "chat.completion.chunk"));
    assert.ok(chunks.at(-1)?.usage, "the last chunk before [DONE] carries usage");
  });

  test("answers stream:false with one JSON object in each API's shape", async () => {
    upstream.enqueue({ kind: "reply", text: "whole" }, { kind: "reply", text: "whole" });
    const completion = (await (await post(`${upstream.url}/completions`, { prompt: "x" })).json()) as {
      object: string;
      choices: Array<{ text: string }>;
    };
    assert.equal(completion.object, "text_completion");
    assert.equal(completion.choices[0]?.text, "whole");
    const chat = (await (await post(`${upstream.url}/chat/completions`, { messages: [] })).json()) as {
      object: string;
      choices: Array<{ message: { content: string } }>;
    };
    assert.equal(chat.object, "chat.completion");
    assert.equal(chat.choices[0]?.message.content, "whole");
  });

  test("records method, path, headers and parsed body of every request", async () => {
    const before = upstream.requests.length;
    await (await post(`${upstream.url}/completions`, { prompt: "recorded", stream: false })).text();
    const recorded = upstream.requests[before];
    assert.equal(recorded?.method, "POST");
    assert.equal(recorded?.path, "/v1/completions");
    assert.equal(recorded?.headers["content-type"], "application/json");
    assert.deepEqual(recorded?.body, { prompt: "recorded", stream: false });
    assert.equal(recorded?.clientAborted, false);
  });

  test("answers a scripted error status with its body", async () => {
    upstream.enqueue({ kind: "error", status: 503, body: "overloaded" });
    const response = await post(`${upstream.url}/completions`, { stream: true });
    assert.equal(response.status, 503);
    assert.equal(await response.text(), "overloaded");
  });

  test("notices when the client of a hanging request goes away", async () => {
    upstream.enqueue({ kind: "hang" });
    const seen = upstream.requests.length;
    const controller = new AbortController();
    const pending = post(`${upstream.url}/completions`, { stream: true }, controller.signal);
    await upstream.until(() => upstream.requests.length > seen, "the request");
    const disconnectsBefore = upstream.clientDisconnects();
    controller.abort();
    await assert.rejects(pending);
    await upstream.waitForClientDisconnect(undefined, 1000);
    assert.equal(upstream.requests.at(-1)?.clientAborted, true);
    assert.equal(upstream.clientDisconnects(), disconnectsBefore + 1);
  });

  test("waitForClientDisconnect rejects when the client stays", async () => {
    upstream.enqueue({ kind: "reply", text: "done" });
    await (await post(`${upstream.url}/completions`, { stream: true })).text();
    await assert.rejects(upstream.waitForClientDisconnect(undefined, 50), /still connected/);
  });

  test("sends some chunks then drops the connection", async () => {
    upstream.enqueue({ kind: "disconnect", sent: ["partial"] });
    const response = await post(`${upstream.url}/completions`, { stream: true });
    assert.equal(response.status, 200);
    await assert.rejects(response.text());
  });

  test("holds back the first chunk for firstChunkDelayMs after sending the headers", async () => {
    upstream.enqueue({ kind: "reply", text: "late", firstChunkDelayMs: 120 });
    const start = performance.now();
    const response = await post(`${upstream.url}/completions`, { stream: true });
    const headersAfter = performance.now() - start;
    await response.text();
    const bodyAfter = performance.now() - start;
    assert.ok(headersAfter < 100, `headers took ${headersAfter} ms`);
    assert.ok(bodyAfter >= 110, `body came after ${bodyAfter} ms`);
  });

  test("a behaviour function sees the request it answers", async () => {
    upstream.setBehaviour((request) => ({
      kind: "reply",
      text: `echo:${(request.body as { prompt: string }).prompt}`,
      chunks: 1,
    }));
    const all = await events(await post(`${upstream.url}/completions`, { prompt: "ping", stream: true }));
    assert.equal((all[0] as { choices: Array<{ text: string }> }).choices[0]?.text, "echo:ping");
  });

  test("lists a model and answers 404 for unknown paths", async () => {
    const models = (await (await fetch(`${upstream.url}/models`)).json()) as { data: Array<{ id: string }> };
    assert.equal(models.data[0]?.id, "stand-in-model");
    assert.equal((await post(`${upstream.url}/embeddings`, {})).status, 404);
  });
});

test("splitText keeps surrogate pairs whole and never makes more pieces than characters", () => {
  assert.deepEqual(splitText("ab😀cd", 5), ["a", "b", "😀", "c", "d"]);
  assert.deepEqual(splitText("ab", 10), ["a", "b"]);
  assert.equal(splitText("abcdefghij", 3).join(""), "abcdefghij");
});

test("serves many concurrent zero-delay streams, and record: false keeps none of them", async () => {
  const upstream = await startUpstreamStandIn({
    record: false,
    behaviour: { kind: "reply", text: "x".repeat(64), chunks: 8 },
  });
  try {
    const start = performance.now();
    let served = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        for (let i = 0; i < 20; i++) {
          const response = await post(`${upstream.url}/chat/completions`, { messages: [], stream: true });
          if ((await response.text()).endsWith("data: [DONE]\n\n")) served++;
        }
      }),
    );
    const elapsed = performance.now() - start;
    console.log(
      `upstream stand-in: ${served} streams in ${elapsed.toFixed(0)} ms (${((served / elapsed) * 1000).toFixed(0)}/s)`,
    );
    assert.equal(served, 200);
    assert.equal(upstream.requests.length, 0, "record: false keeps nothing");
  } finally {
    await upstream.close();
  }
});
