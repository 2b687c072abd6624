import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { readSseEvents } from "@tab-relay/shared";
import { startLlamaCppStandIn } from "./llamaCpp";
import { startMistralStandIn } from "./mistral";
import { startOllamaStandIn } from "./ollama";
import type { StandIn } from "./server";
import { startTgiStandIn } from "./tgi";
import { startVllmStandIn } from "./vllm";

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** The raw data lines of a stream, `[DONE]` included as itself. */
async function dataOf(response: Response): Promise<string[]> {
  assert.ok(response.body);
  const out: string[] = [];
  for await (const event of readSseEvents(response.body)) out.push(event.data);
  return out;
}

describe("vLLM stand-in", () => {
  let vllm: StandIn & { model: string };
  let flat: StandIn;
  before(async () => {
    vllm = await startVllmStandIn({ model: "qwen-coder" });
    flat = await startVllmStandIn({ model: "qwen-coder", errorShape: "flat", extraFields: "forbid" });
  });
  after(async () => {
    await vllm.close();
    await flat.close();
  });

  test("any non-null suffix, even an empty one, is vLLM's 400; null passes", async () => {
    for (const suffix of ["}", ""]) {
      const response = await post(`${vllm.origin}/v1/completions`, { model: "qwen-coder", prompt: "a", suffix });
      assert.equal(response.status, 400);
      assert.equal(
        await response.text(),
        '{"error":{"message":"suffix is not currently supported","type":"BadRequestError","param":null,"code":400}}',
      );
    }
    assert.equal(
      (await post(`${vllm.origin}/v1/completions`, { model: "qwen-coder", prompt: "a", suffix: null })).status,
      200,
    );
  });

  test("an unknown model is a 404 before the suffix is looked at", async () => {
    const response = await post(`${vllm.origin}/v1/completions`, { model: "other", prompt: "a", suffix: "b" });
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), {
      error: { message: "The model `other` does not exist.", type: "NotFoundError", param: "model", code: 404 },
    });
  });

  test("the older flat error shape, and unknown fields refused like mid-2024 releases", async () => {
    assert.deepEqual(await (await post(`${flat.origin}/v1/completions`, { prompt: "a", suffix: "b" })).json(), {
      object: "error",
      message: "suffix is not currently supported",
      type: "BadRequestError",
      param: null,
      code: 400,
    });
    const extra = await post(`${flat.origin}/v1/completions`, { prompt: "a", input_prefix: "x" });
    assert.equal(extra.status, 400);
    assert.match(JSON.stringify(await extra.json()), /Extra inputs are not permitted.*body\.input_prefix/);
  });

  test("wrong types and an empty prompt are 400s", async () => {
    const wrong = await post(`${vllm.origin}/v1/completions`, { prompt: "a", max_tokens: "64" });
    assert.equal(wrong.status, 400);
    assert.equal(((await wrong.json()) as { error: { param: string } }).error.param, "body.max_tokens");
    assert.equal((await post(`${vllm.origin}/v1/completions`, { prompt: "" })).status, 400);
  });

  test("streams choices[0].text chunks, finish_reason on the last, then [DONE], and applies stops", async () => {
    vllm.enqueue({ text: ["a +", " b;", "<|file_sep|>x"] });
    const response = await post(`${vllm.origin}/v1/completions`, {
      model: "qwen-coder",
      prompt: "p",
      stream: true,
      stop: ["<|file_sep|>"],
    });
    assert.equal(response.headers.get("content-type"), "text/event-stream; charset=utf-8");
    const data = await dataOf(response);
    assert.equal(data.at(-1), "[DONE]");
    const chunks = data
      .slice(0, -1)
      .map((line) => JSON.parse(line) as { choices: { text: string; finish_reason: string | null }[] });
    assert.deepEqual(
      chunks.map((chunk) => chunk.choices[0]?.text),
      ["a +", " b;"],
    );
    assert.deepEqual(
      chunks.map((chunk) => chunk.choices[0]?.finish_reason),
      [null, "stop"],
    );
  });

  test("serves /v1/models, /health, and FastAPI's 404 and 405", async () => {
    const models = (await (await fetch(`${vllm.origin}/v1/models`)).json()) as {
      data: { id: string; owned_by: string; max_model_len: number }[];
    };
    assert.equal(models.data[0]?.id, "qwen-coder");
    assert.equal(models.data[0]?.owned_by, "vllm");
    assert.equal((await fetch(`${vllm.origin}/health`)).status, 200);
    const missing = await post(`${vllm.origin}/infill`, {});
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { detail: "Not Found" });
    assert.equal((await fetch(`${vllm.origin}/v1/completions`)).status, 405);
  });
});

