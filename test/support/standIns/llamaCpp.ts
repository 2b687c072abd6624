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
 * llama.cpp's `llama-server` (notes-internal/model-servers.md §2):
 * - `POST /infill`: a model without FIM tokens answers 501 not_supported_error before the body is read
 *   (tools/server/server.cpp @ aa6192d3 post_infill); a bad `input_extra` answers 400 with llama.cpp's messages;
 *   a missing `input_prefix`/`input_suffix` ends in nlohmann's exception as a 500 server_error (code reading;
 *   the exception text is UNVERIFIED); invalid JSON is a 500. Streams `data: {json}\n\n` with `content`, the
 *   last event with `stop: true` and empty `content`, and no `[DONE]` (server-context.cpp @ 001d906a).
 * - `POST /v1/completions`: `suffix` (even null) answers 500 "Unsupported param: suffix" as the httplib-era
 *   server does (oaicompat_completion_params_parse, server-common.cpp @ 006639c3), or is silently ignored, as
 *   after the late-2025 HTTP refactor (`suffixOnCompletions: "ignore"`; code reading). Answers carry llama.cpp's
 *   own `timings` and a `chatcmpl-` id; the stream ends with `data: [DONE]`.
 * - `GET /health` `{"status":"ok"}`, `GET /props`, `GET /v1/models` (both `models` and `data`).
 * - Error envelope `{"error":{"code","message","type"}}`; an unknown route answers 404 not_found_error
 *   ("File Not Found": the exact text is UNVERIFIED).
 * Stricter than the real server in one way: a known field of the wrong type answers 400, where llama.cpp logs
 * a warning and uses the default, so a relay bug shows up as a failure rather than a silently different request.
 */
export interface LlamaCppOptions extends StandInBase {
  /** `-m`: the model file, which is also the model's id without `--alias`. */
  modelPath?: string;
  /** Whether the model's vocabulary has FIM prefix, suffix and middle tokens. */
  fim?: boolean;
  suffixOnCompletions?: "reject" | "ignore";
}

const SAMPLING_FIELDS: Record<string, readonly JsonType[]> = {
  model: ["string"],
  prompt: ["string"],
  n_predict: ["integer"],
  t_max_predict_ms: ["integer"],
  t_max_prompt_ms: ["integer"],
  n_indent: ["integer"],
  cache_prompt: ["boolean"],
  stream: ["boolean"],
  stop: ["string[]"],
  temperature: ["number"],
  top_k: ["integer"],
  top_p: ["number"],
  min_p: ["number"],
  seed: ["integer"],
  id_slot: ["integer"],
  samplers: ["string[]"],
  n_probs: ["integer"],
  return_tokens: ["boolean"],
  response_fields: ["string[]"],
};

const OAI_FIELDS: Record<string, readonly JsonType[]> = {
  model: ["string"],
  prompt: ["string", "array"],
  max_tokens: ["integer"],
  temperature: ["number"],
  top_p: ["number"],
  stop: ["string", "string[]"],
  stream: ["boolean"],
  stream_options: ["object"],
  seed: ["integer"],
  n: ["integer"],
  echo: ["boolean"],
};

