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
  sendText,
  startEvents,
  startStandInServer,
  typeProblem,
} from "./server";

/**
 * Hugging Face text-generation-inference (huggingface/text-generation-inference @ db931fcf):
 * - `POST /v1/completions` (router/src/server.rs `completions`, body router/src/lib.rs CompletionRequest):
 *   `suffix` present answers 422 `{"error":"Suffix is not supported and can be achieved by preprocessing the
 *   prompt.","error_type":"suffix not supported"}` (a JSON null deserialises to None and passes); more `stop`
 *   sequences than `--max-stop-sequences` (default 4, launcher/src/main.rs) answer 422 "Input validation error:
 *   `stop` supports up to 4 stop sequences. Given: N" (router/src/validation.rs, infer/mod.rs); `stop` must be
 *   an array. A body that does not deserialise is axum's 422 in text/plain (exact text UNVERIFIED). Unknown
 *   fields are ignored (no deny_unknown_fields).
 * - Streams `data: {"object":"text_completion",…}` chunks, a final one with `finish_reason` and `usage`, then
 *   `data: [DONE]`.
 * - `GET /info`: the router's Info struct (router/src/lib.rs `Info`, server.rs get_model_info); `GET /v1/models`:
 *   one card whose `owned_by` is the model id and `created` 0 (server.rs openai_get_model_info, lib.rs ModelsInfo);
 *   `GET /health` 200 with an empty body. An unknown route is axum's empty 404.
 */
export interface TgiOptions extends StandInBase {
  modelId?: string;
  maxStopSequences?: number;
}

const FIELDS: Record<string, readonly JsonType[]> = {
  model: ["string", "null"],
  prompt: ["string", "string[]"],
  max_tokens: ["integer", "null"],
  temperature: ["number", "null"],
  top_p: ["number", "null"],
  stream: ["boolean"],
  seed: ["integer", "null"],
  suffix: ["string", "null"],
  repetition_penalty: ["number", "null"],
  frequency_penalty: ["number", "null"],
  stop: ["string[]", "null"],
};

export async function startTgiStandIn(options: TgiOptions = {}): Promise<StandIn> {
  const modelId = options.modelId ?? "bigcode/starcoder2-3b";
  const maxStops = options.maxStopSequences ?? 4;
  const created = 1_700_000_000;

  function completions(request: RecordedRequest, res: ServerResponse, generation: Generation): void {
    if (!isRecord(request.body)) {
      sendText(
        res,
        422,
        "Failed to deserialize the JSON body into the target type: invalid type: expected struct CompletionRequest",
      );
      return;
    }
    const body = request.body;
    const wrong = typeProblem(body, FIELDS);
    if (wrong || !("prompt" in body)) {
      const what = wrong
        ? `${wrong.field}: invalid type: ${wrong.received}, expected ${wrong.expected.join(" or ")}`
        : "missing field `prompt`";
      sendText(res, 422, `Failed to deserialize the JSON body into the target type: ${what}`);
      return;
    }
    if (body["suffix"] !== undefined && body["suffix"] !== null) {
      sendJson(res, 422, {
        error: "Suffix is not supported and can be achieved by preprocessing the prompt.",
        error_type: "suffix not supported",
      });
      return;
    }
    const stops = Array.isArray(body["stop"]) ? (body["stop"] as string[]) : [];
    if (stops.length > maxStops) {
      sendJson(res, 422, {
        error: `Input validation error: \`stop\` supports up to ${maxStops} stop sequences. Given: ${stops.length}`,
        error_type: "validation",
      });
      return;
    }
    const drawn = generation.next();
    const { pieces, stoppedAt } = applyStops(drawn.pieces, stops);
    const text = pieces.join("");
    const finishReason = stoppedAt === undefined ? "eos_token" : "stop_sequence";
    const usage = {
      prompt_tokens: roughTokens(String(body["prompt"])),
      completion_tokens: roughTokens(text),
      total_tokens: roughTokens(String(body["prompt"])) + roughTokens(text),
    };
    if (body["stream"] !== true || drawn.json) {
      sendJson(res, 200, {
        id: "",
        created,
        model: modelId,
        system_fingerprint: "3.3.6-native",
        choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason }],
        usage,
      });
      return;
    }
    const send = startEvents(res);
    const chunk = (piece: string, finish: string) => ({
      object: "text_completion",
      id: "",
      created,
      choices: [{ index: 0, text: piece, logprobs: null, finish_reason: finish }],
      model: modelId,
      system_fingerprint: "3.3.6-native",
    });
    pieces.forEach((piece, index) =>
      send(index === pieces.length - 1 ? { ...chunk(piece, finishReason), usage } : chunk(piece, "")),
    );
    if (pieces.length === 0) send({ ...chunk("", finishReason), usage });
    res.end("data: [DONE]\n\n");
  }

  return startStandInServer(options, (request, res, generation) => {
    switch (`${request.method} ${request.path}`) {
      case "POST /v1/completions":
        return completions(request, res, generation);
      case "GET /health":
        res.writeHead(200, { "content-length": 0 });
        return res.end();
      case "GET /info":
        return sendJson(res, 200, {
          model_id: modelId,
          model_sha: null,
          model_pipeline_tag: "text-generation",
          max_concurrent_requests: 128,
          max_best_of: 2,
          max_stop_sequences: maxStops,
          max_input_tokens: 4095,
          max_total_tokens: 4096,
          validation_workers: 2,
          max_client_batch_size: 4,
          router: "text-generation-router",
          version: "3.3.6",
          sha: null,
          docker_label: null,
        });
      case "GET /v1/models":
        return sendJson(res, 200, {
          object: "list",
          data: [{ id: modelId, object: "model", created: 0, owned_by: modelId }],
        });
      default:
        res.writeHead(404, { "content-length": 0 });
        return res.end();
    }
  });
}
