import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { RelayError, type TabContext } from "@tab-relay/shared";
import { startUpstreamStandIn, type UpstreamStandIn } from "../../../../test/support/upstreamStandIn";
import { createHttpPost } from "../httpPost";
import type { CompletionInput, ModelProvider } from "../types";
import { type ModeSettings, upstreamMode } from ".";
import { joinUrl } from "./modes/mode";
import { CURSOR_MARKER } from "./prompts";
import { createUpstreamProvider } from "./provider";

const API_KEY = "sk-test-0123456789abcdef";

function input(
  overrides: Partial<TabContext> = {},
  settings: Partial<Omit<CompletionInput, "context">> = {},
): CompletionInput {
  return {
    context: {
      surface: "code",
      workspace_slug: "acme",
      entity_id: "src/math.ts",
      document_type: "plaintext",
      active_text_before_cursor: "function add(a, b) {\n  return ",
      active_text_after_cursor: "\n}",
      ...overrides,
    },
    maxTokens: 64,
    temperature: 0.2,
    ...settings,
  };
}

async function collect(
  provider: ModelProvider,
  request = input(),
  signal = new AbortController().signal,
  fragments: string[] = [],
  onFragment?: () => void,
): Promise<string[]> {
  await provider.complete(request, signal, (fragment) => {
    fragments.push(fragment);
    onFragment?.();
  });
  return fragments;
}

function isRelayError(code: string, message?: RegExp) {
  return (error: unknown) => {
    assert.ok(error instanceof RelayError, `expected a RelayError, got ${String(error)}`);
    assert.equal(error.code, code);
    if (message) assert.match(error.message, message);
    assert.ok(!error.message.includes(API_KEY), "the API key never appears in an error");
    return true;
  };
}

