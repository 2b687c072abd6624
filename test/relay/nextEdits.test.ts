import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { NextEditResponse, type NextEditRequest } from "@tab-relay/shared";
import type { Api } from "@tab-relay/shared";
import { dataOf, expectError, startTestRelay, type TestRelay } from "../support/relayHarness";
import { type MisbehavingUpstream, startMisbehavingUpstream } from "../support/misbehavingUpstream";
import { metricValue, type StandInRelay, startStandInRelay } from "../support/standInRelay";
import { startOllamaStandIn } from "../support/standIns/ollama";
import type { StandIn } from "../support/standIns/server";
import { startVllmStandIn } from "../support/standIns/vllm";

/**
 * POST /api/v1/tab/next-edits over real HTTP through a real relay: the local engine with no model, then each model
 * format against the strict stand-in of the server it is for (vLLM /v1/completions for zeta, Ollama's /api/chat for
 * instinct, a chat server's /v1/chat/completions for chat), with the exact request the server receives and the
 * guards on what the model writes.
 */

const PATH = "/api/v1/tab/next-edits";
const FILE = [
  "function total(items) {",
  "  let sum = 0;",
  "  for (const item of items) sum += item.price;",
  "  return sum;",
  "}",
];
/** The person renamed `sum` to `priceSum` on line 1 (document lines 20…); the cursor is after the new name. */
function renameRequest(overrides: Partial<NextEditRequest> = {}): NextEditRequest {
  const lines = [...FILE];
  lines[1] = "  let priceSum = 0;";
  return {
    workspace_slug: "acme",
    file_path: "src/total.js",
    code_language: "javascript",
    document_version: 7,
    excerpt: { start_line: 20, text: lines.join("\n") },
    editable_region: { start_line: 20, end_line: 25 },
    cursor: { line: 21, character: 14 },
    recent_edits: [
      { file_path: "src/total.js", start_line: 21, old_lines: ["  let sum = 0;"], new_lines: ["  let priceSum = 0;"] },
    ],
    ...overrides,
  };
}

async function ask(relay: TestRelay, body: unknown): Promise<NextEditResponse> {
  const response = await relay.request(PATH, { method: "POST", json: body });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return NextEditResponse.parse(JSON.parse(text));
}

async function metric(relay: TestRelay, labels: string): Promise<number> {
  return metricValue(relay, "tab_relay_next_edits_total", labels);
}

describe("next edits with the local engine", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay();
  });
  after(() => relay.close());

  test("a rename is proposed at the name's other occurrences in the region, against the version sent", async () => {
    const answer = await ask(relay, renameRequest());
    assert.equal(answer.object, "tab.next_edit");
    assert.equal(answer.document_version, 7);
    assert.equal(answer.model, "local");
    assert.deepEqual(answer.edits, [
      { range: { start: { line: 22, character: 28 }, end: { line: 22, character: 31 } }, text: "priceSum" },
      { range: { start: { line: 23, character: 9 }, end: { line: 23, character: 12 } }, text: "priceSum" },
    ]);
    assert.equal(answer.reason, undefined);
    assert.equal(await metric(relay, 'source="local",outcome="edits"'), 1);
  });

  test("with no edit to propagate the answer is empty and says why", async () => {
    const answer = await ask(relay, renameRequest({ recent_edits: [] }));
    assert.deepEqual(answer.edits, []);
    assert.equal(answer.reason, "no_change");
  });

  test("bad input is refused in the error envelope naming the field", async () => {
    const response = await relay.request(PATH, {
      method: "POST",
      json: renameRequest({ editable_region: { start_line: 40, end_line: 41 } }),
    });
    await expectError(response, 400, "VALIDATION_ERROR", /editable_region/);
    const cursor = await relay.request(PATH, {
      method: "POST",
      json: renameRequest({ cursor: { line: 21, character: 99 } }),
    });
    await expectError(cursor, 400, "VALIDATION_ERROR", /cursor\.character/);
    const extra = await relay.request(PATH, { method: "POST", json: { ...renameRequest(), whole_file: "x" } });
    await expectError(extra, 400, "VALIDATION_ERROR", /whole_file/);
  });

  test("a key needs tab.complete and its own workspace, as for completions", async () => {
    const narrow = await dataOf<Api.ApiKeyCreated>(
      await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "reader", scopes: ["agents.read"] } }),
      201,
    );
    await expectError(
      await relay.request(PATH, { method: "POST", json: renameRequest(), key: narrow.secret }),
      403,
      "FORBIDDEN",
      /tab\.complete/,
    );
    await expectError(
      await relay.request(PATH, { method: "POST", json: renameRequest({ workspace_slug: "other" }) }),
      401,
      "UNAUTHORIZED",
      /workspace_slug/,
    );
    await expectError(
      await relay.request(PATH, { method: "POST", json: renameRequest(), key: null }),
      401,
      "UNAUTHORIZED",
    );
  });
});

