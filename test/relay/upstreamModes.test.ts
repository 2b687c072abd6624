import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { formatSnippets, readCompletionStream } from "@tab-relay/shared";
import { ConfigError } from "../../relay/src/config";
import { createJsonLogger } from "../../relay/src/logger";
import { completionBody, errorOf, startTestRelay, type TestRelay } from "../support/relayHarness";
import { startLlamaCppStandIn } from "../support/standIns/llamaCpp";
import { startMistralStandIn } from "../support/standIns/mistral";
import { startOllamaStandIn } from "../support/standIns/ollama";
import type { StandIn } from "../support/standIns/server";
import { startTgiStandIn } from "../support/standIns/tgi";
import { startVllmStandIn } from "../support/standIns/vllm";

/**
 * Each upstream mode against the strict stand-in of the server it is for, over real HTTP through a real relay:
 * streamed and not, the exact request the server receives (prompt bytes, fields, route), and each wrong choice
 * failing with a hint for the operator that is logged once per relay.
 */

const PATH = "/api/v1/tab/chat/completions";
const BEFORE = "def add(a, b):\n    return ";
const AFTER = "\n\nprint(add(1, 2))\n";
const SNIPPETS = [
  { path: "lib/util.py", text: "def double(x):\n    return 2 * x" },
  { path: "lib/names.py", text: "NAMES = ['a', 'b']" },
];
const CODE = {
  entity_id: "app/main.py",
  file_path: "app/main.py",
  code_language: "python",
  active_text_before_cursor: BEFORE,
  active_text_after_cursor: AFTER,
};
const WITH_CONTEXT = { ...CODE, surrounding_context: formatSnippets(SNIPPETS) };
/** DeepSeek-Coder's documented repository-level form, shared by the families that document no other. */
const PATH_COMMENTS =
  "# lib/util.py\ndef double(x):\n    return 2 * x\n\n\n# lib/names.py\nNAMES = ['a', 'b']\n\n\n# app/main.py\n";

type TabParams = OpenAI.Chat.ChatCompletionCreateParams & { tab_context: unknown };

interface LoggedRelay extends TestRelay {
  warnings(): string[];
}

async function relayFor(env: Record<string, string>): Promise<LoggedRelay> {
  const lines: string[] = [];
  const logger = createJsonLogger({ level: "warn", write: (line) => lines.push(line), now: () => Date.now() });
  const relay = await startTestRelay({
    env: { TAB_RELAY_CACHE_ENTRIES: "0", TAB_RELAY_UPSTREAM_TIMEOUT_MS: "2000", ...env },
    logger,
  });
  return Object.assign(relay, { warnings: () => lines.map((line) => (JSON.parse(line) as { msg: string }).msg) });
}

function sdk(relay: TestRelay) {
  return new OpenAI({ baseURL: `${relay.url}/api/v1/tab`, apiKey: relay.apiKey, maxRetries: 0 });
}

