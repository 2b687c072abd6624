import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { readCompletionStream, readSseEvents } from "@tab-relay/shared";
import { completionBody, errorOf, startTestRelay, type TestRelay } from "../support/relayHarness";
import { startUpstreamStandIn, type UpstreamStandIn } from "../support/upstreamStandIn";

const PATH = "/api/v1/tab/chat/completions";

/** The openai SDK pointed at the relay; tab_context rides along as an extra body field. */
function sdk(relay: TestRelay, apiKey = relay.apiKey) {
  return new OpenAI({ baseURL: `${relay.url}/api/v1/tab`, apiKey, maxRetries: 0 });
}

type TabParams = OpenAI.Chat.ChatCompletionCreateParams & { tab_context: unknown };

/**
 * Writes `bytes` over a bare TCP connection (fetch cannot send a Content-Length that lies), optionally closes the
 * client's side, and reads until the relay closes the connection.
 */
function rawExchange(
  url: string,
  bytes: Buffer,
  options: { halfClose?: boolean } = {},
): Promise<{ head: string; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within 10 s; received ${JSON.stringify(Buffer.concat(chunks).toString("latin1"))}`));
    }, 10_000);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString("utf8");
      const end = text.indexOf("\r\n\r\n");
      resolve({ head: end === -1 ? text : text.slice(0, end), body: end === -1 ? "" : text.slice(end + 4) });
    });
    socket.write(bytes, () => {
      if (options.halfClose) socket.end();
    });
  });
}

describe("Tab completions on the local engine", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay();
  });
  after(() => relay.close());

  test("GET /tab/models lists tab-v1 with the documented pricing and capabilities", async () => {
    const response = await relay.request("/api/v1/tab/models");
    assert.equal(response.status, 200);
    const body = (await response.json()) as { data: { models: Record<string, unknown>[] } };
    const model = body.data.models.find((m) => m["id"] === "tab-v1");
    assert.ok(model);
    assert.equal(model["object"], "model");
    assert.equal(typeof model["created"], "number");
    assert.equal(typeof model["owned_by"], "string");
    assert.deepEqual(model["pricing"], { inputPerMillionUsd: 0.2, outputPerMillionUsd: 0.5 });
    assert.deepEqual(model["capabilities"], {
      streaming: true,
      surfaces: ["any", "code", "notes", "docs", "messages", "tasks", "calendar"],
    });
  });

  test("the openai SDK streams a suggestion", async () => {
    const stream = await sdk(relay).chat.completions.create({
      model: "tab-v1",
      messages: [],
      stream: true,
      tab_context: completionBody().tab_context,
    } as TabParams & { stream: true });
    let text = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.match(text, /return a \+ b;/);
    assert.equal(finish, "stop");
  });

  test("the openai SDK gets one chat.completion when stream is false, with counted usage", async () => {
    const completion = (await sdk(relay).chat.completions.create({
      model: "tab-v1",
      messages: [],
      stream: false,
      tab_context: completionBody().tab_context,
    } as TabParams & { stream: false })) as OpenAI.Chat.ChatCompletion;
    assert.equal(completion.object, "chat.completion");
    const content = completion.choices[0]?.message.content ?? "";
    assert.match(content, /return a \+ b;/);
    assert.equal(completion.choices[0]?.finish_reason, "stop");
    assert.ok(completion.usage && completion.usage.prompt_tokens > 10);
    assert.ok(completion.usage.completion_tokens > 0);
    assert.equal(completion.usage.total_tokens, completion.usage.prompt_tokens + completion.usage.completion_tokens);
  });

  test("omitting stream answers one JSON object", async () => {
    const response = await relay.request(PATH, { method: "POST", json: completionBody() });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /application\/json/);
    const body = (await response.json()) as { choices: { message: { content: string } }[] };
    assert.match(body.choices[0]?.message.content ?? "", /return a \+ b;/);
  });

  test("a stream is text/event-stream and ends with data: [DONE]", async () => {
    const response = await relay.request(PATH, { method: "POST", json: completionBody({}, { stream: true }) });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
    const raw = await response.text();
    assert.ok(raw.trimEnd().endsWith("data: [DONE]"));
    let text = "";
    for await (const event of readCompletionStream(new Response(raw).body as ReadableStream<Uint8Array>))
      if (event.type === "delta") text += event.content;
    assert.match(text, /return a \+ b;/);
  });

  test("stream_options.include_usage adds a usage chunk before [DONE]", async () => {
    const stream = await sdk(relay).chat.completions.create({
      model: "tab-v1",
      messages: [],
      stream: true,
      stream_options: { include_usage: true },
      tab_context: completionBody({ entity_id: "usage.ts" }).tab_context,
    } as TabParams & { stream: true });
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    assert.ok(usage && usage.prompt_tokens > 0);
  });

  test("the openai SDK sees a 401 as an AuthenticationError", async () => {
    await assert.rejects(
      sdk(relay, "svc_ws_nope").chat.completions.create({
        model: "tab-v1",
        messages: [],
        tab_context: completionBody().tab_context,
      } as TabParams),
      (error: unknown) => error instanceof OpenAI.AuthenticationError && error.status === 401,
    );
  });

  describe("validation", () => {
    const cases: [string, unknown, RegExp][] = [
      ["tab_context missing", { model: "tab-v1" }, /^tab_context is required$/],
      ["surface missing", completionBody({ surface: undefined }), /^tab_context\.surface is required$/],
      [
        "workspace_slug missing",
        completionBody({ workspace_slug: undefined }),
        /^tab_context\.workspace_slug is required$/,
      ],
      ["entity_id missing", completionBody({ entity_id: undefined }), /^tab_context\.entity_id is required$/],
      [
        "document_type missing",
        completionBody({ document_type: undefined }),
        /^tab_context\.document_type is required$/,
      ],
      [
        "active_text_before_cursor missing",
        completionBody({ active_text_before_cursor: undefined }),
        /^tab_context\.active_text_before_cursor is required$/,
      ],
      [
        "entity_id a number (zod's detail kept)",
        completionBody({ entity_id: 42 }),
        /^tab_context\.entity_id: Invalid input: expected string, received number$/,
      ],
      [
        "document_type not plaintext or markdown",
        completionBody({ document_type: "html" }),
        /tab_context\.document_type/,
      ],
      ["tasks without taskboard_file_id", completionBody({ surface: "tasks" }), /tab_context\.taskboard_file_id/],
      [
        "text before the cursor over 16,384",
        completionBody({ active_text_before_cursor: "a".repeat(16_385) }),
        /tab_context\.active_text_before_cursor/,
      ],
      [
        "text after the cursor over 16,384",
        completionBody({ active_text_after_cursor: "a".repeat(16_385) }),
        /tab_context\.active_text_after_cursor/,
      ],
      [
        "surrounding context over 32,768",
        completionBody({ surrounding_context: "a".repeat(32_769) }),
        /tab_context\.surrounding_context/,
      ],
      ["max_completion_tokens 0", completionBody({}, { max_completion_tokens: 0 }), /max_completion_tokens/],
      ["max_completion_tokens 501", completionBody({}, { max_completion_tokens: 501 }), /max_completion_tokens/],
      [
        "max_completion_tokens not an integer",
        completionBody({}, { max_completion_tokens: 2.5 }),
        /max_completion_tokens/,
      ],
      ["stream not a boolean", completionBody({}, { stream: "yes" }), /stream/],
      ["an unknown model", completionBody({}, { model: "gpt-4o" }), /model: unknown model "gpt-4o"/],
      ["a body that is an array", [1, 2], /^body: .*expected object/i],
      ["a body that is null", null, /^body: .*expected object/i],
      ["a body that is a string", "complete me", /^body: .*expected object/i],
    ];
    for (const [name, body, message] of cases) {
      test(`400 VALIDATION_ERROR for ${name}`, async () => {
        const response = await relay.request(PATH, { method: "POST", json: body });
        assert.equal(response.status, 400);
        const error = await errorOf(response);
        assert.equal(error.code, "VALIDATION_ERROR");
        assert.match(error.message, message);
      });
    }

    const accepted: [string, unknown][] = [
      [
        "exactly 16,384 characters before and after and 32,768 around",
        completionBody({
          active_text_before_cursor: "b".repeat(16_384),
          active_text_after_cursor: "a".repeat(16_384),
          surrounding_context: "s".repeat(32_768),
        }),
      ],
      ["tasks with taskboard_file_id", completionBody({ surface: "tasks", taskboard_file_id: "board-1" })],
      ["max_completion_tokens 500", completionBody({}, { max_completion_tokens: 500 })],
      ["unknown extra fields", completionBody({ cursor_color: "blue" }, { temperature: 0.9, n: 3 })],
      ["a custom surface", completionBody({ surface: "email", document_type: "markdown" })],
      ["an empty text before the cursor", completionBody({ active_text_before_cursor: "" })],
    ];
    for (const [name, body] of accepted) {
      test(`accepts ${name}`, async () => {
        const response = await relay.request(PATH, { method: "POST", json: body });
        assert.equal(response.status, 200, await response.clone().text());
        await response.arrayBuffer();
      });
    }

    test("400 for a body that is not valid JSON, named body", async () => {
      const response = await relay.request(PATH, {
        method: "POST",
        body: "{nope",
        headers: { "Content-Type": "application/json" },
      });
      assert.equal(response.status, 400);
      assert.deepEqual(await errorOf(response), { code: "VALIDATION_ERROR", message: "body: not valid JSON" });
    });

    test("400 for a body cut short by the client closing its side, named body", async () => {
      const payload = JSON.stringify(completionBody());
      const head = `POST ${PATH} HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer ${relay.apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${payload.length + 100}\r\n\r\n`;
      const answer = await rawExchange(relay.url, Buffer.from(head + payload), { halfClose: true });
      assert.match(answer.head, /^HTTP\/1\.1 400 /);
      const error = JSON.parse(answer.body) as { error: { code: string; message: string } };
      assert.equal(error.error.code, "VALIDATION_ERROR");
      assert.ok(error.error.message.startsWith("body: not received completely"), error.error.message);
    });

    test("415 for a body that is not JSON, naming Content-Type", async () => {
      const response = await relay.request(PATH, {
        method: "POST",
        body: "hello",
        headers: { "Content-Type": "text/plain" },
      });
      assert.equal(response.status, 415);
      const error = await errorOf(response);
      assert.equal(error.code, "UNSUPPORTED_MEDIA_TYPE");
      assert.ok(error.message.startsWith("Content-Type: "), error.message);
    });

    test("415 for a JSON body in another charset or compressed, naming the header", async () => {
      const body = JSON.stringify(completionBody());
      const cases: [Record<string, string>, string][] = [
        [{ "Content-Type": "application/json; charset=utf-16" }, "Content-Type: "],
        [{ "Content-Type": "application/json", "Content-Encoding": "gzip" }, "Content-Encoding: "],
      ];
      for (const [headers, field] of cases) {
        const response = await relay.request(PATH, { method: "POST", body, headers });
        assert.equal(response.status, 415);
        const error = await errorOf(response);
        assert.equal(error.code, "UNSUPPORTED_MEDIA_TYPE");
        assert.ok(error.message.startsWith(field), error.message);
      }
    });

    test("413 for a streamed body that grows over the limit without announcing its length", async () => {
      const big = new TextEncoder().encode(
        JSON.stringify(completionBody({ surrounding_context: "x".repeat(600 * 1024) })),
      );
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < big.length; i += 64 * 1024) controller.enqueue(big.slice(i, i + 64 * 1024));
          controller.close();
        },
      });
      const response = await relay.request(PATH, {
        method: "POST",
        body,
        headers: { "Content-Type": "application/json" },
        duplex: "half",
      } as RequestInit);
      assert.equal(response.status, 413);
    });

    test("413 for a body over the size limit, named body", async () => {
      const response = await relay.request(PATH, {
        method: "POST",
        json: completionBody({ surrounding_context: "x".repeat(600 * 1024) }),
      });
      assert.equal(response.status, 413);
      const error = await errorOf(response);
      assert.equal(error.code, "PAYLOAD_TOO_LARGE");
      assert.match(error.message, /^body: larger than \d+ bytes/);
    });
  });

  test("a repeated request is answered from the cache and counted in /metrics", async () => {
    const body = completionBody({ entity_id: "cache-me.ts" });
    const first = await (await relay.request(PATH, { method: "POST", json: body })).json();
    const before = await (await fetch(`${relay.url}/metrics`)).text();
    const second = await (await relay.request(PATH, { method: "POST", json: body })).json();
    const afterText = await (await fetch(`${relay.url}/metrics`)).text();
    const hits = (text: string) =>
      Number(/tab_relay_completion_cache_total\{result="hit"\} (\d+)/.exec(text)?.[1] ?? 0);
    assert.equal(hits(afterText), hits(before) + 1);
    assert.deepEqual((second as { choices: unknown }).choices, (first as { choices: unknown }).choices);
  });

  test("/metrics reports requests by route and status in Prometheus text format", async () => {
    const response = await fetch(`${relay.url}/metrics`);
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.match(text, /# TYPE tab_relay_http_requests_total counter/);
    assert.match(
      text,
      /tab_relay_http_requests_total\{route="\/api\/v1\/tab\/chat\/completions",method="POST",status="200"\} \d+/,
    );
    assert.match(text, /tab_relay_http_request_duration_seconds_bucket\{.*le="\+Inf"\} \d+/);
    assert.match(text, /tab_relay_upstream_requests_total\{provider="local",outcome="ok"\} \d+/);
  });

  test("/metrics labels a request by its route, however the request spells the mount path: two spellings, one series", async () => {
    const count = (text: string, route: string) =>
      Number(
        new RegExp(
          `tab_relay_http_requests_total\\{route="${route.replace(/\//g, "\\/")}",method="GET",status="200"\\} (\\d+)`,
        ).exec(text)?.[1] ?? 0,
      );
    const before = await (await fetch(`${relay.url}/metrics`)).text();
    const spellings = {
      "/api/v1/tab/models": ["/api/v1/tab/models", "/ApI/V1/tab/models", "/API/V1/TAB/MODELS/"],
      "/v1/tab/models": ["/v1/tab/models", "/V1/Tab/Models"],
    };
    for (const paths of Object.values(spellings)) {
      for (const path of paths) assert.equal((await relay.request(path)).status, 200, path);
    }
    const metrics = await (await fetch(`${relay.url}/metrics`)).text();
    for (const [route, paths] of Object.entries(spellings))
      assert.equal(count(metrics, route) - count(before, route), paths.length, route);
    const routes = new Set([...metrics.matchAll(/route="([^"]*)"/g)].map((match) => match[1]));
    assert.deepEqual(
      [...routes].filter((route) => route !== route?.toLowerCase()),
      [],
      "labels spelled as the requests spelled them",
    );
  });

  test("the completion route answers the same on its own lane and through the router, for every outcome", async () => {
    // The canonical spellings take the lane in front of express; the others go through express's router.
    const lane = [PATH, "/v1/tab/chat/completions", `${PATH}?trace=1`];
    const router = [`${PATH}/`, "/API/V1/TAB/CHAT/COMPLETIONS"];
    // A different entity each time keeps the answers out of the cache, which would send a stream in one piece.
    let entity = 0;
    const fresh = (stream: boolean) => completionBody({ entity_id: `lane-${entity++}` }, { stream });
    const outcomes: [string, (path: string) => Promise<Response>][] = [
      ["a stream", (path) => relay.request(path, { method: "POST", json: fresh(true) })],
      ["one JSON answer", (path) => relay.request(path, { method: "POST", json: fresh(false) })],
      [
        "a validation error",
        (path) => relay.request(path, { method: "POST", json: completionBody({ surface: undefined }) }),
      ],
      [
        "a missing key",
        (path) =>
          fetch(`${relay.url}${path}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(completionBody()),
          }),
      ],
      [
        "a body that is not JSON",
        (path) => relay.request(path, { method: "POST", headers: { "content-type": "text/plain" }, body: "hello" }),
      ],
    ];
    const shape = async (response: Response) => {
      const text = await response.text();
      return {
        status: response.status,
        type: response.headers.get("content-type"),
        limit: response.headers.get("x-ratelimit-limit"),
        requestId: /^req_/.test(response.headers.get("x-request-id") ?? ""),
        body: text.replace(/chatcmpl-[\w-]+/g, "ID").replace(/"created":\d+/g, '"created":0'),
      };
    };
    for (const [name, send] of outcomes) {
      const expected = await shape(await send(PATH));
      assert.ok(expected.requestId, `${name}: X-Request-Id`);
      for (const path of [...lane, ...router])
        assert.deepEqual(await shape(await send(path)), expected, `${name} via ${path}`);
    }
    const metrics = await (await fetch(`${relay.url}/metrics`)).text();
    assert.match(
      metrics,
      /tab_relay_http_requests_total\{route="\/v1\/tab\/chat\/completions",method="POST",status="200"\} \d+/,
    );
  });

  test("/healthz answers 200 without auth", async () => {
    const response = await fetch(`${relay.url}/healthz`);
    assert.equal(response.status, 200);
  });

  test("unknown routes answer 404 in the error envelope", async () => {
    const response = await relay.request("/api/v1/nothing-here");
    assert.equal(response.status, 404);
    assert.equal((await errorOf(response)).code, "NOT_FOUND");
  });
});