describe("llama.cpp stand-in", () => {
  let llama: StandIn;
  let ignoring: StandIn;
  let noFim: StandIn;
  before(async () => {
    llama = await startLlamaCppStandIn();
    ignoring = await startLlamaCppStandIn({ suffixOnCompletions: "ignore" });
    noFim = await startLlamaCppStandIn({ fim: false });
  });
  after(async () => {
    await llama.close();
    await ignoring.close();
    await noFim.close();
  });

  test("/infill streams content events, the last with stop:true and no [DONE]", async () => {
    llama.enqueue({ text: ["x *", " 2"] });
    const response = await post(`${llama.origin}/infill`, {
      input_prefix: "a",
      input_suffix: "b",
      input_extra: [{ filename: "f.py", text: "t" }],
      stream: true,
    });
    const data = (await dataOf(response)).map((line) => JSON.parse(line) as { content: string; stop: boolean });
    assert.deepEqual(
      data.map((event) => [event.content, event.stop]),
      [
        ["x *", false],
        [" 2", false],
        ["", true],
      ],
    );
  });

  test("/infill checks input_extra, and a missing input_prefix ends in a 500", async () => {
    const bad = await post(`${llama.origin}/infill`, {
      input_prefix: "a",
      input_suffix: "b",
      input_extra: [{ filename: 3, text: "t" }],
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), {
      error: {
        code: 400,
        message: 'extra_context chunk\'s "filename" field must be a string',
        type: "invalid_request_error",
      },
    });
    assert.equal((await post(`${llama.origin}/infill`, { input_suffix: "b" })).status, 500);
  });

  test("/infill on a model without FIM tokens is a 501", async () => {
    const response = await post(`${noFim.origin}/infill`, { input_prefix: "a", input_suffix: "b" });
    assert.equal(response.status, 501);
    assert.equal(((await response.json()) as { error: { type: string } }).error.type, "not_supported_error");
  });

  test("/v1/completions refuses suffix, even null, with a 500; the newer server ignores it", async () => {
    for (const suffix of ["b", null]) {
      const response = await post(`${llama.origin}/v1/completions`, { prompt: "a", suffix });
      assert.equal(response.status, 500);
      assert.equal(
        await response.text(),
        '{"error":{"code":500,"message":"Unsupported param: suffix","type":"server_error"}}',
      );
    }
    ignoring.enqueue("plain");
    const response = await post(`${ignoring.origin}/v1/completions`, { prompt: "a", suffix: "b" });
    const body = (await response.json()) as { choices: { text: string }[]; timings: unknown; id: string };
    assert.equal(body.choices[0]?.text, "plain");
    assert.ok(body.timings);
    assert.match(body.id, /^chatcmpl-/);
  });

  test("serves /health, /props and /v1/models; an unknown route is not_found_error", async () => {
    assert.deepEqual(await (await fetch(`${llama.origin}/health`)).json(), { status: "ok" });
    assert.equal(
      ((await (await fetch(`${llama.origin}/props`)).json()) as { default_generation_settings: { n_ctx: number } })
        .default_generation_settings.n_ctx,
      4096,
    );
    const models = (await (await fetch(`${llama.origin}/v1/models`)).json()) as {
      models: unknown[];
      data: { owned_by: string }[];
    };
    assert.equal(models.models.length, 1);
    assert.equal(models.data[0]?.owned_by, "llamacpp");
    assert.equal((await post(`${llama.origin}/v1/fim/completions`, {})).status, 404);
  });
});

