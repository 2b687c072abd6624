import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  TEMPLATE_ADVICE,
  envLines,
  isLlamaCppLoading,
  kindFromHost,
  looksLikeInstruct,
  pickModel,
  readLlamaCppProps,
  readModelList,
  readOllamaCapabilities,
  readOllamaVersion,
  readTgiInfo,
  recommend,
  serverUrls,
  shellWord,
} from "./identify";

describe("reading a model list", () => {
  test("vLLM, llama.cpp and Mistral name themselves in owned_by", () => {
    assert.deepEqual(
      readModelList({
        object: "list",
        data: [{ id: "Qwen/Qwen2.5-Coder-7B", object: "model", owned_by: "vllm", root: "/m", max_model_len: 32768 }],
      }),
      {
        models: [{ id: "Qwen/Qwen2.5-Coder-7B", ownedBy: "vllm" }],
        kind: "vllm",
        evidence: 'owned_by "vllm" in its model list',
      },
    );
    const llama = {
      models: [{ name: "/m/q.gguf" }],
      object: "list",
      data: [{ id: "/m/q.gguf", object: "model", owned_by: "llamacpp", meta: null }],
    };
    assert.equal(readModelList(llama)?.kind, "llama.cpp");
    const mistral = readModelList({
      object: "list",
      data: [
        { id: "mistral-small-latest", owned_by: "mistralai", capabilities: { completion_fim: false } },
        { id: "codestral-latest", owned_by: "mistralai", capabilities: { completion_fim: true } },
      ],
    });
    assert.equal(mistral?.kind, "mistral");
    assert.deepEqual(
      mistral?.models.map((model) => [model.id, model.fim]),
      [
        ["mistral-small-latest", false],
        ["codestral-latest", true],
      ],
    );
  });

  test("Ollama's namespace and TGI's model id as owner say nothing about the server", () => {
    assert.deepEqual(
      readModelList({
        object: "list",
        data: [{ id: "qwen2.5-coder:1.5b", object: "model", created: 1, owned_by: "library" }],
      }),
      {
        models: [{ id: "qwen2.5-coder:1.5b", ownedBy: "library" }],
      },
    );
    assert.equal(
      readModelList({
        object: "list",
        data: [{ id: "bigcode/starcoder2-3b", object: "model", created: 0, owned_by: "bigcode/starcoder2-3b" }],
      })?.kind,
      undefined,
    );
  });

  test("Ollama's empty list is data: null; anything without a data list is not a model list", () => {
    assert.deepEqual(readModelList({ object: "list", data: null }), { models: [] });
    assert.equal(readModelList({ detail: "Not Found" }), undefined);
    assert.equal(readModelList({ data: null }), undefined);
    assert.equal(readModelList("<html>"), undefined);
    assert.deepEqual(readModelList({ data: [{ id: "" }, { name: "x" }, { id: "kept" }] }), {
      models: [{ id: "kept" }],
    });
  });
});

describe("reading the routes one kind of server has", () => {
  test("llama.cpp's /props gives the model file, context size and build", () => {
    assert.deepEqual(
      readLlamaCppProps({
        default_generation_settings: { n_ctx: 4096, params: {} },
        total_slots: 1,
        model_path: "/m/q.gguf",
        build_info: "b6500",
      }),
      {
        modelPath: "/m/q.gguf",
        contextSize: 4096,
        build: "b6500",
      },
    );
    assert.deepEqual(readLlamaCppProps({ default_generation_settings: {} }), {});
    assert.equal(readLlamaCppProps({ model_path: "/m/q.gguf" }), undefined);
  });

  test("Ollama's /api/version is exactly one version field", () => {
    assert.equal(readOllamaVersion({ version: "0.12.6" }), "0.12.6");
    assert.equal(readOllamaVersion({ version: "0.9.0", git: "x" }), undefined);
    assert.equal(readOllamaVersion({ version: 1 }), undefined);
    assert.equal(readOllamaVersion(["0.1"]), undefined);
  });

  test("TGI's /info has a model id and its router's name or stop limit", () => {
    assert.deepEqual(
      readTgiInfo({ model_id: "bigcode/starcoder2-3b", router: "text-generation-router", version: "3.3.6" }),
      { modelId: "bigcode/starcoder2-3b", version: "3.3.6" },
    );
    assert.deepEqual(readTgiInfo({ model_id: "m", max_stop_sequences: 4 }), { modelId: "m" });
    assert.equal(readTgiInfo({ model_id: "m" }), undefined);
  });

  test("llama.cpp's loading answer, Ollama's capabilities, Mistral's hosts", () => {
    assert.equal(
      isLlamaCppLoading(503, { error: { code: 503, message: "Loading model", type: "unavailable_error" } }),
      true,
    );
    assert.equal(isLlamaCppLoading(503, { error: "unhealthy", error_type: "healthcheck" }), false);
    assert.deepEqual(readOllamaCapabilities({ capabilities: ["completion", "insert", 3] }), ["completion", "insert"]);
    assert.equal(readOllamaCapabilities({ model_info: {} }), undefined);
    assert.equal(kindFromHost("https://api.mistral.ai/v1"), "mistral");
    assert.equal(kindFromHost("https://codestral.mistral.ai/v1"), "mistral");
    assert.equal(kindFromHost("https://notmistral.ai/v1"), undefined);
  });
});