describe("Tab completions through an OpenAI-compatible upstream", () => {
  let upstream: UpstreamStandIn;
  let chat: TestRelay;
  let completions: TestRelay;
  before(async () => {
    upstream = await startUpstreamStandIn();
    const env = {
      TAB_RELAY_UPSTREAM_URL: upstream.url,
      TAB_RELAY_UPSTREAM_MODEL: "stand-in-coder",
      TAB_RELAY_UPSTREAM_TIMEOUT_MS: "400",
      TAB_RELAY_CACHE_ENTRIES: "0",
    };
    chat = await startTestRelay({ env: { ...env, TAB_RELAY_UPSTREAM_API: "chat" } });
    completions = await startTestRelay({ env: { ...env, TAB_RELAY_UPSTREAM_API: "completions" } });
  });
  after(async () => {
    await chat.close();
    await completions.close();
    await upstream.close();
  });

  for (const mode of ["chat", "completions"] as const) {
    test(`${mode} API: the SDK streams the upstream's text, sent with temperature 0.2 and the token limit`, async () => {
      const relay = mode === "chat" ? chat : completions;
      upstream.enqueue({ kind: "reply", text: "\n  return a + b;\n}", chunks: 4 });
      const stream = await sdk(relay).chat.completions.create({
        model: "tab-v1",
        messages: [],
        stream: true,
        max_completion_tokens: 64,
        tab_context: completionBody().tab_context,
      } as TabParams & { stream: true });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      assert.equal(text, "\n  return a + b;\n}");
      const sent = upstream.requests.at(-1);
      assert.equal(sent?.path, mode === "chat" ? "/v1/chat/completions" : "/v1/completions");
      const body = sent?.body as Record<string, unknown>;
      assert.equal(body["model"], "stand-in-coder");
      assert.equal(body["temperature"], 0.2);
      assert.equal(body["max_tokens"], 64);
      if (mode === "completions") {
        assert.match(String(body["prompt"]), /function add\(a, b\) \{$/);
        assert.equal(typeof body["suffix"], "string");
      } else {
        assert.ok(Array.isArray(body["messages"]));
      }
    });

    test(`${mode} API: the SDK's non-streaming call gets the whole text`, async () => {
      const relay = mode === "chat" ? chat : completions;
      upstream.enqueue({ kind: "reply", text: " + b;", chunks: 2 });
      const completion = (await sdk(relay).chat.completions.create({
        model: "tab-v1",
        messages: [],
        tab_context: completionBody({ active_text_before_cursor: "return a" }).tab_context,
      } as TabParams)) as OpenAI.Chat.ChatCompletion;
      assert.equal(completion.choices[0]?.message.content, " + b;");
    });
  }

  test("chat-model fences and chatter are stripped", async () => {
    upstream.enqueue({ kind: "reply", text: "Here is the completion:\n```ts\n  return a + b;\n}\n```", chunks: 5 });
    const response = await chat.request(PATH, {
      method: "POST",
      json: completionBody({ active_text_before_cursor: "function add(a, b) {\n" }),
    });
    const body = (await response.json()) as { choices: { message: { content: string } }[] };
    assert.equal(body.choices[0]?.message.content, "  return a + b;\n}");
  });

  /** The postprocessed text and the raw text of one stream. */
  async function readWithRaw(response: Response): Promise<{ text: string; raw: string; rawFrames: number }> {
    let text = "";
    let raw = "";
    let rawFrames = 0;
    for await (const event of readSseEvents(response.body as ReadableStream<Uint8Array>)) {
      if (event.event === "raw") {
        rawFrames += 1;
        raw += (JSON.parse(event.data) as { text: string }).text;
      } else if (event.data !== "[DONE]") {
        text +=
          (JSON.parse(event.data) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? "";
      }
    }
    return { text, raw, rawFrames };
  }

  test("tab_raw_text streams the model's own text as raw frames beside the postprocessed answer", async () => {
    const said = "Here is the completion:\n```ts\n  return a + b;\n}\n```";
    upstream.enqueue({ kind: "reply", text: said, chunks: 5 });
    const response = await chat.request(PATH, {
      method: "POST",
      json: completionBody(
        { active_text_before_cursor: "function add(a, b) {\n" },
        { stream: true, tab_raw_text: true },
      ),
    });
    assert.equal(response.status, 200);
    const { text, raw } = await readWithRaw(response);
    assert.equal(raw, said);
    assert.equal(text, "  return a + b;\n}");
  });

  test("a stream without tab_raw_text carries no raw frames", async () => {
    upstream.enqueue({ kind: "reply", text: "Here is the completion:\n  return a + b;", chunks: 3 });
    const response = await chat.request(PATH, {
      method: "POST",
      json: completionBody({ active_text_before_cursor: "function add(a, b) {\n" }, { stream: true }),
    });
    const { text, rawFrames } = await readWithRaw(response);
    assert.equal(rawFrames, 0);
    assert.equal(text, "  return a + b;");
  });

  test("a cached answer carries the raw text it was made from", async () => {
    const cached = await startTestRelay({
      env: {
        TAB_RELAY_UPSTREAM_URL: upstream.url,
        TAB_RELAY_UPSTREAM_MODEL: "stand-in-coder",
        TAB_RELAY_UPSTREAM_API: "chat",
      },
    });
    try {
      const said = "```ts\n  return a * b;\n```";
      upstream.enqueue({ kind: "reply", text: said, chunks: 2 });
      const json = completionBody(
        { active_text_before_cursor: "function multiply(a, b) {\n" },
        { stream: true, tab_raw_text: true },
      );
      const first = await readWithRaw(await cached.request(PATH, { method: "POST", json }));
      const asked = upstream.requests.length;
      const second = await readWithRaw(await cached.request(PATH, { method: "POST", json }));
      assert.equal(upstream.requests.length, asked, "the second request reached the upstream");
      assert.deepEqual({ text: second.text, raw: second.raw }, { text: first.text, raw: said });
    } finally {
      await cached.close();
    }
  });

  test("tab_raw_text without a stream is refused, naming the field", async () => {
    const response = await chat.request(PATH, {
      method: "POST",
      json: completionBody({}, { stream: false, tab_raw_text: true }),
    });
    assert.equal(response.status, 400);
    const error = await errorOf(response);
    assert.equal(error.code, "VALIDATION_ERROR");
    assert.match(error.message, /^tab_raw_text: /);
  });

  test("an upstream 500 becomes 502 UPSTREAM_ERROR", async () => {
    upstream.enqueue({ kind: "error", status: 500, body: { error: { message: "model crashed" } } });
    const response = await chat.request(PATH, { method: "POST", json: completionBody({}, { stream: true }) });
    assert.equal(response.status, 502);
    const error = await errorOf(response);
    assert.equal(error.code, "UPSTREAM_ERROR");
    assert.match(error.message, /500/);
  });

  test("a hanging upstream becomes 504 UPSTREAM_TIMEOUT", async () => {
    upstream.enqueue({ kind: "hang" });
    const started = performance.now();
    const response = await chat.request(PATH, { method: "POST", json: completionBody() });
    assert.equal(response.status, 504);
    assert.equal((await errorOf(response)).code, "UPSTREAM_TIMEOUT");
    assert.ok(performance.now() - started < 3000);
  });

  test("an upstream that disconnects mid-stream ends the stream with an error event and no [DONE]", async () => {
    upstream.enqueue({ kind: "disconnect", sent: ["\n  return", " a"] });
    const response = await chat.request(PATH, { method: "POST", json: completionBody({}, { stream: true }) });
    assert.equal(response.status, 200);
    const events = [];
    for await (const event of readSseEvents(response.body as ReadableStream<Uint8Array>)) events.push(event);
    const last = events.at(-1);
    assert.equal(last?.event, "error");
    assert.equal(JSON.parse(last?.data ?? "{}").error.code, "UPSTREAM_ERROR");
    assert.ok(!events.some((e) => e.data === "[DONE]"));
  });

  test("the SDK raises an error for a mid-stream failure", async () => {
    upstream.enqueue({ kind: "disconnect", sent: ["\n  return"] });
    const stream = await sdk(chat).chat.completions.create({
      model: "tab-v1",
      messages: [],
      stream: true,
      tab_context: completionBody().tab_context,
    } as TabParams & { stream: true });
    await assert.rejects(async () => {
      for await (const _chunk of stream) void _chunk;
    });
  });

  test("a client that disconnects mid-stream aborts the upstream request at once", async () => {
    upstream.enqueue({ kind: "reply", text: ["\n", "  return", " a", " +", " b;", "\n}"], chunkDelayMs: 300 });
    const controller = new AbortController();
    const response = await chat.request(PATH, {
      method: "POST",
      json: completionBody({}, { stream: true }),
      signal: controller.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const index = upstream.requests.length - 1;
    const started = performance.now();
    controller.abort();
    await upstream.waitForClientDisconnect(index, 1000);
    assert.ok(performance.now() - started < 1000);
  });

  test("a client that disconnects before the upstream answers aborts it too", async () => {
    upstream.enqueue({ kind: "reply", text: "late", headersDelayMs: 2000 });
    const controller = new AbortController();
    const index = upstream.requests.length;
    const pending = chat
      .request(PATH, {
        method: "POST",
        json: completionBody({ entity_id: "early-abort.ts" }),
        signal: controller.signal,
      })
      .catch(() => undefined);
    await upstream.until(() => upstream.requests.length > index, "the upstream request");
    controller.abort();
    await pending;
    await upstream.waitForClientDisconnect(index, 1000);
  });

  test("upstream failures are counted in /metrics", async () => {
    const text = await (await fetch(`${chat.url}/metrics`)).text();
    assert.match(text, /tab_relay_upstream_errors_total\{provider="openai",code="UPSTREAM_ERROR"\} [1-9]/);
    assert.match(text, /tab_relay_upstream_errors_total\{provider="openai",code="UPSTREAM_TIMEOUT"\} [1-9]/);
  });
});
