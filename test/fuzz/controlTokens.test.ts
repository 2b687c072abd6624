import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { after, describe, test } from "node:test";
import { readSseEvents } from "@tab-relay/shared";
import { CONTROL_TOKENS } from "../../relay/src/completion/controlTokens";
import { startLlamaCppStandIn } from "../support/standIns/llamaCpp";
import { startMistralStandIn } from "../support/standIns/mistral";
import { startOllamaStandIn } from "../support/standIns/ollama";
import type { StandIn } from "../support/standIns/server";
import { startVllmStandIn } from "../support/standIns/vllm";
import { TAB_TEXT_FIELDS } from "./catalogue";
import { WORKSPACE_SLUG, initDataFolder, startRelayProcess } from "./relay";

/**
 * Issue 19 §1 in the fuzz suite: every model family's control tokens in every text field of a completion, in every
 * upstream mode and on the local engine, streamed with usage and answered whole, against a relay running as its own
 * process (where an unhandled rejection ends it). Every answer is 200 with a usage count, and the process lives on.
 */

const PATH = "/api/v1/tab/chat/completions";

interface Mode {
  name: string;
  standIn?: () => Promise<StandIn>;
  env: (standIn: StandIn | undefined) => Record<string, string>;
}

const MODES: Mode[] = [
  {
    name: "chat",
    standIn: () => startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B-Instruct", reply: "a + b", record: false }),
    env: (s) => ({
      TAB_RELAY_UPSTREAM_URL: `${s?.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "Qwen/Qwen2.5-Coder-7B-Instruct",
      TAB_RELAY_UPSTREAM_API: "chat",
    }),
  },
  {
    name: "suffix",
    standIn: () => startOllamaStandIn({ reply: "a + b", record: false }),
    env: (s) => ({
      TAB_RELAY_UPSTREAM_URL: `${s?.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "qwen2.5-coder:1.5b",
      TAB_RELAY_UPSTREAM_API: "suffix",
    }),
  },
  {
    name: "fim",
    standIn: () => startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B", reply: "a + b", record: false }),
    env: (s) => ({
      TAB_RELAY_UPSTREAM_URL: `${s?.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "Qwen/Qwen2.5-Coder-7B",
      TAB_RELAY_UPSTREAM_API: "fim",
    }),
  },
  {
    name: "infill",
    standIn: () => startLlamaCppStandIn({ reply: "a + b", record: false }),
    env: (s) => ({
      TAB_RELAY_UPSTREAM_URL: s?.origin ?? "",
      TAB_RELAY_UPSTREAM_MODEL: "/models/qwen2.5-coder-1.5b-q8_0.gguf",
      TAB_RELAY_UPSTREAM_API: "infill",
    }),
  },
  {
    name: "mistral-fim",
    standIn: () => startMistralStandIn({ apiKey: "mk-test-key-0123", reply: "a + b", record: false }),
    env: (s) => ({
      TAB_RELAY_UPSTREAM_URL: `${s?.origin}/v1`,
      TAB_RELAY_UPSTREAM_MODEL: "codestral-latest",
      TAB_RELAY_UPSTREAM_API: "mistral-fim",
      TAB_RELAY_UPSTREAM_API_KEY: "mk-test-key-0123",
    }),
  },
  { name: "local engine", env: () => ({}) },
];

const tracked = new Set<ChildProcess>();
after(() => {
  for (const child of tracked) child.kill("SIGKILL");
});

/** Fields that hold at most 128 characters (shared/src/protocol/completion.ts). */
const SHORT_FIELDS: readonly string[] = ["code_language", "block_kind"];

/** The family's tokens in as few values as `field` holds: each token reaches it, whatever its length limit. */
function valuesFor(field: string, tokens: readonly string[]): string[][] {
  if (!SHORT_FIELDS.includes(field)) return [[...tokens]];
  const groups: string[][] = [[]];
  for (const token of tokens) {
    const group = groups.at(-1)!;
    if ([...group, token].join("").length > 100) groups.push([token]);
    else group.push(token);
  }
  return groups;
}

/** The body with the tokens in `field` (added to what it holds, so paths and code stay paths and code). */
function body(field: (typeof TAB_TEXT_FIELDS)[number], tokens: readonly string[], stream: boolean) {
  const context: Record<string, string> = {
    surface: "code",
    workspace_slug: WORKSPACE_SLUG,
    entity_id: "src/tokens.ts",
    document_type: "plaintext",
    active_text_before_cursor: "export function add(a: number, b: number) {\n  return ",
    active_text_after_cursor: "\n}\n",
    surrounding_context: "// lib/math.ts\nexport const double = (x: number) => 2 * x;\n",
    code_language: "typescript",
    file_path: "src/tokens.ts",
    block_kind: "function",
    note_title: "Tokens",
    document_title: "Tokens",
  };
  const separator = field.endsWith("cursor") || field === "surrounding_context" ? "\n" : "";
  context[field] = SHORT_FIELDS.includes(field) ? tokens.join("") : `${context[field] ?? ""}${tokens.join(separator)}`;
  return {
    model: "tab-v1",
    max_completion_tokens: 16,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    tab_context: context,
  };
}

describe("every family's control tokens in every text field, in every mode, against a relay process", () => {
  for (const mode of MODES) {
    test(mode.name, { timeout: 120_000 }, async () => {
      const standIn = await mode.standIn?.();
      const folder = initDataFolder();
      const relay = await startRelayProcess({
        dataDir: folder.dataDir,
        rateLimits: "reads=1000000,writes=1000000",
        tracked,
        env: { TAB_RELAY_CACHE_ENTRIES: "0", ...mode.env(standIn) },
      });
      try {
        const failures: string[] = [];
        const reached = new Set<string>();
        for (const [family, familyTokens] of Object.entries(CONTROL_TOKENS)) {
          for (const field of TAB_TEXT_FIELDS) {
            for (const [tokens, stream] of valuesFor(field, familyTokens).flatMap((v) => [
              [v, false] as const,
              [v, true] as const,
            ])) {
              for (const token of tokens) reached.add(`${token} ${field}`);
              const response = await fetch(relay.url + PATH, {
                method: "POST",
                headers: { Authorization: `Bearer ${folder.ownerKey}`, "Content-Type": "application/json" },
                body: JSON.stringify(body(field, tokens, stream)),
              });
              const what = `${family} in ${field}${stream ? " (streamed with usage)" : ""}`;
              if (response.status !== 200) {
                failures.push(`${what}: ${response.status} ${await response.text()}`);
                continue;
              }
              if (!stream) {
                const answer = (await response.json()) as { usage?: { prompt_tokens: number } };
                if (!(answer.usage && answer.usage.prompt_tokens > 0)) failures.push(`${what}: no usage`);
                continue;
              }
              let usage = false;
              let last = "";
              for await (const event of readSseEvents(response.body!)) {
                last = event.data;
                if (event.data !== "[DONE]" && (JSON.parse(event.data) as { usage?: unknown }).usage) usage = true;
              }
              if (!usage || last !== "[DONE]") failures.push(`${what}: the stream ended without usage and [DONE]`);
            }
          }
        }
        assert.ok(relay.alive(), `the relay process ended:\n${relay.tail()}`);
        assert.deepEqual(failures, [], relay.tail());
        const every = new Set(Object.values(CONTROL_TOKENS).flat());
        assert.equal(reached.size, every.size * TAB_TEXT_FIELDS.length, "every token reached every field");
        assert.equal((await fetch(`${relay.url}/healthz`)).status, 200);
      } finally {
        await relay.stop();
        folder.remove();
        await standIn?.close();
      }
    });
  }
});