/** The region as the rename request has it, with `priceSum` everywhere: what a model that finished the rename writes. */
const RENAMED = [
  "function total(items) {",
  "  let priceSum = 0;",
  "  for (const item of items) priceSum += item.price;",
  "  return priceSum;",
  "}",
];
/** The smallest edits: `s` becomes `priceS`, the `um` both names end with is kept. */
const EXPECTED_EDITS = [
  { range: { start: { line: 22, character: 28 }, end: { line: 22, character: 29 } }, text: "priceS" },
  { range: { start: { line: 23, character: 9 }, end: { line: 23, character: 10 } }, text: "priceS" },
];

/** A relay in front of `standIn`, whose every next edit goes to it. */
async function modelRelay<S extends StandIn>(standIn: S, env: Record<string, string>): Promise<StandInRelay<S>> {
  return startStandInRelay(standIn, { TAB_RELAY_UPSTREAM_TIMEOUT_MS: "3000", ...env });
}

describe("next edits from Zeta through vLLM's /v1/completions", () => {
  let vllm: StandIn & { model: string };
  let relay: TestRelay;
  let started: StandInRelay<typeof vllm>;
  before(async () => {
    vllm = await startVllmStandIn({ model: "zed-industries/zeta" });
    started = await modelRelay(vllm, { TAB_RELAY_UPSTREAM_MODEL: vllm.model });
    relay = started.relay;
  });
  after(() => started.close());

  test("the prompt is Zeta's, and the rewritten region becomes the smallest edits", async () => {
    vllm.enqueue(
      `\`\`\`src/total.js\n<|start_of_file|>\n<|editable_region_start|>\n${RENAMED.join("\n")}\n<|editable_region_end|>\n\`\`\``,
    );
    const answer = await ask(relay, renameRequest());
    assert.deepEqual(answer.edits, EXPECTED_EDITS);
    assert.equal(answer.model, "zed-industries/zeta");
    const sent = vllm.requests.at(-1);
    assert.equal(sent?.path, "/v1/completions");
    const body = sent?.body as { prompt: string; model: string; temperature: number };
    assert.equal(body.model, "zed-industries/zeta");
    assert.equal(body.temperature, 0);
    assert.equal(
      body.prompt,
      "### Instruction:\nYou are a code completion assistant and your task is to analyze user edits and then rewrite an excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking into account the cursor location.\n\n" +
        "### User Edits:\n\nUser edited src/total.js:\n```diff\n@@ -22,1 +22,1 @@\n-  let sum = 0;\n+  let priceSum = 0;\n```" +
        "\n\n### User Excerpt:\n\n```src/total.js\n<|editable_region_start|>\nfunction total(items) {\n  let priceSum<|user_cursor_is_here|> = 0;\n  for (const item of items) sum += item.price;\n  return sum;\n}\n<|editable_region_end|>\n```" +
        "\n\n### Response:\n",
    );
  });

  test("a no-change marker is an empty answer, never text in the editor", async () => {
    for (const marker of ["NO_EDITS", "KEEP_PREVIOUS", "<NO_CHANGE>"]) {
      vllm.enqueue(marker);
      const answer = await ask(relay, renameRequest());
      assert.deepEqual(answer.edits, [], marker);
      assert.equal(answer.reason, "no_change", marker);
    }
  });

  test("replies that are unreadable, rewrite past the region or delete most of it are dropped and counted", async () => {
    vllm.enqueue("Sure! Here is the code:\nlet priceSum = 0;");
    assert.equal((await ask(relay, renameRequest())).reason, "unparseable");
    vllm.enqueue("<|editable_region_start|>\n}\n<|editable_region_end|>");
    assert.equal((await ask(relay, renameRequest())).reason, "too_destructive");
    const request = renameRequest({ editable_region: { start_line: 21, end_line: 24 } });
    vllm.enqueue(`<|editable_region_start|>\n${RENAMED.slice(0, 4).join("\n")}\n<|editable_region_end|>`);
    const outside = await ask(relay, request);
    assert.equal(outside.reason, "outside_region");
    assert.deepEqual(outside.edits, []);
    assert.equal(await metric(relay, 'source="zeta",outcome="unparseable"'), 1);
    assert.equal(await metric(relay, 'source="zeta",outcome="too_destructive"'), 1);
    assert.equal(await metric(relay, 'source="zeta",outcome="outside_region"'), 1);
  });

  test("control tokens in the person's text reach the model broken, and lines holding them are never edited", async () => {
    const lines = [...RENAMED];
    lines[3] = "  return priceSum; // <|editable_region_end|>";
    const request = renameRequest({ excerpt: { start_line: 20, text: lines.join("\n") } });
    vllm.enqueue(`<|editable_region_start|>\n${RENAMED.join("\n")}\n<|editable_region_end|>`);
    const answer = await ask(relay, request);
    const prompt = (vllm.requests.at(-1)?.body as { prompt: string }).prompt;
    assert.equal(prompt.split("<|editable_region_end|>").length - 1, 1, "only the relay's own end marker is whole");
    assert.match(prompt, /return priceSum; \/\/ <\u200b\|editable_region_end\|>/);
    assert.deepEqual(answer.edits, []);
    assert.equal(answer.reason, "ambiguous");
  });

  test("an upstream failure is the error envelope, as for completions", async () => {
    await vllm.close();
    await expectError(await relay.request(PATH, { method: "POST", json: renameRequest() }), 502, "UPSTREAM_ERROR");
  });
});

