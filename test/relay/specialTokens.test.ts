import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { readSseEvents } from "@tab-relay/shared";
import { completionBody, startTestRelay, type TestRelay } from "../support/relayHarness";
import { startLlamaCppStandIn } from "../support/standIns/llamaCpp";
import { startMistralStandIn } from "../support/standIns/mistral";
import { startOllamaStandIn } from "../support/standIns/ollama";
import type { StandIn } from "../support/standIns/server";
import { startVllmStandIn } from "../support/standIns/vllm";

/**
 * Issue 19 §1: a tokenizer's special token in a completion's text once stopped the whole relay (the prompt's token
 * count rejected, and nothing handled that rejection) whenever a model server was configured, and answered 500 on the
 * local engine. Every upstream mode and the local engine, over real HTTP, with each token in the text before the
 * cursor (an answer, which always counts usage) and in the surrounding context (a stream asking for usage).
 */

const PATH = "/api/v1/tab/chat/completions";
const TOKENS = [
  "<|endoftext|>",
  "<|endofprompt|>",
  "<|fim_prefix|>",
  "<|fim_middle|>",
  "<|fim_suffix|>",
  "<|im_start|>",
];

interface Mode {
  name: string;
  start(): Promise<{ env: Record<string, string>; standIn?: StandIn }>;
}

const MODES: Mode[] = [
  {
    name: "chat",
    async start() {
      const standIn = await startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B-Instruct", reply: "a + b" });
      return {
        standIn,
        env: {
          TAB_RELAY_UPSTREAM_URL: `${standIn.origin}/v1`,
          TAB_RELAY_UPSTREAM_MODEL: "Qwen/Qwen2.5-Coder-7B-Instruct",
          TAB_RELAY_UPSTREAM_API: "chat",
        },
      };
    },
  },
  {
    name: "suffix",
    async start() {
      const standIn = await startOllamaStandIn({ reply: "a + b" });
      return {
        standIn,
        env: {
          TAB_RELAY_UPSTREAM_URL: `${standIn.origin}/v1`,
          TAB_RELAY_UPSTREAM_MODEL: "qwen2.5-coder:1.5b",
          TAB_RELAY_UPSTREAM_API: "suffix",
        },
      };
    },
  },
  {
    name: "fim",
    async start() {
      const standIn = await startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B", reply: "a + b" });
      return {
        standIn,
        env: {
          TAB_RELAY_UPSTREAM_URL: `${standIn.origin}/v1`,
          TAB_RELAY_UPSTREAM_MODEL: "Qwen/Qwen2.5-Coder-7B",
          TAB_RELAY_UPSTREAM_API: "fim",
        },
      };
    },
  },
  {
    name: "infill",
    async start() {
      const standIn = await startLlamaCppStandIn({ reply: "a + b" });
      return {
        standIn,
        env: {
          TAB_RELAY_UPSTREAM_URL: standIn.origin,
          TAB_RELAY_UPSTREAM_MODEL: "/models/qwen2.5-coder-1.5b-q8_0.gguf",
          TAB_RELAY_UPSTREAM_API: "infill",
        },
      };
    },
  },
  {
    name: "mistral-fim",
    async start() {
      const standIn = await startMistralStandIn({ apiKey: "mk-test-key-0123", reply: "a + b" });
      return {
        standIn,
        env: {
          TAB_RELAY_UPSTREAM_URL: `${standIn.origin}/v1`,
          TAB_RELAY_UPSTREAM_MODEL: "codestral-latest",
          TAB_RELAY_UPSTREAM_API: "mistral-fim",
          TAB_RELAY_UPSTREAM_API_KEY: "mk-test-key-0123",
        },
      };
    },
  },
  { name: "local engine", start: () => Promise.resolve({ env: {} }) },
];

// A rejection nobody handles ends a relay process; here it would only be reported, so the test counts them itself.
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
before(() => process.on("unhandledRejection", onUnhandled));
after(() => process.off("unhandledRejection", onUnhandled));

for (const mode of MODES) {
  describe(`${mode.name}: special-token strings in the text complete like any other text`, () => {
    let relay: TestRelay;
    let standIn: StandIn | undefined;
    before(async () => {
      const started = await mode.start();
      standIn = started.standIn;
      relay = await startTestRelay({
        env: { TAB_RELAY_CACHE_ENTRIES: "0", TAB_RELAY_UPSTREAM_TIMEOUT_MS: "5000", ...started.env },
      });
    });
    after(async () => {
      await relay.close();
      await standIn?.close();
    });

    for (const token of TOKENS) {
      test(`${token} before the cursor, in an answer with usage: 200, the prompt counted as text`, async () => {
        const response = await relay.request(PATH, {
          method: "POST",
          json: completionBody({
            document_type: "plaintext",
            entity_id: "a.txt",
            active_text_before_cursor: `const marker = "${token}";\nfunction add(a, b) {\n  return `,
          }),
        });
        const text = await response.text();
        assert.equal(response.status, 200, text);
        const body = JSON.parse(text) as { usage: { prompt_tokens: number } };
        // Counted as the characters it is made of: more than one token, never a special token's single id.
        assert.ok(body.usage.prompt_tokens > 10, text);
        assert.deepEqual(unhandled, []);
      });

      test(`${token} in surrounding_context, streamed with include_usage: a usage chunk and [DONE]`, async () => {
        const response = await relay.request(PATH, {
          method: "POST",
          json: completionBody(
            { surrounding_context: `// lib/tokens.ts\nexport const END = "${token}";\n` },
            { stream: true, stream_options: { include_usage: true } },
          ),
        });
        assert.equal(response.status, 200);
        const events = [];
        for await (const event of readSseEvents(response.body!)) events.push(event);
        assert.equal(events.at(-1)?.data, "[DONE]", JSON.stringify(events));
        const usage = events
          .map((event) => (event.data === "[DONE]" ? undefined : (JSON.parse(event.data) as { usage?: unknown }).usage))
          .find((u) => u !== undefined && u !== null);
        assert.ok(usage, JSON.stringify(events));
        assert.deepEqual(unhandled, []);
      });
    }

    test("the relay still answers /healthz afterwards", async () => {
      assert.equal((await relay.request("/healthz", { key: null })).status, 200);
    });
  });
}