describe("Ollama stand-in", () => {
  let ollama: StandIn & { rendered: string[] };
  before(async () => {
    ollama = await startOllamaStandIn();
  });
  after(() => ollama.close());

  test("a suffix runs the model's FIM template; a model without one does not support insert", async () => {
    assert.equal(
      (await post(`${ollama.origin}/v1/completions`, { model: "qwen2.5-coder:1.5b", prompt: "a", suffix: "b" })).status,
      200,
    );
    assert.equal(ollama.rendered.at(-1), "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>");
    const refused = await post(`${ollama.origin}/v1/completions`, { model: "llama3.2:1b", prompt: "a", suffix: "b" });
    assert.equal(refused.status, 400);
    assert.equal(
      await refused.text(),
      '{"error":{"message":"registry.ollama.ai/library/llama3.2:1b does not support insert","type":"invalid_request_error","param":null,"code":null}}\n',
    );
  });

  test("Go's decoding errors, stop's own check, and an unknown model", async () => {
    const wrong = await post(`${ollama.origin}/v1/completions`, { model: "qwen2.5-coder:1.5b", prompt: ["a"] });
    assert.equal(wrong.status, 400);
    assert.match(
      await wrong.text(),
      /cannot unmarshal array into Go struct field CompletionRequest\.prompt of type string/,
    );
    assert.equal(
      (await post(`${ollama.origin}/v1/completions`, { model: "qwen2.5-coder:1.5b", prompt: "a", stop: 3 })).status,
      400,
    );
    assert.equal((await post(`${ollama.origin}/v1/completions`, { model: "nope", prompt: "a" })).status, 404);
  });

  test("streams fp_ollama chunks then [DONE]; /api/version and gin's 404", async () => {
    ollama.enqueue("done");
    const data = await dataOf(
      await post(`${ollama.origin}/v1/completions`, { model: "qwen2.5-coder:1.5b", prompt: "a", stream: true }),
    );
    assert.equal(data.at(-1), "[DONE]");
    assert.match(data[0] ?? "", /"system_fingerprint":"fp_ollama"/);
    assert.ok(((await (await fetch(`${ollama.origin}/api/version`)).json()) as { version: string }).version);
    const missing = await post(`${ollama.origin}/infill`, {});
    assert.equal(missing.status, 404);
    assert.equal(await missing.text(), "404 page not found");
  });

  test("/api/chat binds as Ollama's ChatHandler: unknown fields ignored, wrong types 400, bad options 500", async () => {
    const chat = (body: Record<string, unknown>) =>
      post(`${ollama.origin}/api/chat`, {
        model: "llama3.2:1b",
        messages: [{ role: "user", content: "hi" }],
        stream: false,
        ...body,
      });
    ollama.enqueue("hello");
    const ok = await chat({ not_a_field: 1, options: { temperature: 0, num_predict: 12.7, not_an_option: "x" } });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("content-type"), "application/json; charset=utf-8");
    const answer = (await ok.json()) as { message: { role: string; content: string }; done: boolean };
    assert.deepEqual([answer.message, answer.done], [{ role: "assistant", content: "hello" }, true]);
    const stream = await chat({ stream: "no" });
    assert.equal(stream.status, 400);
    assert.deepEqual(await stream.json(), {
      error: "json: cannot unmarshal string into Go struct field ChatRequest.stream of type bool",
    });
    assert.equal((await chat({ messages: [{ role: "user", content: 7 }] })).status, 400);
    assert.equal((await chat({ top_logprobs: 21 })).status, 400);
    assert.deepEqual(await (await chat({ model: "" })).json(), { error: "model is required" });
    assert.equal((await chat({ model: "nope" })).status, 404);
    const option = await chat({ options: { temperature: "0" } });
    assert.equal(option.status, 500);
    assert.deepEqual(await option.json(), { error: 'option "temperature" must be of type float32' });
    assert.equal((await chat({ options: { stop: ["a", 1] } })).status, 500);
  });

  test("/api/show lists insert only for a model whose template takes a suffix; native errors", async () => {
    const capabilities = async (model: string) =>
      ((await (await post(`${ollama.origin}/api/show`, { model })).json()) as { capabilities: string[] }).capabilities;
    assert.deepEqual(await capabilities("qwen2.5-coder:1.5b"), ["completion", "insert"]);
    assert.deepEqual(await capabilities("llama3.2:1b"), ["completion"]);
    const unknown = await post(`${ollama.origin}/api/show`, { model: "nope" });
    assert.equal(unknown.status, 404);
    assert.deepEqual(await unknown.json(), { error: "model 'nope' not found" });
    const empty = await fetch(`${ollama.origin}/api/show`, { method: "POST" });
    assert.equal(empty.status, 400);
    assert.deepEqual(await empty.json(), { error: "missing request body" });
  });
});