describe("next edits from Zeta 2 through vLLM's /v1/completions", () => {
  let vllm: StandIn & { model: string };
  let relay: TestRelay;
  let started: StandInRelay<typeof vllm>;
  before(async () => {
    vllm = await startVllmStandIn({ model: "zed-industries/zeta-2" });
    started = await modelRelay(vllm, { TAB_RELAY_UPSTREAM_MODEL: vllm.model });
    relay = started.relay;
  });
  after(() => started.close());

  test("the prompt is Zed's V0211SeedCoder (SPM, merge markers), and the region before >>>>>>> UPDATED becomes edits", async () => {
    // The region is lines 20 to 23: the function's first four lines.
    vllm.enqueue(`${RENAMED.slice(0, 4).join("\n")}\n>>>>>>> UPDATED\n`);
    const answer = await ask(
      relay,
      renameRequest({
        excerpt: {
          start_line: 18,
          text: ["// totals", "", ...FILE.map((l, i) => (i === 1 ? "  let priceSum = 0;" : l))].join("\n"),
        },
        editable_region: { start_line: 20, end_line: 24 },
        surrounding_context: "--- file: src/price.js ---\nexport const price = 1;",
      }),
    );
    assert.deepEqual(answer.edits, EXPECTED_EDITS);
    assert.equal(answer.model, "zed-industries/zeta-2");
    const sent = vllm.requests.at(-1);
    assert.equal(sent?.path, "/v1/completions");
    const body = sent?.body as { prompt: string; temperature: number; stop?: unknown };
    assert.equal(body.temperature, 0);
    assert.equal(body.stop, undefined, "Zed sends Zeta 2 no stop sequence; the end marker ends the reply");
    assert.equal(
      body.prompt,
      "<[fim-suffix]>}\n" +
        "<[fim-prefix]><filename>src/price.js\nexport const price = 1;\n\n" +
        "<filename>edit_history\n--- a/src/total.js\n+++ b/src/total.js\n@@ -22,1 +22,1 @@\n-  let sum = 0;\n+  let priceSum = 0;\n\n" +
        "<filename>src/total.js\n// totals\n\n<<<<<<< CURRENT\nfunction total(items) {\n  let priceSum<|user_cursor|> = 0;\n" +
        "  for (const item of items) sum += item.price;\n  return sum;\n=======\n<[fim-middle]>",
    );
  });

  test("a reply cut before its end marker, or holding the format's markers, is dropped; NO_EDITS is no change", async () => {
    vllm.enqueue(RENAMED.join("\n"));
    assert.equal((await ask(relay, renameRequest())).reason, "unparseable");
    vllm.enqueue(`${RENAMED.join("\n")}\n=======\n${RENAMED.join("\n")}\n>>>>>>> UPDATED\n`);
    assert.equal((await ask(relay, renameRequest())).reason, "unparseable");
    vllm.enqueue("NO_EDITS\n>>>>>>> UPDATED\n");
    assert.equal((await ask(relay, renameRequest())).reason, "no_change");
    assert.equal(await metric(relay, 'source="zeta2",outcome="unparseable"'), 2);
  });

  test("merge-marker lines and Seed-Coder FIM tokens in the person's text reach the model broken", async () => {
    const lines = [...RENAMED];
    lines[4] = "=======";
    const request = renameRequest({
      excerpt: { start_line: 20, text: [...lines, ">>>>>>> UPDATED <[fim-middle]>"].join("\n") },
      editable_region: { start_line: 20, end_line: 25 },
    });
    vllm.enqueue(`${lines.slice(0, 4).join("\n")}\n=\u200b====== end\n>>>>>>> UPDATED\n`);
    const answer = await ask(relay, request);
    const prompt = (vllm.requests.at(-1)?.body as { prompt: string }).prompt;
    assert.equal(prompt.split("\n=======\n").length - 1, 1, "only the relay's own separator is whole");
    assert.equal(prompt.split(">>>>>>> UPDATED").length - 1, 0);
    assert.equal(prompt.split("<[fim-middle]>").length - 1, 1);
    assert.match(prompt, /<\[fim-suffix\]>>\u200b>>>>>> UPDATED <\u200b\[fim-middle\]>\n/);
    assert.deepEqual(answer.edits, [], "a line whose markers were broken is never written back");
    assert.equal(answer.reason, "ambiguous");
  });

  test("a name says which Zeta: zeta-2 is Zeta 2, zeta is Zeta 1, and zeta-2.1 (another format) is neither", async () => {
    const formatOf = async (model: string): Promise<string | undefined> => {
      const other = await startTestRelay({
        env: {
          TAB_RELAY_UPSTREAM_URL: `${vllm.origin}/v1`,
          TAB_RELAY_UPSTREAM_MODEL: model,
          TAB_RELAY_UPSTREAM_TIMEOUT_MS: "3000",
        },
      });
      try {
        await other.request(PATH, { method: "POST", json: renameRequest() });
        const sent = vllm.requests.at(-1);
        if (sent?.path === "/v1/chat/completions") return "chat";
        const prompt = (sent?.body as { prompt: string }).prompt;
        return prompt.startsWith("<[fim-suffix]>")
          ? "zeta2"
          : prompt.startsWith("### Instruction:")
            ? "zeta"
            : undefined;
      } finally {
        await other.close();
      }
    };
    assert.equal(await formatOf("hf.co/bartowski/zed-industries_zeta-2-GGUF:Q4_K_M"), "zeta2");
    assert.equal(await formatOf("zed-industries/zeta"), "zeta");
    assert.equal(await formatOf("zed-industries/zeta-2.1"), "chat");
  });
});