describe("the server's root and OpenAI base", () => {
  test("a URL ending in /v1 is the base, and its root is the URL without it", () => {
    assert.deepEqual(serverUrls("http://127.0.0.1:8000/v1/"), {
      given: "http://127.0.0.1:8000/v1",
      root: "http://127.0.0.1:8000",
      bases: ["http://127.0.0.1:8000/v1"],
    });
    assert.deepEqual(serverUrls("https://gw.example/llm/v1?x=1"), {
      given: "https://gw.example/llm/v1",
      root: "https://gw.example/llm",
      bases: ["https://gw.example/llm/v1"],
    });
  });

  test("a URL without /v1 is the root, with /v1 tried before the URL itself", () => {
    assert.deepEqual(serverUrls("http://127.0.0.1:8080"), {
      given: "http://127.0.0.1:8080",
      root: "http://127.0.0.1:8080",
      bases: ["http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"],
    });
    assert.deepEqual(serverUrls("http://h/openai/"), {
      given: "http://h/openai",
      root: "http://h/openai",
      bases: ["http://h/openai/v1", "http://h/openai"],
    });
  });
});

describe("picking the model", () => {
  const listed = [{ id: "qwen2.5-coder:1.5b" }, { id: "llama3.2:latest" }];

  test("the one given, said whether the server lists it (Ollama's name without a tag is :latest)", () => {
    assert.deepEqual(pickModel(listed, "llama3.2"), {
      id: "llama3.2",
      why: "as given; the server lists it",
      listed: true,
    });
    assert.deepEqual(pickModel(listed, "gpt-4o"), {
      id: "gpt-4o",
      why: "as given; the server does not list it",
      listed: false,
    });
    assert.deepEqual(pickModel([], "tgi"), { id: "tgi", why: "as given" });
  });

  test("else the only one listed, the first Mistral marks as taking FIM, or the first", () => {
    assert.equal(pickModel([{ id: "a" }], undefined)?.why, "the only model the server lists");
    assert.equal(
      pickModel(
        [
          { id: "mistral-large", fim: false },
          { id: "codestral-2508", fim: true },
        ],
        undefined,
      )?.id,
      "codestral-2508",
    );
    assert.deepEqual(pickModel(listed, undefined), {
      id: "qwen2.5-coder:1.5b",
      why: "the first of the 2 listed; choose another with --upstream-model",
      listed: true,
    });
    assert.equal(pickModel([], undefined), undefined);
  });
});