describe("openai provider against a real OpenAI-compatible server", () => {
  let upstream: UpstreamStandIn;
  let provider: (overrides?: Partial<ModeSettings & { apiKey: string; timeoutMs: number }>) => ModelProvider;
  const post = createHttpPost();

  before(async () => {
    upstream = await startUpstreamStandIn();
    provider = ({ apiKey, timeoutMs = 1000, ...settings } = {}) =>
      createUpstreamProvider({
        mode: upstreamMode({
          api: "suffix",
          baseUrl: upstream.url,
          model: "coder-7b",
          infillMaxPredictMs: 500,
          ...settings,
        }),
        model: "coder-7b",
        post,
        timeoutMs,
        ...(apiKey ? { apiKey } : {}),
      });
  });
  after(async () => {
    await post.destroy();
    await upstream.close();
  });

  test("is named openai", () => {
    assert.equal(provider().name, "openai");
  });

  test("suffix API: streams each upstream chunk as a fragment, sending prompt, suffix, limits and temperature", async () => {
    upstream.enqueue({ kind: "reply", text: "a + b;", chunks: 3, chunkDelayMs: 30 });
    const fragments = await collect(provider(), input({ file_path: "src/math.ts" }, { maxTokens: 48 }));
    assert.deepEqual(fragments, ["a ", "+ ", "b;"]);

    const sent = upstream.requests.at(-1);
    assert.equal(sent?.path, "/v1/completions");
    assert.equal(sent?.headers["authorization"], undefined, "no key, no Authorization header");
    const body = sent?.body as Record<string, unknown>;
    assert.equal(body["model"], "coder-7b");
    assert.equal(body["stream"], true);
    assert.equal(body["max_tokens"], 48);
    assert.equal(body["temperature"], 0.2);
    assert.equal(body["prompt"], "// Path: src/math.ts\nfunction add(a, b) {\n  return ");
    assert.equal(body["suffix"], "\n}");
    assert.equal(body["messages"], undefined);
  });

  test("suffix API: a mid-line cursor sends a newline stop", async () => {
    upstream.enqueue({ kind: "reply", text: "b" });
    await collect(provider(), input({ active_text_before_cursor: "add(a, ", active_text_after_cursor: ");\n" }));
    assert.deepEqual((upstream.requests.at(-1)?.body as Record<string, unknown>)["stop"], ["\n"]);
  });

  test("chat API: streams delta contents, sending surface instructions, limits, temperature and the bearer key", async () => {
    upstream.enqueue({ kind: "reply", text: ["Thanks, ", "I'll look", " today."], chunkDelayMs: 30 });
    const chat = provider({ api: "chat", apiKey: API_KEY });
    const fragments = await collect(
      chat,
      input(
        { surface: "messages", active_text_before_cursor: "Sure! ", active_text_after_cursor: "" },
        { temperature: 0.5, maxTokens: 100 },
      ),
    );
    assert.deepEqual(fragments, ["Thanks, ", "I'll look", " today."], "the empty role chunk yields nothing");

    const sent = upstream.requests.at(-1);
    assert.equal(sent?.path, "/v1/chat/completions");
    assert.equal(sent?.headers["authorization"], `Bearer ${API_KEY}`);
    const body = sent?.body as {
      model: string;
      stream: boolean;
      max_tokens: number;
      temperature: number;
      messages: Array<{ role: string; content: string }>;
      prompt?: unknown;
    };
    assert.equal(body.model, "coder-7b");
    assert.equal(body.stream, true);
    assert.equal(body.max_tokens, 100);
    assert.equal(body.temperature, 0.5);
    assert.equal(body.prompt, undefined);
    assert.deepEqual(
      body.messages.map((message) => message.role),
      ["system", "user"],
    );
    assert.match(body.messages[0]?.content ?? "", /chat message/);
    assert.match(body.messages[0]?.content ?? "", /only the text to insert/);
    assert.ok(body.messages[1]?.content.includes(`Sure! ${CURSOR_MARKER}`));
  });

  test("fragments are yielded as they arrive, not after the whole answer", async () => {
    upstream.enqueue({ kind: "reply", text: ["one", "two", "three"], chunkDelayMs: 250 });
    const started = performance.now();
    const arrivals: number[] = [];
    await provider().complete(input(), new AbortController().signal, () => {
      arrivals.push(performance.now() - started);
    });
    assert.equal(arrivals.length, 3);
    assert.ok((arrivals[0] ?? Infinity) < 200, `first fragment after ${arrivals[0]} ms`);
    assert.ok((arrivals[2] ?? 0) >= 480, `last fragment after ${arrivals[2]} ms`);
  });

  test("a base URL with a trailing slash reaches the same endpoint", async () => {
    upstream.enqueue({ kind: "reply", text: "ok" });
    assert.equal((await collect(provider({ baseUrl: `${upstream.url}/` }))).join(""), "ok");
    assert.equal(upstream.requests.at(-1)?.path, "/v1/completions");
  });

  test("an upstream 500 is UPSTREAM_ERROR with the status and an excerpt, the key redacted", async () => {
    upstream.enqueue({
      kind: "error",
      status: 500,
      body: { error: { message: `model crashed while using ${API_KEY}` } },
    });
    await assert.rejects(
      collect(provider({ apiKey: API_KEY })),
      isRelayError("UPSTREAM_ERROR", /^Upstream answered 500: model crashed while using \[redacted\]$/),
    );
  });

  test("a long plain-text error body is cut to a short excerpt", async () => {
    upstream.enqueue({ kind: "error", status: 503, body: `overloaded\n${"x".repeat(10_000)}` });
    await assert.rejects(collect(provider()), (error: unknown) => {
      isRelayError("UPSTREAM_ERROR", /^Upstream answered 503: overloaded x+…$/)(error);
      assert.ok((error as Error).message.length < 300);
      return true;
    });
  });

  test("an upstream that never answers is UPSTREAM_TIMEOUT after timeoutMs, and its request is dropped", async () => {
    upstream.enqueue({ kind: "hang" });
    const started = performance.now();
    await assert.rejects(collect(provider({ timeoutMs: 200 })), isRelayError("UPSTREAM_TIMEOUT"));
    const elapsed = performance.now() - started;
    assert.ok(elapsed >= 190 && elapsed < 1000, `timed out after ${elapsed} ms`);
    await upstream.waitForClientDisconnect(undefined, 1000);
  });

  test("headers that come late are UPSTREAM_TIMEOUT too", async () => {
    upstream.enqueue({ kind: "reply", text: "late", headersDelayMs: 1000 });
    await assert.rejects(collect(provider({ timeoutMs: 150 })), isRelayError("UPSTREAM_TIMEOUT"));
  });

  test("headers followed by silence are UPSTREAM_TIMEOUT after timeoutMs", async () => {
    upstream.enqueue({ kind: "reply", text: "late", firstChunkDelayMs: 1000 });
    const started = performance.now();
    await assert.rejects(
      collect(provider({ timeoutMs: 150 })),
      isRelayError("UPSTREAM_TIMEOUT", /no data within 150 ms/),
    );
    assert.ok(performance.now() - started < 800);
    await upstream.waitForClientDisconnect(undefined, 1000);
  });

  test("a stream whose chunks keep coming within timeoutMs is fine however long it takes", async () => {
    upstream.enqueue({
      kind: "reply",
      text: ["slow", " but", " fine", "!"],
      firstChunkDelayMs: 100,
      chunkDelayMs: 100,
    });
    assert.equal((await collect(provider({ timeoutMs: 250 }))).join(""), "slow but fine!");
  });

  test("an upstream that goes silent mid-stream is UPSTREAM_TIMEOUT after timeoutMs, and its request is dropped", async () => {
    upstream.enqueue({ kind: "reply", text: ["a +", " b", ";"], chunkDelayMs: 2000 });
    const fragments: string[] = [];
    const started = performance.now();
    await assert.rejects(
      collect(provider({ timeoutMs: 200 }), input(), undefined, fragments),
      isRelayError("UPSTREAM_TIMEOUT", /silent for 200 ms/),
    );
    assert.deepEqual(fragments, ["a +"]);
    assert.ok(performance.now() - started < 1500);
    await upstream.waitForClientDisconnect(undefined, 1000);
  });

  test("a connection dropped mid-stream is UPSTREAM_ERROR after the fragments that did arrive", async () => {
    upstream.enqueue({ kind: "disconnect", sent: ["a +", " b"] });
    const fragments: string[] = [];
    await assert.rejects(collect(provider(), input(), undefined, fragments), isRelayError("UPSTREAM_ERROR"));
    assert.equal(fragments.join(""), "a + b");
  });

  test("a connection dropped before any answer is UPSTREAM_ERROR", async () => {
    upstream.enqueue({ kind: "disconnect", sent: [] });
    await assert.rejects(collect(provider()), isRelayError("UPSTREAM_ERROR", /Upstream connection failed/));
  });

  test("a refused connection is UPSTREAM_ERROR", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await assert.rejects(
      collect(provider({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: API_KEY })),
      isRelayError("UPSTREAM_ERROR", /ECONNREFUSED/),
    );
  });

  test("UTF-8 split across chunks after ASCII ones, and at the end of the stream, is read whole", async () => {
    const event = (text: string) => `data: ${JSON.stringify({ choices: [{ index: 0, text }] })}\n\n`;
    const bytes = Buffer.from(`${event("plain ")}${event("café € 😀")}${event(" done")}`);
    const split = bytes.indexOf(Buffer.from("😀")) + 2;
    const pieces = [bytes.subarray(0, 40), bytes.subarray(40, split), bytes.subarray(split)];
    // The last event has no blank line after it and its emoji is cut in two: what the decoder holds at the end.
    const tail = Buffer.from(`data: ${JSON.stringify({ choices: [{ index: 0, text: "!😀" }] })}`);
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunks = [...pieces, tail.subarray(0, tail.length - 3), tail.subarray(tail.length - 3)];
      const next = () => {
        const chunk = chunks.shift();
        if (chunk === undefined) return void res.end();
        res.write(chunk);
        setTimeout(next, 15);
      };
      next();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const fragments = await collect(provider({ baseUrl: `http://127.0.0.1:${port}/v1` }));
      assert.equal(fragments.join(""), "plain café € 😀 done!😀");
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test("malformed stream data is UPSTREAM_ERROR", async () => {
    upstream.enqueue({ kind: "raw", body: "data: {not json\n\n" });
    await assert.rejects(collect(provider()), isRelayError("UPSTREAM_ERROR", /malformed/));
  });

  test("an error object sent mid-stream is UPSTREAM_ERROR carrying its message", async () => {
    upstream.enqueue({
      kind: "raw",
      body: 'data: {"choices":[{"index":0,"text":"a"}]}\n\ndata: {"error":{"message":"out of memory"}}\n\n',
    });
    await assert.rejects(collect(provider()), isRelayError("UPSTREAM_ERROR", /out of memory/));
  });

  test("a stream that ends with neither data nor [DONE] is UPSTREAM_ERROR", async () => {
    upstream.enqueue({ kind: "raw", body: ": keep-alive\n\n" });
    await assert.rejects(collect(provider()), isRelayError("UPSTREAM_ERROR", /without data/));
  });

  test("a stream with data that just omits [DONE] still counts", async () => {
    upstream.enqueue({ kind: "reply", text: "no done", chunks: 2, omitDone: true });
    assert.equal((await collect(provider())).join(""), "no done");
  });

  test("a server that ignores stream:true and answers JSON still gives its text", async () => {
    upstream.enqueue({
      kind: "raw",
      contentType: "application/json",
      body: JSON.stringify({
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content: "whole answer" }, finish_reason: "stop" }],
      }),
    });
    assert.deepEqual(await collect(provider({ api: "chat" })), ["whole answer"]);
  });

  test("aborting mid-stream rethrows the abort and closes the upstream connection at once", async () => {
    upstream.enqueue({ kind: "reply", text: ["a", "b", "c", "d"], chunkDelayMs: 400 });
    const controller = new AbortController();
    const fragments: string[] = [];
    let firstFragment!: () => void;
    const arrived = new Promise<void>((resolve) => (firstFragment = resolve));
    const consuming = collect(provider(), input(), controller.signal, fragments, firstFragment);
    await arrived;
    const index = upstream.requests.length - 1;
    const started = performance.now();
    controller.abort();
    await assert.rejects(consuming, (error: unknown) => error === controller.signal.reason);
    await upstream.waitForClientDisconnect(index, 1000);
    assert.ok(performance.now() - started < 300, `upstream saw the disconnect after ${performance.now() - started} ms`);
    assert.deepEqual(fragments, ["a"]);
  });

  test("aborting while waiting for headers rethrows the abort, not a timeout or upstream error", async () => {
    upstream.enqueue({ kind: "hang" });
    const controller = new AbortController();
    const seen = upstream.requests.length;
    const pending = collect(provider({ timeoutMs: 5000 }), input(), controller.signal);
    await upstream.until(() => upstream.requests.length > seen, "the upstream request");
    const reason = new Error("superseded by a newer keystroke");
    controller.abort(reason);
    await assert.rejects(pending, (error: unknown) => error === reason);
    await upstream.waitForClientDisconnect(seen, 1000);
  });

  test("an already aborted signal sends nothing", async () => {
    const seen = upstream.requests.length;
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(
      collect(provider(), input(), controller.signal),
      (error: unknown) => error === controller.signal.reason,
    );
    assert.equal(upstream.requests.length, seen);
  });

  test("a consumer that stops reading early drops the upstream request", async () => {
    upstream.enqueue({ kind: "reply", text: ["first", "second", "third"], chunkDelayMs: 300 });
    const fragments: string[] = [];
    await provider().complete(input(), new AbortController().signal, (fragment) => {
      fragments.push(fragment);
      return false;
    });
    assert.deepEqual(fragments, ["first"]);
    await upstream.waitForClientDisconnect(undefined, 500);
  });
});

describe("joinUrl", () => {
  test("joins with exactly one slash whether or not the base ends with one", () => {
    assert.equal(joinUrl("http://127.0.0.1:11434/v1", "completions"), "http://127.0.0.1:11434/v1/completions");
    assert.equal(joinUrl("http://127.0.0.1:11434/v1/", "completions"), "http://127.0.0.1:11434/v1/completions");
    assert.equal(
      joinUrl("http://127.0.0.1:11434/v1//", "/chat/completions"),
      "http://127.0.0.1:11434/v1/chat/completions",
    );
  });

  test("keeps a deeper base path and works without one", () => {
    assert.equal(joinUrl("https://example.com/openai/v1", "completions"), "https://example.com/openai/v1/completions");
    assert.equal(joinUrl("https://example.com", "completions"), "https://example.com/completions");
  });
});