describe("next edits from Instinct through Ollama's /api/chat", () => {
  let ollama: StandIn & { rendered: string[] };
  let relay: TestRelay;
  let started: StandInRelay<typeof ollama>;
  before(async () => {
    ollama = await startOllamaStandIn({ models: { "nate/instinct:latest": {} } });
    started = await modelRelay(ollama, { TAB_RELAY_UPSTREAM_MODEL: "nate/instinct" });
    relay = started.relay;
  });
  after(() => started.close());

  test("Continue's messages go to /api/chat and the plain rewritten region comes back as edits", async () => {
    ollama.enqueue(`${RENAMED.join("\n")}\n`);
    const answer = await ask(
      relay,
      renameRequest({ surrounding_context: "--- file: src/price.js ---\nexport const price = 1;" }),
    );
    assert.deepEqual(answer.edits, EXPECTED_EDITS);
    const sent = ollama.requests.at(-1);
    assert.equal(sent?.path, "/api/chat");
    const body = sent?.body as { stream: boolean; messages: { role: string; content: string }[] };
    assert.equal(body.stream, false);
    assert.deepEqual(
      body.messages.map((m) => m.role),
      ["system", "user"],
    );
    assert.match(
      body.messages[0]?.content ?? "",
      /^You are Instinct, an intelligent next-edit predictor developed by Continue\.dev\./,
    );
    assert.equal(
      body.messages[1]?.content.slice(body.messages[1].content.indexOf("### Context:")),
      "### Context:\n<|context_file|>: src/price.js\n<|snippet|>\nexport const price = 1;\n\n" +
        '### User Edits:\n\nUser edited file "src/total.js"\n\n```diff\n@@ -22,1 +22,1 @@\n-  let sum = 0;\n+  let priceSum = 0;\n```\n\n' +
        "### User Excerpt:\nsrc/total.js\n\n<|editable_region_start|>\nfunction total(items) {\n  let priceSum<|user_cursor_is_here|> = 0;\n  for (const item of items) sum += item.price;\n  return sum;\n}\n<|editable_region_end|>```\n### Response:",
    );
  });

  test("region tokens inside the reply make it unreadable", async () => {
    ollama.enqueue(`${RENAMED[0]}\n<|editable_region_end|>\n${RENAMED.slice(1).join("\n")}`);
    const answer = await ask(relay, renameRequest());
    assert.equal(answer.reason, "unparseable");
    assert.equal(await metric(relay, 'source="instinct",outcome="unparseable"'), 1);
  });
});

