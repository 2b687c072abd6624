import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type ProbeClient, type ProbeRequest, ProbeFailure } from "./http";
import { type ProbeLine, surveyServer } from "./survey";

type Route = { status: number; json?: unknown; text?: string } | "refused";

/** A scripted server: `METHOD url` → answer; anything else is a 404. Each probe takes 7 ms on the fake clock. */
function scripted(routes: Record<string, Route>) {
  const requests: ProbeRequest[] = [];
  let now = 1_000;
  const probe: ProbeClient = async (request) => {
    requests.push(request);
    now += 7;
    const route = routes[`${request.method} ${request.url}`] ?? { status: 404, text: "404 page not found" };
    if (route === "refused") throw new ProbeFailure("ECONNREFUSED");
    return { status: route.status, contentType: "application/json", text: route.text ?? JSON.stringify(route.json) };
  };
  return { probe, requests, clock: { now: () => now }, asked: () => requests.map((r) => `${r.method} ${r.url}`) };
}

const ROOT = "http://127.0.0.1:9";

describe("surveying a model server", () => {
  test("vLLM is known by its model list alone: one probe, /v1 added to a root URL", async () => {
    const server = scripted({
      [`GET ${ROOT}/v1/models`]: {
        status: 200,
        json: { object: "list", data: [{ id: "Qwen/Qwen2.5-Coder-7B", owned_by: "vllm" }] },
      },
    });
    const lines: ProbeLine[] = [];
    const survey = await surveyServer(
      { url: ROOT, timeoutMs: 3000 },
      { ...server, progress: (line) => lines.push(line) },
    );
    assert.deepEqual(server.asked(), [`GET ${ROOT}/v1/models`]);
    assert.deepEqual(
      [survey.kind, survey.base, survey.baseNote, survey.model?.id],
      ["vllm", `${ROOT}/v1`, "the URL given plus /v1", "Qwen/Qwen2.5-Coder-7B"],
    );
    assert.deepEqual(lines, [
      {
        method: "GET",
        url: `${ROOT}/v1/models`,
        status: 200,
        ms: 7,
        told: '1 model: Qwen/Qwen2.5-Coder-7B (owned_by "vllm" in its model list)',
      },
    ]);
    assert.equal(server.requests[0]?.timeoutMs, 3000);
  });

  test("llama.cpp: /props, /health, then /infill with nothing to write tells whether the model has FIM tokens", async () => {
    for (const [status, infill] of [
      [200, true],
      [501, false],
    ] as const) {
      const server = scripted({
        [`GET ${ROOT}/v1/models`]: {
          status: 200,
          json: { object: "list", data: [{ id: "/m/q.gguf", owned_by: "llamacpp" }] },
        },
        [`GET ${ROOT}/props`]: {
          status: 200,
          json: { default_generation_settings: { n_ctx: 8192 }, model_path: "/m/q.gguf" },
        },
        [`GET ${ROOT}/health`]: { status: 200, json: { status: "ok" } },
        [`POST ${ROOT}/infill`]:
          status === 200
            ? { status, json: { content: "", stop: true } }
            : {
                status,
                json: {
                  error: {
                    code: 501,
                    message: "Infill is not supported by this model: prefix token is missing. ",
                    type: "not_supported_error",
                  },
                },
              },
      });
      const survey = await surveyServer({ url: `${ROOT}/v1`, timeoutMs: 3000 }, server);
      assert.deepEqual(server.asked(), [
        `GET ${ROOT}/v1/models`,
        `GET ${ROOT}/props`,
        `GET ${ROOT}/health`,
        `POST ${ROOT}/infill`,
      ]);
      assert.deepEqual(JSON.parse(server.requests[3]?.body ?? ""), {
        input_prefix: "",
        input_suffix: "",
        n_predict: 0,
        cache_prompt: false,
        stream: false,
      });
      assert.deepEqual(
        [survey.kind, survey.infill, survey.props?.contextSize, survey.baseNote],
        ["llama.cpp", infill, 8192, "as given"],
      );
      if (!infill)
        assert.match(
          survey.probes[3]?.told ?? "",
          /^the model has no FIM tokens \(Infill is not supported by this model: prefix token is missing\.\)$/,
        );
    }
  });

  test("llama.cpp still loading its model: known by its 503, and nothing is sent to /infill", async () => {
    const loading = {
      status: 503,
      json: { error: { code: 503, message: "Loading model", type: "unavailable_error" } },
    };
    const server = scripted({ [`GET ${ROOT}/v1/models`]: loading, [`GET ${ROOT}/health`]: loading });
    const survey = await surveyServer({ url: ROOT, timeoutMs: 3000 }, server);
    assert.deepEqual(server.asked(), [`GET ${ROOT}/v1/models`, `GET ${ROOT}/health`]);
    assert.deepEqual(
      [survey.kind, survey.loading, survey.probes[1]?.told],
      ["llama.cpp", true, "still loading the model"],
    );
  });

  test("Ollama: /props and /api/version while unknown, then the chosen model's capabilities", async () => {
    const server = scripted({
      [`GET ${ROOT}/v1/models`]: {
        status: 200,
        json: {
          object: "list",
          data: [
            { id: "qwen2.5-coder:1.5b", owned_by: "library" },
            { id: "llama3.2:1b", owned_by: "library" },
          ],
        },
      },
      [`GET ${ROOT}/api/version`]: { status: 200, json: { version: "0.12.6" } },
      [`POST ${ROOT}/api/show`]: { status: 200, json: { capabilities: ["completion"] } },
    });
    const survey = await surveyServer({ url: ROOT, model: "llama3.2:1b", timeoutMs: 3000 }, server);
    assert.deepEqual(server.asked(), [
      `GET ${ROOT}/v1/models`,
      `GET ${ROOT}/props`,
      `GET ${ROOT}/api/version`,
      `POST ${ROOT}/api/show`,
    ]);
    assert.deepEqual(JSON.parse(server.requests[3]?.body ?? ""), { model: "llama3.2:1b" });
    assert.equal(server.requests[3]?.headers?.["content-type"], "application/json");
    assert.deepEqual(
      [survey.kind, survey.version, survey.insert, survey.model?.why],
      ["ollama", "0.12.6", false, "as given; the server lists it"],
    );
    assert.deepEqual(
      survey.probes.map((line) => line.told),
      [
        "2 models: qwen2.5-coder:1.5b, llama3.2:1b",
        "no such route",
        "Ollama 0.12.6",
        "llama3.2:1b: capabilities completion",
      ],
    );
  });

  test("TGI: known by /info, last; its model id stands in for a missing model list", async () => {
    const server = scripted({
      [`GET ${ROOT}/info`]: {
        status: 200,
        json: { model_id: "bigcode/starcoder", router: "text-generation-router", version: "3.3.6" },
      },
    });
    const survey = await surveyServer({ url: ROOT, timeoutMs: 3000 }, server);
    assert.deepEqual(server.asked(), [
      `GET ${ROOT}/v1/models`,
      `GET ${ROOT}/models`,
      `GET ${ROOT}/props`,
      `GET ${ROOT}/api/version`,
      `GET ${ROOT}/info`,
    ]);
    assert.deepEqual(
      [survey.kind, survey.version, survey.model?.id, survey.base],
      ["tgi", "3.3.6", "bigcode/starcoder", `${ROOT}/v1`],
    );
  });

  test("a URL without /v1 whose server lists models at the URL itself keeps the URL as the base", async () => {
    const server = scripted({ [`GET ${ROOT}/models`]: { status: 200, json: { object: "list", data: [{ id: "m" }] } } });
    const survey = await surveyServer({ url: ROOT, timeoutMs: 3000 }, server);
    assert.deepEqual(
      [survey.base, survey.baseNote, survey.kind],
      [ROOT, "as given; it serves no /v1/models, so no /v1 was added", "openai-compatible"],
    );
  });

  test("nothing listening: one probe, no answer, nothing else asked", async () => {
    const server = scripted({ [`GET ${ROOT}/v1/models`]: "refused" });
    const survey = await surveyServer({ url: `${ROOT}/v1`, timeoutMs: 3000 }, server);
    assert.deepEqual(server.asked(), [`GET ${ROOT}/v1/models`]);
    assert.equal(survey.reachable, false);
    assert.deepEqual(survey.probes, [
      { method: "GET", url: `${ROOT}/v1/models`, ms: 7, error: "ECONNREFUSED", told: "ECONNREFUSED" },
    ]);
  });

  test("the key goes with every probe; a refusal is noted and no other base is tried; Mistral by its host", async () => {
    const server = scripted({
      ["GET https://api.mistral.ai/v1/models"]: { status: 401, json: { message: "Unauthorized", request_id: "r" } },
    });
    const survey = await surveyServer({ url: "https://api.mistral.ai", apiKey: "mk-1", timeoutMs: 3000 }, server);
    assert.equal(server.asked()[0], "GET https://api.mistral.ai/v1/models");
    assert.ok(!server.asked().includes("GET https://api.mistral.ai/models"));
    assert.ok(server.requests.every((request) => request.headers?.["authorization"] === "Bearer mk-1"));
    assert.deepEqual(
      [survey.authRefused, survey.kind, survey.evidence, survey.probes[0]?.told],
      [true, "mistral", "the host name", "refused: Unauthorized"],
    );
    assert.equal(survey.model, undefined);
  });

  test("a server that answers every probe with an error is reachable and unknown", async () => {
    const routes: Record<string, Route> = {};
    for (const path of ["/v1/models", "/models", "/props", "/api/version", "/info"])
      routes[`GET ${ROOT}${path}`] = { status: 500, json: { error: "boom" } };
    const survey = await surveyServer({ url: ROOT, timeoutMs: 3000 }, scripted(routes));
    assert.deepEqual([survey.reachable, survey.kind, survey.model], [true, undefined, undefined]);
    assert.deepEqual(
      survey.probes.map((line) => [line.status, line.told]),
      Array(5).fill([500, "boom"]),
    );
  });
});
