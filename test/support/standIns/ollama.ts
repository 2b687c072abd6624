import type { ServerResponse } from "node:http";
import {
  type Generation,
  type JsonType,
  type RecordedRequest,
  type StandIn,
  type StandInBase,
  applyStops,
  isRecord,
  jsonType,
  roughTokens,
  sendJson,
  sendText,
  startEvents,
  startStandInServer,
  typeProblem,
} from "./server";

/**
 * Ollama (notes-internal/model-servers.md §3; ollama/ollama @ fb30760996871fa9460115c753afd2c60d4ab0f7):
 * - `POST /v1/completions` takes `suffix` (openai/openai.go CompletionRequest, PR #5611): a non-empty one runs
 *   the model's template with .Prompt and .Suffix (template/template.go), which needs the `insert` capability;
 *   a model whose template has no .Suffix answers 400 "<full model name> does not support insert"
 *   (server/routes.go, server/images.go). An empty suffix takes the chat path of the template.
 * - Body fields are bound by encoding/json: a wrong type answers 400 with Go's decode error, unknown fields
 *   are ignored; `stop` must be a string or an array of strings ("invalid type for 'stop' field").
 * - An unknown model answers 404 "model 'x' not found".
 * - Errors are re-encoded `{"error":{"message","type","param":null,"code":null}}` (middleware/openai.go).
 * - Streams `data: {…}\n\n` with `choices[0].text` and `system_fingerprint: "fp_ollama"`, then `data: [DONE]`.
 * - `GET /api/version` `{"version":…}`, `GET /v1/models` (`owned_by` the namespace). An unknown route is gin's
 *   404 "404 page not found" in text/plain.
 * - `POST /api/show` `{"model"}` (server/routes.go ShowHandler; api/types.go ShowRequest, ShowResponse):
 *   `capabilities` holds `completion` (a GGUF model without pooling_type) and `insert` when the template uses
 *   .Suffix (server/images.go ggufCapabilities, goTemplateCapabilities). Errors are the native API's
 *   `{"error":"…"}`: 400 "missing request body" or "model is required", 404 "model 'x' not found".
 * - `POST /api/chat` (docs/api.md "Generate a chat completion"), the native route Continue's Ollama class uses
 *   (continuedev/continue core/llm/llms/Ollama.ts `_streamChat`), as server/routes.go `ChatHandler` (route at
 *   `r.POST("/api/chat", …)` in `GenerateRoutes`) and api/types.go `ChatRequest`, `Message`, `ChatResponse`,
 *   `Options`, `Runner` and `Options.FromMap` handle it, in this order:
 *   - the body is bound with gin's `c.ShouldBindJSON`: no body is 400 "missing request body"; a wrong type is 400
 *     with Go's decode error; an unknown field is IGNORED, as encoding/json does (the repository never turns on
 *     gin's `EnableDecoderDisallowUnknownFields`), so the stand-in does not refuse one either;
 *   - `top_logprobs` outside 0..20 is 400; an empty `model` is 400 "model is required"; an unknown one is 404
 *     "model 'x' not found";
 *   - `options` goes through `Options.FromMap` when the runner is scheduled: an unknown option is only logged
 *     ("invalid option provided") and ignored; a known one of the wrong type fails the request with
 *     `option "x" must be of type float32` (integer, boolean, string, array), which `handleScheduleError` answers
 *     as 500; a number for an integer option is truncated, not refused;
 *   - `stream` defaults to true: `application/x-ndjson` lines, the last with `done: true` and `done_reason`; with
 *     `stream: false` one `ChatResponse` (`model`, `created_at`, `message {role, content}`, `done`, `done_reason`
 *     and the metrics).
 *   Where the stand-in differs: Go's decode error inside a message (`messages[i].role` a number) is approximated in
 *   its wording (Message has its own UnmarshalJSON, so Go names the field through an alias type); `format` and
 *   `think` are checked for their JSON type only, not for the values Ollama then refuses; nothing is generated.
 * Each request records what the model would read (`rendered`), so tests can check the FIM prompt Ollama builds.
 */
export interface OllamaModel {
  /** The model's FIM template with {{ .Prompt }} and {{ .Suffix }}; none means no `insert` capability. */
  fimTemplate?: string;
}

export interface OllamaOptions extends StandInBase {
  models?: Record<string, OllamaModel>;
  version?: string;
}

