import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { APIError } from "openai";
import { complete, tabClient } from "../../examples/openai-sdk/complete";
import { startTestRelay, type TestRelay } from "../support/relayHarness";

/** The HTTP status of the SDK's APIError (the example loads the SDK's CommonJS build, so `instanceof` would not do). */
function statusOf(error: unknown): number | undefined {
  return (error as Partial<APIError>).status;
}

describe("the openai SDK at the relay's OpenAI base URL (/api/v1/tab/openai)", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay();
  });
  after(() => relay.close());

  test("models.list() and models.retrieve() read OpenAI's model list, while /tab/models keeps the spec's shape", async () => {
    const client = tabClient(relay.url, relay.apiKey);
    const models = [];
    for await (const model of client.models.list()) models.push(model);
    assert.deepEqual(models, [{ id: "tab-v1", object: "model", created: 1_735_689_600, owned_by: "tab-relay" }]);
    assert.deepEqual(await client.models.retrieve("tab-v1"), models[0]);
    await assert.rejects(
      client.models.retrieve("gpt-4o"),
      (error: unknown) => statusOf(error) === 404 && /no model gpt-4o/.test(String(error)),
    );

    const spec = (await (await relay.request("/api/v1/tab/models")).json()) as { data: { models: { id: string }[] } };
    assert.deepEqual(
      spec.data.models.map((model) => model.id),
      ["tab-v1"],
    );
  });

  test("a typed streamed completion (examples/openai-sdk) streams the suggestion through the same route", async () => {
    const fragments: string[] = [];
    const text = await complete(
      tabClient(relay.url, relay.apiKey),
      "acme",
      "function add(a, b) {\n  return a + b;\n}\nfunction add(a, b) {",
      (fragment) => fragments.push(fragment),
    );
    assert.equal(text, "\n  return a + b;\n}");
    assert.ok(fragments.filter((fragment) => fragment !== "").length > 1, "it arrived in pieces");
  });

  test("a 404 repeats the path as sent and, for one that looks like a completion route, says where completions are", async () => {
    const where =
      "; completions are at POST /api/v1/tab/chat/completions (for the openai SDK, the base URL /api/v1/tab/openai)";
    const cases = [
      ["POST", "/v1/chat/completions", `No route for POST /v1/chat/completions${where}`],
      ["POST", "/api/v1/chat/completions?stream=true", `No route for POST /api/v1/chat/completions${where}`],
      ["POST", "/api/v1/tab/completions", `No route for POST /api/v1/tab/completions${where}`],
      ["POST", "/api/v1/tab/chat/completion", `No route for POST /api/v1/tab/chat/completion${where}`],
      ["GET", "/api/v1/nothing-here", "No route for GET /api/v1/nothing-here"],
      ["GET", "/v1/tab/nothing-here", "No route for GET /v1/tab/nothing-here"],
      ["GET", "/nothing-here", "No route for GET /nothing-here"],
    ] as const;
    for (const [method, path, message] of cases) {
      const response = await relay.request(path, { method, ...(method === "POST" ? { json: {} } : {}) });
      assert.equal(response.status, 404, path);
      assert.deepEqual(await response.json(), { error: { code: "NOT_FOUND", message } });
    }
  });

  test("another method on a completion route answers 405 with Allow: POST", async () => {
    for (const [method, path] of [
      ["GET", "/api/v1/tab/chat/completions"],
      ["GET", "/v1/tab/chat/completions/"],
      ["PUT", "/api/v1/tab/openai/chat/completions"],
    ] as const) {
      const response = await relay.request(path, { method });
      assert.equal(response.status, 405, `${method} ${path}`);
      assert.equal(response.headers.get("allow"), "POST");
      assert.deepEqual(await response.json(), {
        error: { code: "METHOD_NOT_ALLOWED", message: `${method} ${path}: completions are asked for with POST` },
      });
    }
  });

  test("without a key the SDK gets the API's 401", async () => {
    await assert.rejects(
      tabClient(relay.url, "svc_ws_nope").models.list(),
      (error: unknown) => statusOf(error) === 401,
    );
  });
});