export async function startLlamaCppStandIn(options: LlamaCppOptions = {}): Promise<StandIn & { model: string }> {
  const modelPath = options.modelPath ?? "/models/qwen2.5-coder-1.5b-q8_0.gguf";
  const created = 1_700_000_000;
  let sequence = 0;

  const error = (res: ServerResponse, status: number, message: string, type: string) =>
    sendJson(
      res,
      status,
      { error: { code: status, message, type } },
      { contentType: "application/json; charset=utf-8" },
    );
  const stopsOf = (body: Record<string, unknown>): string[] => {
    const stop = body["stop"];
    return typeof stop === "string" ? [stop] : Array.isArray(stop) ? (stop as string[]) : [];
  };
  /** n_predict / max_tokens, counted in rough tokens. */
  const limit = (pieces: string[], max: unknown): { pieces: string[]; limited: boolean } => {
    if (typeof max !== "number" || max < 0) return { pieces, limited: false };
    const out: string[] = [];
    let used = 0;
    for (const piece of pieces) {
      const tokens = roughTokens(piece);
      if (used + tokens > max) return { pieces: out, limited: true };
      used += tokens;
      out.push(piece);
    }
    return { pieces: out, limited: false };
  };
  const timings = (predicted: number) => ({
    prompt_n: 12,
    prompt_ms: 3.1,
    prompt_per_token_ms: 0.26,
    prompt_per_second: 3871,
    predicted_n: predicted,
    predicted_ms: 9.5,
    predicted_per_token_ms: 1.1,
    predicted_per_second: 900,
  });

  function infill(request: RecordedRequest, res: ServerResponse, generation: Generation): void {
    if (options.fim === false) {
      error(
        res,
        501,
        "Infill is not supported by this model: prefix token is missing. suffix token is missing. middle token is missing. ",
        "not_supported_error",
      );
      return;
    }
    if (!isRecord(request.body)) {
      error(
        res,
        500,
        "[json.exception.parse_error.101] parse error at line 1, column 1: syntax error while parsing value",
        "server_error",
      );
      return;
    }
    const body = request.body;
    const extra = body["input_extra"];
    if (extra !== undefined) {
      if (!Array.isArray(extra) || extra.some((chunk) => !isRecord(chunk))) {
        error(
          res,
          400,
          '"input_extra" must be an array of {"filename": string, "text": string}',
          "invalid_request_error",
        );
        return;
      }
      for (const chunk of extra as Record<string, unknown>[]) {
        if (typeof chunk["text"] !== "string") {
          error(
            res,
            400,
            'extra_context chunk must contain a "text" field with a string value',
            "invalid_request_error",
          );
          return;
        }
        if (chunk["filename"] !== undefined && typeof chunk["filename"] !== "string") {
          error(res, 400, 'extra_context chunk\'s "filename" field must be a string', "invalid_request_error");
          return;
        }
      }
    }
    for (const field of ["input_prefix", "input_suffix"]) {
      if (typeof body[field] !== "string") {
        error(res, 500, `[json.exception.out_of_range.403] key '${field}' not found`, "server_error");
        return;
      }
    }
    const wrong = typeProblem(body, SAMPLING_FIELDS);
    if (wrong) {
      error(res, 400, `"${wrong.field}" must be ${wrong.expected.join(" or ")}`, "invalid_request_error");
      return;
    }
    const drawn = generation.next();
    const stopped = applyStops(drawn.pieces, stopsOf(body));
    const { pieces, limited } = limit(stopped.pieces, body["n_predict"]);
    const predicted = roughTokens(pieces.join(""));
    const final = (content: string) => ({
      index: 0,
      content,
      tokens: [],
      id_slot: 0,
      stop: true,
      model: modelPath,
      tokens_predicted: predicted,
      tokens_evaluated: 12,
      generation_settings: { n_predict: body["n_predict"] ?? -1, temperature: body["temperature"] ?? 0.8 },
      prompt: "",
      has_new_line: pieces.join("").includes("\n"),
      truncated: false,
      stop_type: limited ? "limit" : stopped.stoppedAt !== undefined ? "word" : "eos",
      stopping_word: stopped.stoppedAt ?? "",
      tokens_cached: 12 + predicted,
      timings: timings(predicted),
    });
    if (body["stream"] !== true || drawn.json) {
      sendJson(res, 200, final(pieces.join("")), { contentType: "application/json; charset=utf-8" });
      return;
    }
    const send = startEvents(res);
    pieces.forEach((content, index) =>
      send({
        index: 0,
        content,
        tokens: [],
        stop: false,
        id_slot: 0,
        tokens_predicted: index + 1,
        tokens_evaluated: 12,
      }),
    );
    send(final(""));
    res.end();
  }

  function completions(request: RecordedRequest, res: ServerResponse, generation: Generation): void {
    if (!isRecord(request.body)) {
      error(
        res,
        500,
        "[json.exception.parse_error.101] parse error at line 1, column 1: syntax error while parsing value",
        "server_error",
      );
      return;
    }
    const body = request.body;
    // The parser's exception is thrown outside any try and reaches the exception handler: a 500 server_error.
    if (options.suffixOnCompletions !== "ignore") {
      for (const param of ["best_of", "suffix"]) {
        if (param in body) {
          error(res, 500, `Unsupported param: ${param}`, "server_error");
          return;
        }
      }
    }
    if (!("prompt" in body)) {
      error(res, 500, '"prompt" is required', "server_error");
      return;
    }
    if (body["echo"] === true) {
      error(res, 500, "Only no echo is supported", "server_error");
      return;
    }
    const wrong = typeProblem(body, OAI_FIELDS);
    if (wrong) {
      error(res, 400, `"${wrong.field}" must be ${wrong.expected.join(" or ")}`, "invalid_request_error");
      return;
    }
    const drawn = generation.next();
    const stopped = applyStops(drawn.pieces, stopsOf(body));
    const { pieces, limited } = limit(stopped.pieces, body["max_tokens"]);
    const id = `chatcmpl-${String(++sequence).padStart(8, "0")}`;
    const text = pieces.join("");
    const finishReason = limited ? "length" : "stop";
    const whole = (content: string) => ({
      choices: [{ text: content, index: 0, logprobs: null, finish_reason: finishReason }],
      created,
      model: modelPath,
      system_fingerprint: "b6500-standin",
      object: "text_completion",
      usage: { completion_tokens: roughTokens(text), prompt_tokens: 12, total_tokens: 12 + roughTokens(text) },
      id,
      timings: timings(roughTokens(text)),
    });
    if (body["stream"] !== true || drawn.json) {
      sendJson(res, 200, whole(text), { contentType: "application/json; charset=utf-8" });
      return;
    }
    const send = startEvents(res);
    for (const piece of pieces)
      send({
        choices: [{ text: piece, index: 0, logprobs: null, finish_reason: null }],
        created,
        model: modelPath,
        system_fingerprint: "b6500-standin",
        object: "text_completion",
        id,
      });
    send(whole(""));
    res.end("data: [DONE]\n\n");
  }

  const models = () => ({
    models: [
      {
        name: modelPath,
        model: modelPath,
        modified_at: "",
        size: "",
        digest: "",
        type: "model",
        description: "",
        tags: [""],
        capabilities: ["completion"],
        parameters: "",
        details: {
          parent_model: "",
          format: "gguf",
          family: "",
          families: [""],
          parameter_size: "",
          quantization_level: "",
        },
      },
    ],
    object: "list",
    data: [
      {
        id: modelPath,
        object: "model",
        created,
        owned_by: "llamacpp",
        meta: {
          vocab_type: 2,
          n_vocab: 151936,
          n_ctx_train: 32768,
          n_embd: 1536,
          n_params: 1543714304,
          size: 1640000000,
        },
      },
    ],
  });

  const standIn = await startStandInServer(options, (request, res, generation) => {
    const route = `${request.method} ${request.path}`;
    switch (route) {
      case "GET /health":
      case "GET /v1/health":
        return sendJson(res, 200, { status: "ok" }, { contentType: "application/json; charset=utf-8" });
      case "GET /props":
        return sendJson(res, 200, {
          default_generation_settings: {
            n_ctx: 4096,
            params: { n_predict: -1, temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05 },
          },
          total_slots: 1,
          model_alias: modelPath,
          model_path: modelPath,
          modalities: { vision: false, audio: false },
          chat_template: "",
          bos_token: "",
          eos_token: "<|endoftext|>",
          build_info: "b6500-standin",
        });
      case "GET /v1/models":
      case "GET /models":
        return sendJson(res, 200, models());
      case "POST /infill":
        return infill(request, res, generation);
      case "POST /v1/completions":
        return completions(request, res, generation);
      default:
        return error(res, 404, "File Not Found", "not_found_error");
    }
  });
  return Object.assign(standIn, { model: modelPath });
}