const FIELDS: Record<string, readonly JsonType[]> = {
  model: ["string", "null"],
  prompt: ["string", "null"],
  frequency_penalty: ["number", "null"],
  max_tokens: ["integer", "null"],
  presence_penalty: ["number", "null"],
  seed: ["integer", "null"],
  stream: ["boolean", "null"],
  stream_options: ["object", "null"],
  temperature: ["number", "null"],
  top_p: ["number", "null"],
  suffix: ["string", "null"],
  logprobs: ["integer", "null"],
};

/** Go's names for the JSON types it fails to decode. */
const GO_TYPES: Record<string, string> = {
  string: "string",
  integer: "number",
  number: "number",
  boolean: "bool",
  array: "array",
  object: "object",
  null: "null",
};
const GO_FIELD_TYPES: Record<string, string> = {
  max_tokens: "int",
  seed: "int",
  logprobs: "int",
  stream: "bool",
  temperature: "float32",
  top_p: "float32",
  frequency_penalty: "float32",
  presence_penalty: "float32",
  stream_options: "openai.StreamOptions",
};

/** api.ChatRequest's fields (api/types.go): JSON types Go decodes into them, and the Go type its error names. */
const CHAT_FIELDS: Record<string, { json: readonly JsonType[]; go: string }> = {
  model: { json: ["string", "null"], go: "string" },
  messages: { json: ["array", "null"], go: "[]api.Message" },
  stream: { json: ["boolean", "null"], go: "bool" },
  // json.RawMessage: any JSON value.
  format: { json: ["string", "object", "array", "number", "boolean", "null"], go: "json.RawMessage" },
  // *api.Duration has its own UnmarshalJSON: a number of seconds or a duration string.
  keep_alive: { json: ["string", "number", "null"], go: "api.Duration" },
  tools: { json: ["array", "null"], go: "api.Tools" },
  options: { json: ["object", "null"], go: "map[string]interface {}" },
  think: { json: ["boolean", "string", "null"], go: "api.ThinkValue" },
  truncate: { json: ["boolean", "null"], go: "bool" },
  shift: { json: ["boolean", "null"], go: "bool" },
  _debug_render_only: { json: ["boolean", "null"], go: "bool" },
  logprobs: { json: ["boolean", "null"], go: "bool" },
  top_logprobs: { json: ["integer", "null"], go: "int" },
};
/** api.Message's fields. */
const MESSAGE_FIELDS: Record<string, readonly JsonType[]> = {
  role: ["string", "null"],
  content: ["string", "null"],
  thinking: ["string", "null"],
  images: ["array", "null"],
  tool_calls: ["array", "null"],
  tool_name: ["string", "null"],
  tool_call_id: ["string", "null"],
};
/** The kinds of api.Options and api.Runner fields, by JSON name, as Options.FromMap checks them. */
const OPTION_KINDS: Record<string, "integer" | "float32" | "boolean" | "array"> = {
  num_ctx: "integer",
  num_batch: "integer",
  num_gpu: "integer",
  main_gpu: "integer",
  use_mmap: "boolean",
  num_thread: "integer",
  draft_num_predict: "integer",
  num_keep: "integer",
  seed: "integer",
  num_predict: "integer",
  top_k: "integer",
  top_p: "float32",
  min_p: "float32",
  typical_p: "float32",
  repeat_last_n: "integer",
  temperature: "float32",
  repeat_penalty: "float32",
  presence_penalty: "float32",
  frequency_penalty: "float32",
  stop: "array",
};

/** Options.FromMap's error for the first known option of the wrong type; unknown ones are ignored. */
function optionProblem(options: Record<string, unknown>): string | undefined {
  for (const [key, value] of Object.entries(options)) {
    const kind = OPTION_KINDS[key];
    if (kind === undefined || value === null) continue;
    if ((kind === "integer" || kind === "float32") && typeof value !== "number")
      return `option "${key}" must be of type ${kind}`;
    if (kind === "boolean" && typeof value !== "boolean") return `option "${key}" must be of type boolean`;
    if (kind === "array") {
      if (!Array.isArray(value)) return `option "${key}" must be of type array`;
      if (!value.every((item) => typeof item === "string")) return `option "${key}" must be of an array of strings`;
    }
  }
  return undefined;
}

/** Qwen2.5-Coder's FIM template in Ollama's library (UNVERIFIED: library templates are not in ollama/ollama). */
export const QWEN_FIM_TEMPLATE = "<|fim_prefix|>{{ .Prompt }}<|fim_suffix|>{{ .Suffix }}<|fim_middle|>";

