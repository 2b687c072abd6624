import type { ServerResponse } from "node:http";
import {
  type Generation,
  type JsonType,
  type RecordedRequest,
  type StandIn,
  type StandInBase,
  applyStops,
  isRecord,
  roughTokens,
  sendJson,
  startEvents,
  startStandInServer,
  typeProblem,
} from "./server";

/**
 * Mistral's API (notes-internal/model-servers.md §4):
 * - `POST /v1/fim/completions` with the fields of the official SDK's FIMCompletionRequest
 *   (mistralai/client-python src/mistralai/client/models/fimcompletionrequest.py @ 05629d23): `model` and
 *   `prompt` required, `suffix`, `temperature`, `top_p`, `max_tokens`, `min_tokens`, `stream`, `stop`,
 *   `random_seed`, `metadata`, `prompt_cache_key`. A missing or mistyped field answers 422
 *   `{"detail":[{"type","loc","msg","input"}]}` (the SDK's HTTPValidationError). Whether the API refuses
 *   unknown fields is UNVERIFIED; this stand-in refuses them (422 extra_forbidden), so a client sends only
 *   documented ones.
 * - Answers are chat-shaped: `choices[0].message.content`, or streamed `choices[0].delta.content` chunks
 *   ending with `data: [DONE]` (docs.mistral.ai/api/endpoint/fim; the SDK's `sentinel="[DONE]"`).
 * - `POST /v1/chat/completions`, `GET /v1/models`; there is no `/v1/completions`. Model cards follow the SDK's
 *   BaseModelCard (src/mistralai/client/models/basemodelcard.py, modelcapabilities.py @ 05629d23): `owned_by`
 *   "mistralai", `capabilities` with `completion_fim`, which this stand-in sets for Codestral models only.
 * - Without `Authorization: Bearer <key>` the API answers 401 (body shape UNVERIFIED), /v1/models included
 *   (Continue tells a Codestral-only key by the 401 of GET https://api.mistral.ai/v1/models, model-servers.md §4).
 */
export interface MistralOptions extends StandInBase {
  apiKey?: string;
  models?: readonly string[];
}

const FIM_FIELDS: Record<string, readonly JsonType[]> = {
  model: ["string"],
  prompt: ["string"],
  suffix: ["string", "null"],
  temperature: ["number", "null"],
  top_p: ["number", "null"],
  max_tokens: ["integer", "null"],
  min_tokens: ["integer", "null"],
  stream: ["boolean"],
  stop: ["string", "string[]", "null"],
  random_seed: ["integer", "null"],
  metadata: ["object", "null"],
  prompt_cache_key: ["string", "null"],
};

const CHAT_FIELDS: Record<string, readonly JsonType[]> = {
  model: ["string"],
  messages: ["array"],
  temperature: ["number", "null"],
  top_p: ["number", "null"],
  max_tokens: ["integer", "null"],
  stream: ["boolean"],
  stop: ["string", "string[]", "null"],
  random_seed: ["integer", "null"],
};