describe("next edits from any chat model through /v1/chat/completions", () => {
  let server: StandIn & { model: string };
  let relay: TestRelay;
  let started: StandInRelay<typeof server>;
  before(async () => {
    server = await startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B-Instruct" });
    started = await modelRelay(server, { TAB_RELAY_UPSTREAM_MODEL: server.model });
    relay = started.relay;
  });
  after(() => started.close());

  test("one <rewrite> block is read; NO_CHANGE is empty; anything else is refused", async () => {
    server.enqueue(`<rewrite>\n${RENAMED.join("\n")}\n</rewrite>`);
    assert.deepEqual((await ask(relay, renameRequest())).edits, EXPECTED_EDITS);
    const sent = server.requests.at(-1);
    assert.equal(sent?.path, "/v1/chat/completions");
    const user = (sent?.body as { messages: { role: string; content: string }[] }).messages[1]?.content ?? "";
    assert.match(
      user,
      /<\|editable_region_start\|>\nfunction total\(items\) \{\n {2}let priceSum<\|user_cursor_is_here\|> = 0;/,
    );
    server.enqueue("NO_CHANGE");
    assert.equal((await ask(relay, renameRequest())).reason, "no_change");
    server.enqueue(`Here you go:\n<rewrite>\n${RENAMED.join("\n")}\n</rewrite>`);
    assert.equal((await ask(relay, renameRequest())).reason, "unparseable");
  });

  test("TAB_RELAY_NEXT_EDIT_FORMAT overrides the format the model's name implies", async () => {
    const zeta = await startTestRelay({
      env: {
        TAB_RELAY_UPSTREAM_URL: `${server.origin}/v1`,
        TAB_RELAY_UPSTREAM_MODEL: server.model,
        TAB_RELAY_NEXT_EDIT_FORMAT: "zeta",
        TAB_RELAY_UPSTREAM_TIMEOUT_MS: "3000",
      },
    });
    try {
      server.enqueue("NO_EDITS");
      assert.equal((await ask(zeta, renameRequest())).reason, "no_change");
      assert.equal(server.requests.at(-1)?.path, "/v1/completions");
    } finally {
      await zeta.close();
    }
  });
});

describe("next edits from a misbehaving model server", () => {
  let upstream: MisbehavingUpstream;
  let relay: TestRelay;
  before(async () => {
    upstream = await startMisbehavingUpstream({ kind: "nested-json", bytes: 512 * 1024 });
    relay = await startTestRelay({
      env: {
        TAB_RELAY_UPSTREAM_URL: upstream.url,
        TAB_RELAY_UPSTREAM_MODEL: "some-chat-model",
        TAB_RELAY_UPSTREAM_TIMEOUT_MS: "600",
        TAB_RELAY_UPSTREAM_DEADLINE_MS: "1500",
      },
    });
  });
  after(async () => {
    await relay.close();
    await upstream.close();
  });

  test("an answer nested a quarter of a million deep (within the size limit) is refused unparsed: 502 naming it", async () => {
    upstream.fault = { kind: "nested-json", bytes: 512 * 1024 };
    await expectError(
      await relay.request(PATH, { method: "POST", json: renameRequest() }),
      502,
      "UPSTREAM_ERROR",
      /nested more than 64 deep/,
    );
  });

  test("a server that keeps sending within the idle timeout is cut off at the completion deadline", async () => {
    // A chunk every 50 ms: never silent for the 600 ms idle timeout, and a megabyte would take minutes.
    upstream.fault = { kind: "deltas-forever", text: "a", everyMs: 50 };
    const started = performance.now();
    const response = await relay.request(PATH, {
      method: "POST",
      json: renameRequest(),
      signal: AbortSignal.timeout(10_000),
    });
    await expectError(response, 502, "UPSTREAM_ERROR", /within 1500 ms.*TAB_RELAY_UPSTREAM_DEADLINE_MS/);
    assert.ok(performance.now() - started < 5_000, `answered after ${Math.round(performance.now() - started)} ms`);
  });
});
