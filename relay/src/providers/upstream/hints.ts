import type { UpstreamApi } from "./api";
import type { Hint } from "./modes/mode";

/**
 * The route each mode posts to, and what to try when the server has no such route. A 404 or 405 that does not
 * name a model is taken for a missing route (FastAPI's `{"detail":"Not Found"}`, gin's "404 page not found",
 * llama.cpp's not_found_error), since servers answer an unknown model with a 404 that names it.
 */
const NO_ROUTE: Record<UpstreamApi, string> = {
  chat: "this server has no /chat/completions route: set TAB_RELAY_UPSTREAM_API=fim or suffix, and check that TAB_RELAY_UPSTREAM_URL ends in /v1",
  suffix:
    "this server has no /completions route (a chat-only API?): set TAB_RELAY_UPSTREAM_API=chat, and check that TAB_RELAY_UPSTREAM_URL ends in /v1",
  fim: "this server has no /completions route (a chat-only API?): set TAB_RELAY_UPSTREAM_API=chat, and check that TAB_RELAY_UPSTREAM_URL ends in /v1",
  infill:
    "this server has no /infill route, which only llama.cpp's llama-server has: for another server set TAB_RELAY_UPSTREAM_API=fim or suffix",
  "mistral-fim":
    "this server has no /fim/completions route, which Mistral's API has: for another server set TAB_RELAY_UPSTREAM_API=fim or suffix",
};

/**
 * What an error answer says about the configuration, if anything:
 * - `suffix` refused: vLLM's 400 "suffix is not currently supported" (vllm/renderers/online_renderer.py @
 *   efa1035f), TGI's 422 "Suffix is not supported and can be achieved by preprocessing the prompt."
 *   (router/src/server.rs @ db931fcf) and llama.cpp's 500 "Unsupported param: suffix" from its httplib-era
 *   /v1/completions (tools/server/server-common.cpp @ 006639c3, oaicompat_completion_params_parse);
 * - llama.cpp's 501 on /infill for a model without FIM tokens ("Infill is not supported by this model",
 *   type not_supported_error; server.cpp @ aa6192d3 post_infill);
 * - an unknown model (vLLM's 404 "The model `x` does not exist.", Ollama's 404 "model 'x' not found");
 * - a route the server does not have.
 */
export function hintFor(api: UpstreamApi, status: number, message: string, model: string): Hint | undefined {
  if (api === "suffix" && (status === 400 || status === 422 || status === 500) && /\bsuffix\b/i.test(message)) {
    return /unsupported param/i.test(message)
      ? {
          key: "no-suffix-llamacpp",
          text: "this server does not take `suffix` (llama.cpp): set TAB_RELAY_UPSTREAM_API=infill (llama.cpp's /infill), or fim",
        }
      : { key: "no-suffix", text: "this server does not take `suffix`: set TAB_RELAY_UPSTREAM_API=fim" };
  }
  if (api === "infill" && status === 501) {
    return {
      key: "no-fim-tokens",
      text: "the model has no fill-in-the-middle tokens (llama.cpp cannot infill with it): load a FIM model, or set TAB_RELAY_UPSTREAM_API=chat",
    };
  }
  if (status === 404 && /\bmodel\b/i.test(message)) {
    return {
      key: "unknown-model",
      text: `the server does not serve the model "${model}": check TAB_RELAY_UPSTREAM_MODEL against its GET /v1/models`,
    };
  }
  if (status === 404 || status === 405) return { key: "no-route", text: NO_ROUTE[api] };
  return undefined;
}