describe("recommending a mode", () => {
  test("vLLM with a Qwen coder: fim with qwen-coder", () => {
    const r = recommend({ kind: "vllm", model: "Qwen/Qwen2.5-Coder-7B" });
    assert.deepEqual([r.api, r.fimTemplate, r.advice], ["fim", "qwen-coder", undefined]);
    assert.match(r.reason, /vLLM refuses suffix/);
  });

  test("every server that refuses suffix gets fim and the family of the name", () => {
    for (const kind of ["vllm", "tgi", "openai-compatible", undefined] as const) {
      assert.deepEqual(
        [
          recommend({ kind, model: "bigcode/starcoder2-15b" }).fimTemplate,
          recommend({ kind, model: "deepseek-ai/deepseek-coder-6.7b-base" }).fimTemplate,
        ],
        ["starcoder2", "deepseek-coder"],
        String(kind),
      );
    }
  });

  test("a code model whose name matches no family gets fim with template advice", () => {
    const r = recommend({ kind: "tgi", model: "bigcode/starcoder" });
    assert.deepEqual([r.api, r.fimTemplate, r.advice], ["fim", undefined, TEMPLATE_ADVICE]);
    assert.match(TEMPLATE_ADVICE, /qwen-coder, starcoder2, codellama, deepseek-coder, codestral, codegemma/);
  });

  test("an instruction model, or a name that is no code model, gets chat", () => {
    assert.equal(recommend({ kind: "vllm", model: "Qwen/Qwen2.5-Coder-7B-Instruct" }).api, "chat");
    assert.equal(recommend({ kind: "tgi", model: "google/codegemma-7b-it" }).api, "chat");
    assert.equal(recommend({ kind: "vllm", model: "meta-llama/Llama-3.1-8B" }).api, "chat");
    assert.equal(recommend({ kind: "openai-compatible", model: "gpt-4o-mini" }).api, "chat");
  });

  test("llama.cpp: infill with FIM tokens; without, fim by the name or chat", () => {
    assert.equal(recommend({ kind: "llama.cpp", model: "/m/anything.gguf", infill: true }).api, "infill");
    const named = recommend({ kind: "llama.cpp", model: "/m/starcoder2-3b-q8_0.gguf", infill: false });
    assert.deepEqual([named.api, named.fimTemplate], ["fim", "starcoder2"]);
    assert.equal(recommend({ kind: "llama.cpp", model: "/m/llama-3.2-1b-instruct.gguf", infill: false }).api, "chat");
    assert.equal(recommend({ kind: "llama.cpp", model: "/m/qwen2.5-coder-1.5b.gguf" }).fimTemplate, "qwen-coder");
  });

  test("Ollama: suffix when the template takes one, chat when it does not, the name when /api/show said nothing", () => {
    assert.equal(recommend({ kind: "ollama", model: "qwen2.5-coder:7b-instruct", insert: true }).api, "suffix");
    assert.equal(recommend({ kind: "ollama", model: "qwen2.5-coder:1.5b", insert: false }).api, "chat");
    assert.equal(recommend({ kind: "ollama", model: "qwen2.5-coder:1.5b" }).api, "suffix");
    assert.equal(recommend({ kind: "ollama", model: "llama3.2:1b-instruct" }).api, "chat");
  });

  test("Mistral: mistral-fim for a model that takes FIM, else chat", () => {
    assert.equal(recommend({ kind: "mistral", model: "codestral-latest" }).api, "mistral-fim");
    assert.equal(recommend({ kind: "mistral", model: "codestral-latest", modelFim: false }).api, "chat");
    assert.equal(recommend({ kind: "mistral", model: "my-finetune", modelFim: true }).api, "mistral-fim");
    assert.equal(recommend({ kind: "mistral", model: "mistral-large-latest" }).api, "chat");
  });

  test("instruction names: Instruct, chat and it as name parts, not inside words", () => {
    for (const name of ["Qwen2.5-Coder-7B-Instruct", "deepseek-chat", "codegemma-7b-it", "x:it", "CHAT"])
      assert.equal(looksLikeInstruct(name), true, name);
    for (const name of [
      "starchat2",
      "bigcode/starcoder2-3b",
      "deepseek-coder-6.7b-base",
      "italic-coder",
      "codellama:7b-code",
    ])
      assert.equal(looksLikeInstruct(name), false, name);
  });
});

describe("the environment lines", () => {
  test("url, model, mode, and the template for fim only", () => {
    assert.deepEqual(
      envLines({
        url: "http://127.0.0.1:8000/v1",
        model: "Qwen/Qwen2.5-Coder-7B",
        api: "fim",
        fimTemplate: "qwen-coder",
      }),
      [
        "TAB_RELAY_UPSTREAM_URL=http://127.0.0.1:8000/v1",
        "TAB_RELAY_UPSTREAM_MODEL=Qwen/Qwen2.5-Coder-7B",
        "TAB_RELAY_UPSTREAM_API=fim",
        "TAB_RELAY_FIM_TEMPLATE=qwen-coder",
      ],
    );
    assert.deepEqual(
      envLines({ url: "http://h:11434/v1", model: "qwen2.5-coder:1.5b", api: "suffix", fimTemplate: "qwen-coder" })
        .length,
      3,
    );
    assert.deepEqual(
      envLines({ url: "http://h:8080", model: "m", api: "infill", infillMaxPredictMs: 900 }).at(-1),
      "TAB_RELAY_INFILL_MAX_PREDICT_MS=900",
    );
  });

  test("values a shell would split or expand are single-quoted", () => {
    assert.equal(shellWord("qwen2.5-coder:1.5b"), "qwen2.5-coder:1.5b");
    assert.equal(
      shellWord("<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>"),
      "'<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>'",
    );
    assert.equal(shellWord("it's $HOME"), "'it'\\''s $HOME'");
  });
});
