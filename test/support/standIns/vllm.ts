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
 * vLLM's OpenAI-compatible server, as strict as the real one (notes-internal/model-servers.md §1):
 * - `POST /v1/completions`: a wrong `model` answers 404 first (vllm/entrypoints/openai/models/serving.py @
 *   00153c8b, `_check_model` runs before rendering); then any non-null `suffix` answers 400 "suffix is not
 *   currently supported" (vllm/renderers/online_renderer.py @ efa1035f); an empty prompt answers 400
 *   (completion/protocol.py @ 002032ee); `stream_options` without `stream` answers 400.
 * - `POST /v1/chat/completions` with `messages`.
 * - Errors: `{"error":{"message","type","param","code"}}` (serve/engine/protocol.py @ f1bf7bd0), or the flat
 *   `{"object":"error",…}` of releases before the switch (v0.10.1 by a third-party report, UNVERIFIED).
 * - Unknown fields are accepted (current `extra="allow"`), or refused with 400 "Extra inputs are not
 *   permitted" like mid-2024 releases (`extra="forbid"`, PR #4355; release numbers UNVERIFIED).
 * - Streams `data: {…}\n\n` chunks (`choices[0].text`, `finish_reason` on the last text chunk), then
 *   `data: [DONE]\n\n`, with `content-type: text/event-stream; charset=utf-8` (starlette adds the charset).
 * - `GET /v1/models` (`owned_by: "vllm"`, `root`, `max_model_len`, `permission`), `GET /health` (200, empty).
 * - Anything else: FastAPI's 404 `{"detail":"Not Found"}` or 405 `{"detail":"Method Not Allowed"}`.
 * Type checks follow the pydantic field types; their 400 message text is simplified (exact text UNVERIFIED).
 */
export interface VllmOptions extends StandInBase {
  /** The served model name (`--served-model-name`). */
  model?: string;
  errorShape?: "nested" | "flat";
  extraFields?: "allow" | "forbid";
}

const COMPLETION_FIELDS: Record<string, readonly JsonType[]> = {
  model: ["string", "null"],
  prompt: ["string", "array"],
  echo: ["boolean", "null"],
  frequency_penalty: ["number", "null"],
  logit_bias: ["object", "null"],
  logprobs: ["integer", "null"],
  max_tokens: ["integer", "null"],
  n: ["integer"],
  presence_penalty: ["number", "null"],
  seed: ["integer", "null"],
  stop: ["string", "string[]", "null"],
  stream: ["boolean", "null"],
  stream_options: ["object", "null"],
  suffix: ["string", "null"],
  temperature: ["number", "null"],
  top_p: ["number", "null"],
  user: ["string", "null"],
  top_k: ["integer", "null"],
  min_p: ["number", "null"],
  repetition_penalty: ["number", "null"],
  stop_token_ids: ["integer[]", "null"],
  include_stop_str_in_output: ["boolean"],
  skip_special_tokens: ["boolean"],
  add_special_tokens: ["boolean"],
};

const CHAT_FIELDS: Record<string, readonly JsonType[]> = {
  model: ["string", "null"],
  messages: ["array"],
  max_tokens: ["integer", "null"],
  max_completion_tokens: ["integer", "null"],
  temperature: ["number", "null"],
  top_p: ["number", "null"],
  stop: ["string", "string[]", "null"],
  stream: ["boolean", "null"],
  stream_options: ["object", "null"],
  n: ["integer", "null"],
  seed: ["integer", "null"],
  user: ["string", "null"],
};