export async function startOllamaStandIn(options: OllamaOptions = {}): Promise<StandIn & { rendered: string[] }> {
  const models = options.models ?? { "qwen2.5-coder:1.5b": { fimTemplate: QWEN_FIM_TEMPLATE }, "llama3.2:1b": {} };
  const created = 1_700_000_000;
  const rendered: string[] = [];
  let sequence = 0;

  const error = (res: ServerResponse, status: number, message: string) =>
    sendJson(
      res,
      status,
      {
        error: {
          message,
          type: status === 400 ? "invalid_request_error" : status === 404 ? "not_found_error" : "api_error",
          param: null,
          code: null,
        },
      },
      { trailingNewline: true },
    );
  const fullName = (name: string) => `registry.ollama.ai/library/${name.includes(":") ? name : `${name}:latest`}`;

  function show(request: RecordedRequest, res: ServerResponse): void {
    if (request.raw === "") return sendJson(res, 400, { error: "missing request body" });
    if (!isRecord(request.body))
      return sendJson(res, 400, { error: "invalid character looking for beginning of value" });
    const name =
      typeof request.body["model"] === "string" && request.body["model"] !== ""
        ? request.body["model"]
        : request.body["name"];
    if (typeof name !== "string" || name === "") return sendJson(res, 400, { error: "model is required" });
    const model = models[name] ?? models[`${name}:latest`];
    if (!model) return sendJson(res, 404, { error: `model '${name}' not found` });
    const template = model.fimTemplate ?? "{{ .Prompt }}";
    sendJson(res, 200, {
      modelfile: `FROM ${fullName(name)}\nTEMPLATE """${template}"""\n`,
      template,
      details: {
        parent_model: "",
        format: "gguf",
        family: "",
        families: null,
        parameter_size: "1.5B",
        quantization_level: "Q4_K_M",
      },
      model_info: { "general.architecture": "stand-in" },
      capabilities: model.fimTemplate === undefined ? ["completion"] : ["completion", "insert"],
      modified_at: new Date(created * 1000).toISOString(),
    });
  }

  function completions(request: RecordedRequest, res: ServerResponse, generation: Generation): void {
    if (!isRecord(request.body)) {
      error(res, 400, request.raw === "" ? "EOF" : "invalid character looking for beginning of value");
      return;
    }
    const body = request.body;
    const wrong = typeProblem(body, FIELDS);
    if (wrong) {
      const goType = GO_FIELD_TYPES[wrong.field] ?? "string";
      error(
        res,
        400,
        `json: cannot unmarshal ${GO_TYPES[wrong.received] ?? wrong.received} into Go struct field CompletionRequest.${wrong.field} of type ${goType}`,
      );
      return;
    }
    const stop = body["stop"];
    if (
      stop !== undefined &&
      stop !== null &&
      typeof stop !== "string" &&
      !(Array.isArray(stop) && stop.every((s) => typeof s === "string"))
    ) {
      error(
        res,
        400,
        `invalid type for 'stop' field: ${Array.isArray(stop) ? "[]interface {}" : typeof stop === "number" ? "float64" : "map[string]interface {}"}`,
      );
      return;
    }
    const name = typeof body["model"] === "string" ? body["model"] : "";
    const model = models[name] ?? models[`${name}:latest`];
    if (!model) {
      error(res, 404, `model '${name}' not found`);
      return;
    }
    const prompt = typeof body["prompt"] === "string" ? body["prompt"] : "";
    const suffix = typeof body["suffix"] === "string" ? body["suffix"] : "";
    if (suffix !== "") {
      if (model.fimTemplate === undefined) {
        error(res, 400, `${fullName(name)} does not support insert`);
        return;
      }
      if (options.record !== false)
        rendered.push(model.fimTemplate.replace("{{ .Prompt }}", prompt).replace("{{ .Suffix }}", suffix));
    } else if (options.record !== false) {
      rendered.push(`(chat template) ${prompt}`);
    }
    const drawn = generation.next();
    const { pieces } = applyStops(
      drawn.pieces,
      typeof stop === "string" ? [stop] : Array.isArray(stop) ? (stop as string[]) : [],
    );
    const id = `cmpl-${++sequence % 999}`;
    const text = pieces.join("");
    if (body["stream"] !== true || drawn.json) {
      sendJson(
        res,
        200,
        {
          id,
          object: "text_completion",
          created,
          model: name,
          system_fingerprint: "fp_ollama",
          choices: [{ text, index: 0, finish_reason: "stop" }],
          usage: {
            prompt_tokens: roughTokens(prompt),
            completion_tokens: roughTokens(text),
            total_tokens: roughTokens(prompt) + roughTokens(text),
          },
        },
        { trailingNewline: true },
      );
      return;
    }
    const send = startEvents(res);
    const chunk = (piece: string, finish: string | null) => ({
      id,
      object: "text_completion",
      created,
      choices: [{ text: piece, index: 0, finish_reason: finish }],
      model: name,
      system_fingerprint: "fp_ollama",
    });
    for (const piece of pieces) send(chunk(piece, null));
    send(chunk("", "stop"));
    res.end("data: [DONE]\n\n");
  }

  function chat(request: RecordedRequest, res: ServerResponse, generation: Generation): void {
    // gin's c.JSON, which the native API answers with.
    const native = (out: ServerResponse, status: number, value: unknown) =>
      sendJson(out, status, value, { contentType: "application/json; charset=utf-8" });
    if (request.raw === "") return native(res, 400, { error: "missing request body" });
    if (!isRecord(request.body)) return native(res, 400, { error: "invalid character looking for beginning of value" });
    const body = request.body;
    const wrong = typeProblem(body, Object.fromEntries(Object.entries(CHAT_FIELDS).map(([k, v]) => [k, v.json])));
    if (wrong)
      return native(res, 400, {
        error: `json: cannot unmarshal ${GO_TYPES[wrong.received] ?? wrong.received} into Go struct field ChatRequest.${wrong.field} of type ${CHAT_FIELDS[wrong.field]?.go ?? "string"}`,
      });
    const messages = (body["messages"] ?? []) as unknown[];
    for (const message of messages) {
      const problem = isRecord(message) ? typeProblem(message, MESSAGE_FIELDS) : undefined;
      if (!isRecord(message) && message !== null)
        return native(res, 400, {
          error: `json: cannot unmarshal ${GO_TYPES[jsonType(message)] ?? "value"} into Go struct field ChatRequest.messages of type api.Message`,
        });
      if (problem)
        return native(res, 400, {
          error: `json: cannot unmarshal ${GO_TYPES[problem.received] ?? problem.received} into Go struct field Alias.${problem.field} of type ${problem.field === "images" || problem.field === "tool_calls" ? "array" : "string"}`,
        });
    }
    const topLogprobs = body["top_logprobs"];
    if (typeof topLogprobs === "number" && (topLogprobs < 0 || topLogprobs > 20))
      return native(res, 400, { error: "top_logprobs must be between 0 and 20" });
    const name = typeof body["model"] === "string" ? body["model"] : "";
    if (name === "") return native(res, 400, { error: "model is required" });
    if (!(models[name] ?? models[`${name}:latest`])) return native(res, 404, { error: `model '${name}' not found` });
    const option = isRecord(body["options"]) ? optionProblem(body["options"]) : undefined;
    if (option !== undefined) return native(res, 500, { error: option });
    if (options.record !== false)
      rendered.push(
        messages
          .map(
            (m) =>
              `${String((m as Record<string, unknown> | null)?.["role"] ?? "")}: ${String((m as Record<string, unknown> | null)?.["content"] ?? "")}`,
          )
          .join("\n"),
      );
    const drawn = generation.next();
    const at = new Date(created * 1000).toISOString();
    const done = (content: string) => ({
      model: name,
      created_at: at,
      message: { role: "assistant", content },
      done_reason: "stop",
      done: true,
      total_duration: 1_000_000,
      load_duration: 100_000,
      prompt_eval_count: 10,
      prompt_eval_duration: 100_000,
      eval_count: roughTokens(drawn.pieces.join("")),
      eval_duration: 100_000,
    });
    if (body["stream"] === false || drawn.json) return native(res, 200, done(drawn.pieces.join("")));
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    for (const piece of drawn.pieces)
      res.write(
        `${JSON.stringify({ model: name, created_at: at, message: { role: "assistant", content: piece }, done: false })}\n`,
      );
    res.end(`${JSON.stringify(done(""))}\n`);
  }

  const standIn = await startStandInServer(options, (request, res, generation) => {
    switch (`${request.method} ${request.path}`) {
      case "POST /api/chat":
        return chat(request, res, generation);
      case "GET /api/version":
      case "HEAD /api/version":
        return sendJson(
          res,
          200,
          { version: options.version ?? "0.12.6" },
          { contentType: "application/json; charset=utf-8" },
        );
      case "GET /v1/models":
        return sendJson(
          res,
          200,
          {
            object: "list",
            data: Object.keys(models).map((id) => ({ id, object: "model", created, owned_by: "library" })),
          },
          { trailingNewline: true },
        );
      case "POST /v1/completions":
        return completions(request, res, generation);
      case "POST /api/show":
        return show(request, res);
      default:
        return sendText(res, 404, "404 page not found");
    }
  });
  return Object.assign(standIn, { rendered });
}