describe("Mistral stand-in", () => {
  let mistral: StandIn;
  before(async () => {
    mistral = await startMistralStandIn({ apiKey: "mk-test" });
  });
  after(() => mistral.close());

  test("answers chat-shaped chunks for /v1/fim/completions, then [DONE]", async () => {
    mistral.enqueue({ text: ["add(", "a, b)"] });
    const data = await dataOf(
      await post(
        `${mistral.origin}/v1/fim/completions`,
        { model: "codestral-latest", prompt: "def ", suffix: "", stream: true },
        { authorization: "Bearer mk-test" },
      ),
    );
    assert.equal(data.at(-1), "[DONE]");
    const contents = data
      .slice(0, -1)
      .map((line) => (JSON.parse(line) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content);
    assert.deepEqual(contents, ["", "add(", "a, b)"]);
  });

  test("422 for a missing, mistyped or unknown field; 401 without the key; no /v1/completions", async () => {
    const auth = { authorization: "Bearer mk-test" };
    const missing = await post(`${mistral.origin}/v1/fim/completions`, { model: "codestral-latest" }, auth);
    assert.equal(missing.status, 422);
    assert.deepEqual(((await missing.json()) as { detail: { loc: string[] }[] }).detail[0]?.loc, ["body", "prompt"]);
    assert.equal(
      (
        await post(
          `${mistral.origin}/v1/fim/completions`,
          { model: "codestral-latest", prompt: "a", max_tokens: 1.5 },
          auth,
        )
      ).status,
      422,
    );
    assert.equal(
      (
        await post(
          `${mistral.origin}/v1/fim/completions`,
          { model: "codestral-latest", prompt: "a", n_predict: 5 },
          auth,
        )
      ).status,
      422,
    );
    assert.equal(
      (await post(`${mistral.origin}/v1/fim/completions`, { model: "codestral-latest", prompt: "a" })).status,
      401,
    );
    assert.equal(
      (await post(`${mistral.origin}/v1/completions`, { model: "codestral-latest", prompt: "a" }, auth)).status,
      404,
    );
  });

  test("/v1/models needs the key and marks Codestral models as taking FIM", async () => {
    assert.equal((await fetch(`${mistral.origin}/v1/models`)).status, 401);
    const list = (await (
      await fetch(`${mistral.origin}/v1/models`, { headers: { authorization: "Bearer mk-test" } })
    ).json()) as { data: { id: string; owned_by: string; capabilities: { completion_fim: boolean } }[] };
    assert.deepEqual(
      list.data.map((card) => [card.id, card.owned_by, card.capabilities.completion_fim]),
      [
        ["codestral-latest", "mistralai", true],
        ["codestral-2508", "mistralai", true],
      ],
    );
  });
});

describe("TGI stand-in", () => {
  let tgi: StandIn;
  before(async () => {
    tgi = await startTgiStandIn();
  });
  after(() => tgi.close());

  test("suffix is TGI's 422; a null suffix passes", async () => {
    const response = await post(`${tgi.origin}/v1/completions`, { prompt: "a", suffix: "b" });
    assert.equal(response.status, 422);
    assert.equal(
      await response.text(),
      '{"error":"Suffix is not supported and can be achieved by preprocessing the prompt.","error_type":"suffix not supported"}',
    );
    assert.equal((await post(`${tgi.origin}/v1/completions`, { prompt: "a", suffix: null })).status, 200);
  });

  test("at most four stop sequences, as an array", async () => {
    const many = await post(`${tgi.origin}/v1/completions`, { prompt: "a", stop: ["1", "2", "3", "4", "5"] });
    assert.equal(many.status, 422);
    assert.equal(
      ((await many.json()) as { error: string }).error,
      "Input validation error: `stop` supports up to 4 stop sequences. Given: 5",
    );
    assert.equal((await post(`${tgi.origin}/v1/completions`, { prompt: "a", stop: "\n" })).status, 422);
    assert.equal((await post(`${tgi.origin}/v1/completions`, { prompt: "a", stop: ["1", "2", "3", "4"] })).status, 200);
  });

  test("/info is the router's Info; /v1/models has one card owned by the model id", async () => {
    const info = (await (await fetch(`${tgi.origin}/info`)).json()) as {
      model_id: string;
      router: string;
      max_stop_sequences: number;
    };
    assert.deepEqual(
      [info.model_id, info.router, info.max_stop_sequences],
      ["bigcode/starcoder2-3b", "text-generation-router", 4],
    );
    assert.deepEqual(await (await fetch(`${tgi.origin}/v1/models`)).json(), {
      object: "list",
      data: [{ id: "bigcode/starcoder2-3b", object: "model", created: 0, owned_by: "bigcode/starcoder2-3b" }],
    });
  });
});