export async function startVllmStandIn(options: VllmOptions = {}): Promise<StandIn & { model: string }> {
  const model = options.model ?? "Qwen/Qwen2.5-Coder-1.5B";
  const created = 1_700_000_000;
  let sequence = 0;

  const error = (res: ServerResponse, status: number, message: string, type: string, param: string | null = null) => {
    const info = { message, type, param, code: status };
    sendJson(res, status, options.errorShape === "flat" ? { object: "error", ...info } : { error: info });
  };
  /** Pydantic's checks, then the model check; the route's own checks come after. */
  const validate = (
    request: RecordedRequest,
    res: ServerResponse,
    fields: Record<string, readonly JsonType[]>,
  ): Record<string, unknown> | undefined => {
    if (!/^application\/json/i.test(String(request.headers["content-type"] ?? ""))) {
      // Some releases raise 415, others a validation error (400): UNVERIFIED which; the relay always sends JSON.
      error(res, 415, "Unsupported Media Type: Only 'application/json' is allowed", "Unsupported Media Type");
      return undefined;
    }
    if (!isRecord(request.body)) {
      error(
        res,
        400,
        "1 validation error:\n  Input should be a valid dictionary or object to extract fields from",
        "Bad Request",
        "body",
      );
      return undefined;
    }
    const body = request.body;
    const wrong = typeProblem(body, fields);
    if (wrong) {
      error(
        res,
        400,
        `1 validation error:\n  Input should be ${wrong.expected.join(" or ")} (received ${wrong.received})`,
        "Bad Request",
        `body.${wrong.field}`,
      );
      return undefined;
    }
    if (options.extraFields === "forbid") {
      const extra = Object.keys(body).find((field) => !(field in fields));
      if (extra !== undefined) {
        error(res, 400, "1 validation error:\n  Extra inputs are not permitted", "Bad Request", `body.${extra}`);
        return undefined;
      }
    }
    const name = body["model"];
    if (typeof name === "string" && name !== "" && name !== model) {
      error(res, 404, `The model \`${name}\` does not exist.`, "NotFoundError", "model");
      return undefined;
    }
    if (isRecord(body["stream_options"]) && body["stream"] !== true) {
      error(res, 400, "Stream options can only be defined when `stream=True`.", "BadRequestError", "stream_options");
      return undefined;
    }
    return body;
  };

  const stopsOf = (body: Record<string, unknown>): string[] => {
    const stop = body["stop"];
    return typeof stop === "string" ? [stop] : Array.isArray(stop) ? (stop as string[]) : [];
  };

  function completions(body: Record<string, unknown>, res: ServerResponse, generation: Generation): void {
    if (body["suffix"] !== undefined && body["suffix"] !== null) {
      error(res, 400, "suffix is not currently supported", "BadRequestError");
      return;
    }
    const prompt = body["prompt"];
    if (prompt === undefined || prompt === "" || (Array.isArray(prompt) && prompt.length === 0)) {
      error(res, 400, "Either prompt or prompt_embeds must be provided and non-empty.", "BadRequestError", "prompt");
      return;
    }
    const drawn = generation.next();
    const { pieces } = applyStops(drawn.pieces, stopsOf(body));
    const id = `cmpl-${(++sequence).toString(16).padStart(32, "0")}`;
    const text = pieces.join("");
    if (body["stream"] !== true || drawn.json) {
      sendJson(res, 200, {
        id,
        object: "text_completion",
        created,
        model,
        choices: [{ index: 0, text, logprobs: null, finish_reason: "stop", stop_reason: null, prompt_logprobs: null }],
        usage: {
          prompt_tokens: roughTokens(String(prompt)),
          total_tokens: roughTokens(String(prompt)) + roughTokens(text),
          completion_tokens: roughTokens(text),
          prompt_tokens_details: null,
        },
      });
      return;
    }
    const send = startEvents(res, "text/event-stream; charset=utf-8");
    // Empty deltas are not sent ("Chunked prefill case, don't return empty chunks"); the last one carries finish_reason.
    pieces.forEach((piece, index) => {
      const last = index === pieces.length - 1;
      send({
        id,
        object: "text_completion",
        created,
        model,
        choices: [{ index: 0, text: piece, logprobs: null, finish_reason: last ? "stop" : null, stop_reason: null }],
      });
    });
    if (pieces.length === 0)
      send({
        id,
        object: "text_completion",
        created,
        model,
        choices: [{ index: 0, text: "", logprobs: null, finish_reason: "stop", stop_reason: null }],
      });
    res.end("data: [DONE]\n\n");
  }

  function chat(body: Record<string, unknown>, res: ServerResponse, generation: Generation): void {
    const messages = body["messages"];
    const bad =
      !Array.isArray(messages) ||
      messages.length === 0 ||
      messages.some(
        (m) =>
          !isRecord(m) ||
          typeof m["role"] !== "string" ||
          (typeof m["content"] !== "string" && !Array.isArray(m["content"])),
      );
    if (bad) {
      error(
        res,
        400,
        "1 validation error:\n  messages: each message needs a role and a content",
        "Bad Request",
        "body.messages",
      );
      return;
    }
    const drawn = generation.next();
    const { pieces } = applyStops(drawn.pieces, stopsOf(body));
    const id = `chatcmpl-${(++sequence).toString(16).padStart(32, "0")}`;
    if (body["stream"] !== true || drawn.json) {
      sendJson(res, 200, {
        id,
        object: "chat.completion",
        created,
        model,
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: pieces.join(""), tool_calls: [] },
            logprobs: null,
            finish_reason: "stop",
            stop_reason: null,
          },
        ],
        usage: {
          prompt_tokens: 10,
          total_tokens: 10 + roughTokens(pieces.join("")),
          completion_tokens: roughTokens(pieces.join("")),
        },
      });
      return;
    }
    const send = startEvents(res, "text/event-stream; charset=utf-8");
    const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
    send(chunk({ role: "assistant", content: "" }, null));
    for (const piece of pieces) send(chunk({ content: piece }, null));
    send(chunk({}, "stop"));
    res.end("data: [DONE]\n\n");
  }

  const routes: Record<
    string,
    Record<string, (request: RecordedRequest, res: ServerResponse, generation: Generation) => void>
  > = {
    "/v1/models": {
      GET: (_request, res) =>
        sendJson(res, 200, {
          object: "list",
          data: [
            {
              id: model,
              object: "model",
              created,
              owned_by: "vllm",
              root: `/models/${model}`,
              parent: null,
              max_model_len: 32768,
              permission: [
                {
                  id: "modelperm-0",
                  object: "model_permission",
                  created,
                  allow_create_engine: false,
                  allow_sampling: true,
                  allow_logprobs: true,
                  allow_search_indices: false,
                  allow_view: true,
                  allow_fine_tuning: false,
                  organization: "*",
                  group: null,
                  is_blocking: false,
                },
              ],
            },
          ],
        }),
    },
    "/health": {
      GET: (_request, res) => {
        res.writeHead(200, { "content-length": 0 });
        res.end();
      },
    },
    "/v1/completions": {
      POST: (request, res, generation) => {
        const body = validate(request, res, COMPLETION_FIELDS);
        if (body) completions(body, res, generation);
      },
    },
    "/v1/chat/completions": {
      POST: (request, res, generation) => {
        const body = validate(request, res, CHAT_FIELDS);
        if (body) chat(body, res, generation);
      },
    },
  };

  const standIn = await startStandInServer(options, (request, res, generation) => {
    const route = routes[request.path];
    if (!route) return sendJson(res, 404, { detail: "Not Found" });
    const handler = route[request.method];
    if (!handler) return sendJson(res, 405, { detail: "Method Not Allowed" });
    handler(request, res, generation);
  });
  return Object.assign(standIn, { model });
}
