import { contextSnippets } from "../context";
import { field } from "../json";
import { MID_LINE_STOP, isMidLine } from "../prompts";
import { type ModeOptions, type UpstreamMode, joinUrl } from "./mode";

/**
 * The default `t_max_predict_ms`: llama.vscode's setting `llama-vscode.t_max_predict_ms` defaults to 500
 * (ggml-org/llama.vscode package.json @ 3938fb3568b98e3ddfcf2ce3dd52d9570552b579; its code's own fallback is
 * 2500). llama.cpp ends the generation once this long has passed since the first token and a newline has been
 * written (tools/server/README.md: "Useful for FIM applications"), which bounds a multi-line completion's time.
 */
export const DEFAULT_INFILL_MAX_PREDICT_MS = 500;

/**
 * llama.cpp's routes live at the server root (`/infill`, `/completion`), beside the OpenAI ones under `/v1`; a
 * URL that ends in `/v1`, as the other modes want it, has that segment dropped, so one URL serves every mode.
 */
export function infillUrl(baseUrl: string): string {
  const base = new URL(baseUrl);
  base.pathname = base.pathname.replace(/\/+$/, "").replace(/\/v1$/, "");
  return joinUrl(base.toString(), "infill");
}

/**
 * llama.cpp's `POST /infill` (tools/server/README.md @ 25d5b0c5): `input_prefix`, `input_suffix` and
 * `input_extra: [{filename, text}]`, from which the server writes the model's own FIM prompt (its repository-level
 * form when the vocabulary has the tokens); `cache_prompt` keeps the shared prefix of successive requests in the
 * KV cache. Streams `data: {json}` events with `content`, the last with `stop: true` and no `[DONE]`
 * (server.cpp @ aa6192d3 handle_completions_impl); that last one's `content` is empty, "in stream mode, content
 * and tokens are already in last partial chunk" (server-context.cpp @ 001d906a send_final_response). The model's FIM and end tokens end the generation on the
 * server (they are end-of-generation tokens in llama-vocab.cpp), so only the mid-line newline is sent as `stop`.
 */
export function infillMode(options: ModeOptions & { maxPredictMs: number }): UpstreamMode {
  return {
    api: "infill",
    url: infillUrl(options.baseUrl),
    stops: [],
    body(input) {
      const { context } = input;
      const suffix = context.active_text_after_cursor ?? "";
      // A chunk without a file name gets llama.cpp's own default name ("tmp").
      const extra = contextSnippets(context).map((snippet) =>
        snippet.path === undefined ? { text: snippet.text } : { filename: snippet.path, text: snippet.text },
      );
      return JSON.stringify({
        model: options.model,
        input_prefix: context.active_text_before_cursor,
        input_suffix: suffix,
        input_extra: extra,
        n_predict: input.maxTokens,
        t_max_predict_ms: options.maxPredictMs,
        temperature: input.temperature,
        cache_prompt: true,
        stream: true,
        ...(isMidLine(suffix) ? { stop: [...MID_LINE_STOP] } : {}),
      });
    },
    text(json) {
      const content = field(json, "content");
      return typeof content === "string" ? content : undefined;
    },
    isLast: (json) => field(json, "stop") === true,
  };
}