/** The suggestion, asked for as a stream (through the openai SDK) or as one JSON answer (plain fetch). */
async function suggest(
  relay: TestRelay,
  context: Record<string, unknown>,
  stream: boolean,
  maxTokens = 64,
): Promise<string> {
  const tab_context = completionBody(context).tab_context;
  if (stream) {
    const chunks = await sdk(relay).chat.completions.create({
      model: "tab-v1",
      messages: [],
      stream: true,
      max_completion_tokens: maxTokens,
      tab_context,
    } as TabParams & { stream: true });
    let text = "";
    for await (const chunk of chunks) text += chunk.choices[0]?.delta.content ?? "";
    return text;
  }
  const response = await relay.request(PATH, {
    method: "POST",
    json: completionBody(context, { max_completion_tokens: maxTokens }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content ?? "";
}

function lastBody(standIn: StandIn): Record<string, unknown> {
  const body = standIn.requests.at(-1)?.body;
  assert.ok(body && typeof body === "object", "the stand-in got a JSON body");
  return body as Record<string, unknown>;
}

describe("chat mode against vLLM's /v1/chat/completions", () => {
  let vllm: StandIn;
  let relay: LoggedRelay;
  before(async () => {
    vllm = await startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B-Instruct" });
    relay = await relayFor({
      TAB_RELAY_UPSTREAM_URL: `${vllm.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "Qwen/Qwen2.5-Coder-7B-Instruct",
      TAB_RELAY_UPSTREAM_API: "chat",
    });
  });
  after(async () => {
    await relay.close();
    await vllm.close();
  });

  for (const stream of [true, false]) {
    test(`${stream ? "streamed" : "not streamed"}: messages with a Related code section naming each file`, async () => {
      vllm.enqueue({ text: ["a ", "+ b"] });
      assert.equal(await suggest(relay, WITH_CONTEXT, stream), "a + b");
      const sent = vllm.requests.at(-1);
      assert.equal(sent?.path, "/v1/chat/completions");
      const body = lastBody(vllm);
      assert.equal(body["model"], "Qwen/Qwen2.5-Coder-7B-Instruct");
      assert.equal(body["stream"], true);
      const user = (body["messages"] as { role: string; content: string }[])[1]?.content ?? "";
      assert.ok(
        user.startsWith(
          "Related code from other files (for reference; do not repeat it):\n" +
            '<file path="lib/util.py">\ndef double(x):\n    return 2 * x\n</file>\n<file path="lib/names.py">\nNAMES = [\'a\', \'b\']\n</file>\n\n<text path="app/main.py" language="python">',
        ),
        user,
      );
    });
  }
});

describe("suffix mode against Ollama", () => {
  let ollama: StandIn & { rendered: string[] };
  let relay: LoggedRelay;
  before(async () => {
    ollama = await startOllamaStandIn();
    relay = await relayFor({
      TAB_RELAY_UPSTREAM_URL: `${ollama.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "qwen2.5-coder:1.5b",
      TAB_RELAY_UPSTREAM_API: "suffix",
    });
  });
  after(async () => {
    await relay.close();
    await ollama.close();
  });

  for (const stream of [true, false]) {
    test(`${stream ? "streamed" : "not streamed"}: prompt with a commented header of related code, and the suffix, which Ollama turns into the FIM template`, async () => {
      ollama.enqueue("a + b");
      assert.equal(await suggest(relay, WITH_CONTEXT, stream), "a + b");
      assert.equal(ollama.requests.at(-1)?.path, "/v1/completions");
      const body = lastBody(ollama);
      const header =
        "# Path: app/main.py\n# Related code from lib/util.py:\n# def double(x):\n#     return 2 * x\n# Related code from lib/names.py:\n# NAMES = ['a', 'b']\n";
      assert.equal(body["prompt"], `${header}${BEFORE}`);
      assert.equal(body["suffix"], AFTER);
      assert.equal(ollama.rendered.at(-1), `<|fim_prefix|>${header}${BEFORE}<|fim_suffix|>${AFTER}<|fim_middle|>`);
      assert.equal(relay.warnings().length, 0);
    });
  }
});

describe("fim mode: every built-in family through vLLM, which takes no suffix", () => {
  const families: { family: string; model: string; plain: string; withContext: string; stop: string[] }[] = [
    {
      family: "qwen-coder",
      model: "Qwen/Qwen2.5-Coder-7B",
      plain: `<|fim_prefix|>${BEFORE}<|fim_suffix|>${AFTER}<|fim_middle|>`,
      withContext:
        "<|repo_name|>acme\n<|file_sep|>lib/util.py\ndef double(x):\n    return 2 * x\n<|file_sep|>lib/names.py\nNAMES = ['a', 'b']\n" +
        `<|file_sep|>app/main.py\n<|fim_prefix|>${BEFORE}<|fim_suffix|>${AFTER}<|fim_middle|>`,
      stop: ["<|endoftext|>", "<|file_sep|>", "<|fim_prefix|>", "<|fim_pad|>"],
    },
    {
      family: "starcoder2",
      model: "bigcode/starcoder2-7b",
      plain: `<fim_prefix>${BEFORE}<fim_suffix>${AFTER}<fim_middle>`,
      withContext: `<repo_name>acme<file_sep>lib/util.py\ndef double(x):\n    return 2 * x<file_sep>lib/names.py\nNAMES = ['a', 'b']<file_sep><fim_prefix>app/main.py\n${BEFORE}<fim_suffix>${AFTER}<fim_middle>`,
      stop: ["<|endoftext|>", "<file_sep>", "<fim_prefix>", "<fim_suffix>"],
    },
    {
      family: "codellama",
      model: "codellama/CodeLlama-7b-hf",
      plain: `<PRE> ${BEFORE} <SUF>${AFTER} <MID>`,
      withContext: `<PRE> ${PATH_COMMENTS}${BEFORE} <SUF>${AFTER} <MID>`,
      stop: ["<EOT>", "<PRE>", "<SUF>", "<MID>"],
    },
    {
      family: "deepseek-coder",
      model: "deepseek-ai/deepseek-coder-6.7b-base",
      plain: `<｜fim▁begin｜>${BEFORE}<｜fim▁hole｜>${AFTER}<｜fim▁end｜>`,
      withContext: `<｜fim▁begin｜>${PATH_COMMENTS}${BEFORE}<｜fim▁hole｜>${AFTER}<｜fim▁end｜>`,
      stop: ["<｜end▁of▁sentence｜>", "<|EOT|>", "<｜fim▁begin｜>", "<｜fim▁hole｜>"],
    },
    {
      family: "codestral",
      model: "mistralai/Codestral-22B-v0.1",
      plain: `[SUFFIX]${AFTER}[PREFIX] ${BEFORE}`,
      withContext: `[SUFFIX]${AFTER}[PREFIX] ${PATH_COMMENTS}${BEFORE}`,
      stop: ["[PREFIX]", "[SUFFIX]", "[MIDDLE]"],
    },
    {
      family: "codegemma",
      model: "google/codegemma-2b",
      plain: `<|fim_prefix|>${BEFORE}<|fim_suffix|>${AFTER}<|fim_middle|>`,
      withContext: `<|fim_prefix|>${PATH_COMMENTS}${BEFORE}<|fim_suffix|>${AFTER}<|fim_middle|>`,
      stop: ["<|file_separator|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"],
    },
  ];
  for (const { family, model, plain, withContext, stop } of families) {
    describe(family, () => {
      let vllm: StandIn;
      let relay: LoggedRelay;
      before(async () => {
        vllm = await startVllmStandIn({ model });
        relay = await relayFor({
          TAB_RELAY_UPSTREAM_URL: `${vllm.origin}/v1`,
          TAB_RELAY_UPSTREAM_MODEL: model,
          TAB_RELAY_UPSTREAM_API: "fim",
        });
      });
      after(async () => {
        await relay.close();
        await vllm.close();
      });

      test("streamed, with context from other files: the exact prompt, the family's stops, no suffix field", async () => {
        vllm.enqueue({ text: ["a", " + ", "b"] });
        assert.equal(await suggest(relay, WITH_CONTEXT, true), "a + b");
        const body = lastBody(vllm);
        assert.equal(vllm.requests.at(-1)?.path, "/v1/completions");
        assert.equal(body["prompt"], withContext);
        assert.ok(
          Buffer.from(vllm.requests.at(-1)?.raw ?? "").includes(Buffer.from(JSON.stringify(withContext))),
          "the prompt's bytes as sent",
        );
        assert.deepEqual(body["stop"], stop);
        assert.equal("suffix" in body, false);
        assert.equal(body["model"], model);
        assert.equal(body["max_tokens"], 64);
      });

      test("the server's whole JSON answer (not streamed), without context: the plain FIM prompt", async () => {
        vllm.enqueue({ text: "a + b", json: true });
        assert.equal(await suggest(relay, CODE, true), "a + b");
        assert.equal(lastBody(vllm)["prompt"], plain);
      });

      if (family === "qwen-coder") {
        test("a client's request that is not streamed", async () => {
          vllm.enqueue("a + b");
          assert.equal(await suggest(relay, CODE, false), "a + b");
          assert.equal(lastBody(vllm)["prompt"], plain);
        });
      }
    });
  }
});

// Independent cases, each with its own servers: they run side by side.
describe("fim mode on other servers and templates", { concurrency: true }, () => {
  const stopped: { close(): Promise<void> }[] = [];
  after(() => Promise.all(stopped.map((item) => item.close())));

  test("TGI with TAB_RELAY_FIM_TEMPLATE (its model field is unused): at most 4 stops, mid-line a newline first", async () => {
    const tgi = await startTgiStandIn();
    const relay = await relayFor({
      TAB_RELAY_UPSTREAM_URL: `${tgi.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "tgi",
      TAB_RELAY_UPSTREAM_API: "fim",
      TAB_RELAY_FIM_TEMPLATE: "starcoder2",
    });
    stopped.push(tgi, relay);
    tgi.enqueue("b");
    assert.equal(
      await suggest(
        relay,
        { ...CODE, active_text_before_cursor: "print(add(a, ", active_text_after_cursor: "))\n" },
        true,
      ),
      "b",
    );
    const body = lastBody(tgi);
    assert.equal(body["prompt"], "<fim_prefix>print(add(a, <fim_suffix>))\n<fim_middle>");
    assert.deepEqual(body["stop"], ["\n", "<|endoftext|>", "<file_sep>", "<fim_prefix>"]);
    tgi.enqueue({ text: "a + b", json: true });
    assert.equal(await suggest(relay, WITH_CONTEXT, true), "a + b");
  });

  test("llama.cpp's /v1/completions, which refuses any suffix field, takes a fim prompt", async () => {
    const llama = await startLlamaCppStandIn();
    const relay = await relayFor({
      TAB_RELAY_UPSTREAM_URL: `${llama.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "/models/qwen2.5-coder-1.5b-q8_0.gguf",
      TAB_RELAY_UPSTREAM_API: "fim",
    });
    stopped.push(llama, relay);
    for (const json of [false, true]) {
      llama.enqueue({ text: "a + b", json });
      assert.equal(await suggest(relay, CODE, true), "a + b");
      assert.equal(lastBody(llama)["prompt"], `<|fim_prefix|>${BEFORE}<|fim_suffix|>${AFTER}<|fim_middle|>`);
    }
  });

  test("a custom template fills {context}, {prefix} and {suffix} and stops on its own tokens", async () => {
    const vllm = await startVllmStandIn({ model: "my-org/house-coder" });
    const relay = await relayFor({
      TAB_RELAY_UPSTREAM_URL: `${vllm.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "my-org/house-coder",
      TAB_RELAY_UPSTREAM_API: "fim",
      TAB_RELAY_FIM_TEMPLATE: "<PRE>{context}{prefix}<SUF>{suffix}<MID>",
    });
    stopped.push(vllm, relay);
    for (const json of [false, true]) {
      vllm.enqueue({ text: "a + b", json });
      assert.equal(await suggest(relay, WITH_CONTEXT, true), "a + b");
      const body = lastBody(vllm);
      assert.equal(body["prompt"], `<PRE>${PATH_COMMENTS}${BEFORE}<SUF>${AFTER}<MID>`);
      assert.deepEqual(body["stop"], ["<PRE>", "<SUF>", "<MID>"]);
    }
  });

  test("a stop sequence the server passed through as text is cut by the relay, whether or not it was sent upstream", async () => {
    const vllm = await startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B" });
    const relay = await relayFor({
      TAB_RELAY_UPSTREAM_URL: `${vllm.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "Qwen/Qwen2.5-Coder-7B",
      TAB_RELAY_UPSTREAM_API: "fim",
    });
    stopped.push(vllm, relay);
    // <|repo_name|> is beyond the four stops sent, so the server writes it and what follows; the relay cuts it.
    vllm.enqueue({ text: ["a + b", "<|repo_", "name|>acme\n<|file_sep|>x"] });
    assert.equal(await suggest(relay, CODE, true), "a + b");
    vllm.enqueue({ text: ["a + b<|im_end|>", "junk"], json: true });
    assert.equal(await suggest(relay, CODE, true), "a + b");
  });
});

describe("infill mode against llama.cpp's /infill", () => {
  let llama: StandIn;
  let relay: LoggedRelay;
  let rootRelay: LoggedRelay;
  before(async () => {
    llama = await startLlamaCppStandIn();
    const env = { TAB_RELAY_UPSTREAM_MODEL: "/models/qwen2.5-coder-1.5b-q8_0.gguf", TAB_RELAY_UPSTREAM_API: "infill" };
    relay = await relayFor({ ...env, TAB_RELAY_UPSTREAM_URL: `${llama.origin}/v1` });
    rootRelay = await relayFor({
      ...env,
      TAB_RELAY_UPSTREAM_URL: llama.origin,
      TAB_RELAY_INFILL_MAX_PREDICT_MS: "1500",
    });
  });
  after(async () => {
    await relay.close();
    await rootRelay.close();
    await llama.close();
  });

  for (const stream of [true, false]) {
    test(`${stream ? "streamed" : "not streamed"}: input_prefix, input_suffix, input_extra from the snippets, n_predict and t_max_predict_ms`, async () => {
      llama.enqueue({ text: ["a", " + b"] });
      assert.equal(await suggest(relay, WITH_CONTEXT, stream, 48), "a + b");
      assert.equal(llama.requests.at(-1)?.path, "/infill", "a URL ending in /v1 reaches the server root");
      assert.deepEqual(lastBody(llama), {
        model: "/models/qwen2.5-coder-1.5b-q8_0.gguf",
        input_prefix: BEFORE,
        input_suffix: AFTER,
        input_extra: [
          { filename: "lib/util.py", text: "def double(x):\n    return 2 * x" },
          { filename: "lib/names.py", text: "NAMES = ['a', 'b']" },
        ],
        n_predict: 48,
        t_max_predict_ms: 500,
        temperature: 0.2,
        cache_prompt: true,
        stream: true,
      });
    });
  }

  test("the server root works as the URL too, with t_max_predict_ms from the configuration", async () => {
    llama.enqueue("a + b");
    assert.equal(await suggest(rootRelay, CODE, true), "a + b");
    assert.equal(llama.requests.at(-1)?.path, "/infill");
    assert.equal(lastBody(llama)["t_max_predict_ms"], 1500);
    assert.deepEqual(lastBody(llama)["input_extra"], []);
  });

  test("a server that ignores stream and answers one JSON object still gives its content", async () => {
    llama.enqueue({ text: "a + b", json: true });
    assert.equal(await suggest(relay, CODE, true), "a + b");
  });
});

describe("mistral-fim mode against Mistral's /v1/fim/completions", () => {
  let mistral: StandIn;
  let relay: LoggedRelay;
  before(async () => {
    mistral = await startMistralStandIn({ apiKey: "mk-test-key-0123" });
    relay = await relayFor({
      TAB_RELAY_UPSTREAM_URL: `${mistral.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "codestral-latest",
      TAB_RELAY_UPSTREAM_API: "mistral-fim",
      TAB_RELAY_UPSTREAM_API_KEY: "mk-test-key-0123",
    });
  });
  after(async () => {
    await relay.close();
    await mistral.close();
  });

  for (const stream of [true, false]) {
    test(`${stream ? "streamed" : "not streamed"}: prompt and suffix, only documented fields, chat-shaped answers`, async () => {
      mistral.enqueue({ text: ["a +", " b"] });
      assert.equal(await suggest(relay, WITH_CONTEXT, stream), "a + b");
      assert.equal(mistral.requests.at(-1)?.path, "/v1/fim/completions");
      const body = lastBody(mistral);
      assert.deepEqual(Object.keys(body).sort(), ["max_tokens", "model", "prompt", "stream", "suffix", "temperature"]);
      assert.equal(
        body["prompt"],
        `# Path: app/main.py\n# Related code from lib/util.py:\n# def double(x):\n#     return 2 * x\n# Related code from lib/names.py:\n# NAMES = ['a', 'b']\n${BEFORE}`,
      );
      assert.equal(body["suffix"], AFTER);
    });
  }
});

// Independent cases, each with its own servers: they run side by side.
describe("a wrong choice fails clearly: 502 with a hint, logged once per relay", { concurrency: true }, () => {
  const stopped: { close(): Promise<void> }[] = [];
  after(() => Promise.all(stopped.map((item) => item.close())));

  /** Two requests (one streamed) both fail with the hint; the relay logs it once. */
  async function expectHint(relay: LoggedRelay, upstreamMessage: RegExp, hint: string): Promise<void> {
    for (const stream of [true, false]) {
      const response = await relay.request(PATH, { method: "POST", json: completionBody(CODE, { stream }) });
      assert.equal(response.status, 502);
      const error = await errorOf(response);
      assert.equal(error.code, "UPSTREAM_ERROR");
      assert.match(error.message, upstreamMessage);
      assert.ok(error.message.endsWith(`Hint: ${hint}`), error.message);
    }
    assert.deepEqual(
      relay.warnings().filter((line) => line.startsWith("upstream: ")),
      [`upstream: ${hint}`],
    );
  }

  async function pair(standIn: StandIn, env: Record<string, string>): Promise<LoggedRelay> {
    const relay = await relayFor(env);
    stopped.push(standIn, relay);
    return relay;
  }

  test("suffix → vLLM: its 400 names the suffix; use fim", async () => {
    const vllm = await startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B" });
    const relay = await pair(vllm, {
      TAB_RELAY_UPSTREAM_URL: `${vllm.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "Qwen/Qwen2.5-Coder-7B",
      TAB_RELAY_UPSTREAM_API: "suffix",
    });
    await expectHint(
      relay,
      /^Upstream answered 400: suffix is not currently supported\. /,
      "this server does not take `suffix`: set TAB_RELAY_UPSTREAM_API=fim",
    );
  });

  test("suffix → vLLM of the older flat error shape: the same hint", async () => {
    const vllm = await startVllmStandIn({ model: "m", errorShape: "flat" });
    const relay = await pair(vllm, {
      TAB_RELAY_UPSTREAM_URL: `${vllm.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "m",
      TAB_RELAY_UPSTREAM_API: "suffix",
    });
    await expectHint(
      relay,
      /^Upstream answered 400: suffix is not currently supported\. /,
      "this server does not take `suffix`: set TAB_RELAY_UPSTREAM_API=fim",
    );
  });

  test("suffix → TGI: its 422 names the suffix; use fim", async () => {
    const tgi = await startTgiStandIn();
    const relay = await pair(tgi, {
      TAB_RELAY_UPSTREAM_URL: `${tgi.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "tgi",
      TAB_RELAY_UPSTREAM_API: "suffix",
    });
    await expectHint(
      relay,
      /^Upstream answered 422: Suffix is not supported/,
      "this server does not take `suffix`: set TAB_RELAY_UPSTREAM_API=fim",
    );
  });

  test("suffix → llama.cpp: its 500 'Unsupported param: suffix'; use infill", async () => {
    const llama = await startLlamaCppStandIn();
    const relay = await pair(llama, {
      TAB_RELAY_UPSTREAM_URL: `${llama.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "m",
      TAB_RELAY_UPSTREAM_API: "suffix",
    });
    await expectHint(
      relay,
      /^Upstream answered 500: Unsupported param: suffix\. /,
      "this server does not take `suffix` (llama.cpp): set TAB_RELAY_UPSTREAM_API=infill (llama.cpp's /infill), or fim",
    );
  });

  test("suffix → a newer llama.cpp that ignores suffix: the completion works, and the relay says once to use infill", async () => {
    const llama = await startLlamaCppStandIn({ suffixOnCompletions: "ignore" });
    const relay = await pair(llama, {
      TAB_RELAY_UPSTREAM_URL: `${llama.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "m",
      TAB_RELAY_UPSTREAM_API: "suffix",
    });
    for (const json of [false, true]) {
      llama.enqueue({ text: "a + b", json });
      assert.equal(await suggest(relay, CODE, true), "a + b");
    }
    assert.deepEqual(relay.warnings(), [
      "upstream: this server looks like llama.cpp (its answers carry `timings`), whose /v1/completions ignores `suffix`: set TAB_RELAY_UPSTREAM_API=infill (or fim) so completions see the text after the cursor",
    ]);
  });

  test("fim → a server with no /v1/completions (Mistral's API): use chat", async () => {
    const mistral = await startMistralStandIn();
    const relay = await pair(mistral, {
      TAB_RELAY_UPSTREAM_URL: `${mistral.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "codestral-latest",
      TAB_RELAY_UPSTREAM_API: "fim",
    });
    await expectHint(
      relay,
      /^Upstream answered 404: Not Found\. /,
      "this server has no /completions route (a chat-only API?): set TAB_RELAY_UPSTREAM_API=chat, and check that TAB_RELAY_UPSTREAM_URL ends in /v1",
    );
  });

  test("infill → vLLM: no /infill route", async () => {
    const vllm = await startVllmStandIn({ model: "m" });
    const relay = await pair(vllm, {
      TAB_RELAY_UPSTREAM_URL: `${vllm.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "m",
      TAB_RELAY_UPSTREAM_API: "infill",
    });
    await expectHint(
      relay,
      /^Upstream answered 404: Not Found\. /,
      "this server has no /infill route, which only llama.cpp's llama-server has: for another server set TAB_RELAY_UPSTREAM_API=fim or suffix",
    );
  });

  test("infill → llama.cpp with a model that has no FIM tokens: its 501", async () => {
    const llama = await startLlamaCppStandIn({ fim: false });
    const relay = await pair(llama, {
      TAB_RELAY_UPSTREAM_URL: llama.origin,
      TAB_RELAY_UPSTREAM_MODEL: "m",
      TAB_RELAY_UPSTREAM_API: "infill",
    });
    await expectHint(
      relay,
      /^Upstream answered 501: Infill is not supported by this model/,
      "the model has no fill-in-the-middle tokens (llama.cpp cannot infill with it): load a FIM model, or set TAB_RELAY_UPSTREAM_API=chat",
    );
  });

  test("mistral-fim → Ollama: no /fim/completions (gin's plain-text 404)", async () => {
    const ollama = await startOllamaStandIn();
    const relay = await pair(ollama, {
      TAB_RELAY_UPSTREAM_URL: `${ollama.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "qwen2.5-coder:1.5b",
      TAB_RELAY_UPSTREAM_API: "mistral-fim",
    });
    await expectHint(
      relay,
      /^Upstream answered 404: 404 page not found\. /,
      "this server has no /fim/completions route, which Mistral's API has: for another server set TAB_RELAY_UPSTREAM_API=fim or suffix",
    );
  });

  test("a model the server does not serve: vLLM's 404 names it before anything else", async () => {
    const vllm = await startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B" });
    const relay = await pair(vllm, {
      TAB_RELAY_UPSTREAM_URL: `${vllm.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "qwen2.5-coder-7b",
      TAB_RELAY_UPSTREAM_API: "fim",
    });
    await expectHint(
      relay,
      /^Upstream answered 404: The model `qwen2.5-coder-7b` does not exist\. /,
      'the server does not serve the model "qwen2.5-coder-7b": check TAB_RELAY_UPSTREAM_MODEL against its GET /v1/models',
    );
  });
});

describe("configuration of the modes", () => {
  test("completions still works as suffix, with a warning at start naming suffix, fim and infill", async () => {
    const ollama = await startOllamaStandIn();
    const relay = await relayFor({
      TAB_RELAY_UPSTREAM_URL: `${ollama.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "qwen2.5-coder:1.5b",
      TAB_RELAY_UPSTREAM_API: "completions",
    });
    try {
      const [warning, ...rest] = relay.warnings();
      assert.deepEqual(rest, []);
      assert.match(
        warning ?? "",
        /^TAB_RELAY_UPSTREAM_API=completions is now called suffix .*use fim; for llama\.cpp's \/infill, infill$/,
      );
      ollama.enqueue("a + b");
      assert.equal(await suggest(relay, CODE, true), "a + b");
      assert.equal(lastBody(ollama)["suffix"], AFTER);
    } finally {
      await relay.close();
      await ollama.close();
    }
  });

  test("fim with a model name no family matches stops the relay at start, listing the families", async () => {
    await assert.rejects(
      relayFor({
        TAB_RELAY_UPSTREAM_URL: "http://127.0.0.1:9/v1",
        TAB_RELAY_UPSTREAM_MODEL: "meta-llama/Llama-3.1-8B",
        TAB_RELAY_UPSTREAM_API: "fim",
      }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(
          error.message,
          /TAB_RELAY_FIM_TEMPLATE \(--fim-template\): TAB_RELAY_UPSTREAM_API=fim needs the model's FIM template/,
        );
        assert.match(error.message, /qwen-coder, starcoder2, codellama, deepseek-coder, codestral, codegemma/);
        return true;
      },
    );
  });
});

/** The relay's own stream reader, on a raw stream: fragments arrive in order and end with [DONE]. */
test("infill's stream without [DONE] still ends the relay's stream with [DONE]", async () => {
  const llama = await startLlamaCppStandIn();
  const relay = await relayFor({
    TAB_RELAY_UPSTREAM_URL: llama.origin,
    TAB_RELAY_UPSTREAM_MODEL: "m",
    TAB_RELAY_UPSTREAM_API: "infill",
  });
  try {
    llama.enqueue({ text: ["a", " +", " b"] });
    const response = await relay.request(PATH, { method: "POST", json: completionBody(CODE, { stream: true }) });
    const raw = await response.text();
    assert.ok(raw.trimEnd().endsWith("data: [DONE]"));
    let text = "";
    for await (const event of readCompletionStream(new Response(raw).body as ReadableStream<Uint8Array>))
      if (event.type === "delta") text += event.content;
    assert.equal(text, "a + b");
  } finally {
    await relay.close();
    await llama.close();
  }
});