export async function startMistralStandIn(options: MistralOptions = {}): Promise<StandIn> {
  const models = options.models ?? ["codestral-latest", "codestral-2508"];
  const created = 1_759_496_862;
  let sequence = 0;

  const unprocessable = (res: ServerResponse, type: string, field: string, msg: string, input: unknown) =>
    sendJson(res, 422, { detail: [{ type, loc: ["body", field], msg, input }] });

  /** Authorization, the schema and the model; answers and returns undefined when something is wrong. */
  function validate(
    request: RecordedRequest,
    res: ServerResponse,
    fields: Record<string, readonly JsonType[]>,
    required: readonly string[],
  ): Record<string, unknown> | undefined {
    if (options.apiKey && request.headers["authorization"] !== `Bearer ${options.apiKey}`) {
      sendJson(res, 401, { message: "Unauthorized", request_id: "standin" });
      return undefined;
    }
    if (!isRecord(request.body)) {
      sendJson(res, 422, {
        detail: [
          {
            type: "model_attributes_type",
            loc: ["body"],
            msg: "Input should be a valid dictionary or object to extract fields from",
            input: request.raw,
          },
        ],
      });
      return undefined;
    }
    const body = request.body;
    const missing = required.find((field) => !(field in body));
    if (missing !== undefined) {
      unprocessable(res, "missing", missing, "Field required", body);
      return undefined;
    }
    const wrong = typeProblem(body, fields);
    if (wrong) {
      unprocessable(
        res,
        `${wrong.expected[0]}_type`,
        wrong.field,
        `Input should be a valid ${wrong.expected.join(" or ")}`,
        body[wrong.field],
      );
      return undefined;
    }
    const extra = Object.keys(body).find((field) => !(field in fields));
    if (extra !== undefined) {
      unprocessable(res, "extra_forbidden", extra, "Extra inputs are not permitted", body[extra]);
      return undefined;
    }
    if (!models.includes(String(body["model"]))) {
      sendJson(res, 400, {
        object: "error",
        message: `Invalid model: ${String(body["model"])}`,
        type: "invalid_model",
        param: null,
        code: "1500",
      });
      return undefined;
    }
    return body;
  }

  function answer(body: Record<string, unknown>, res: ServerResponse, generation: Generation): void {
    const stop = body["stop"];
    const drawn = generation.next();
    const { pieces } = applyStops(
      drawn.pieces,
      typeof stop === "string" ? [stop] : Array.isArray(stop) ? (stop as string[]) : [],
    );
    const id = `${(++sequence).toString(16).padStart(32, "0")}`;
    const model = String(body["model"]);
    const text = pieces.join("");
    const usage = {
      prompt_tokens: roughTokens(String(body["prompt"] ?? "")),
      completion_tokens: roughTokens(text),
      total_tokens: roughTokens(String(body["prompt"] ?? "")) + roughTokens(text),
    };
    if (body["stream"] !== true || drawn.json) {
      sendJson(res, 200, {
        id,
        object: "chat.completion",
        model,
        usage,
        created,
        choices: [
          {
            index: 0,
            message: { content: text, tool_calls: null, prefix: false, role: "assistant" },
            finish_reason: "stop",
          },
        ],
      });
      return;
    }
    const send = startEvents(res);
    const chunk = (delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
    send(chunk({ role: "assistant", content: "" }, null));
    pieces.forEach((piece, index) =>
      send(
        chunk(
          { content: piece },
          index === pieces.length - 1 ? "stop" : null,
          index === pieces.length - 1 ? { usage } : {},
        ),
      ),
    );
    if (pieces.length === 0) send(chunk({ content: "" }, "stop", { usage }));
    res.end("data: [DONE]\n\n");
  }

  return startStandInServer(options, (request, res, generation) => {
    switch (`${request.method} ${request.path}`) {
      case "POST /v1/fim/completions": {
        const body = validate(request, res, FIM_FIELDS, ["model", "prompt"]);
        if (body) answer(body, res, generation);
        return;
      }
      case "POST /v1/chat/completions": {
        const body = validate(request, res, CHAT_FIELDS, ["model", "messages"]);
        if (body) answer(body, res, generation);
        return;
      }
      case "GET /v1/models": {
        if (options.apiKey && request.headers["authorization"] !== `Bearer ${options.apiKey}`)
          return sendJson(res, 401, { message: "Unauthorized", request_id: "standin" });
        const card = (id: string) => {
          const codestral = id.includes("codestral");
          const capabilities = {
            completion_chat: true,
            function_calling: !codestral,
            reasoning: false,
            completion_fim: codestral,
            fine_tuning: false,
            vision: false,
            ocr: false,
            classification: false,
            moderation: false,
            audio: false,
          };
          return {
            id,
            object: "model",
            created,
            owned_by: "mistralai",
            capabilities,
            name: id,
            description: "",
            max_context_length: codestral ? 256000 : 32768,
            aliases: [],
            deprecation: null,
            default_model_temperature: 0.3,
            type: "base",
          };
        };
        return sendJson(res, 200, { object: "list", data: models.map(card) });
      }
      default:
        return sendJson(res, 404, { detail: "Not Found" });
    }
  });
}
