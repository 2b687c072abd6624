/**
 * How the relay talks to the model server, one value per real API (TAB_RELAY_UPSTREAM_API):
 * - `chat`: `/chat/completions` with an instructed hole-filling prompt, for instruction models;
 * - `suffix`: `/completions` with `prompt` + `suffix`, where the server applies the FIM template (Ollama,
 *   DeepSeek's FIM beta, OpenAI's gpt-3.5-turbo-instruct);
 * - `fim`: `/completions` with a `prompt` the relay writes in the model's own FIM template and no `suffix`
 *   (vLLM, SGLang, TGI, llama.cpp);
 * - `infill`: llama.cpp's `/infill` (`input_prefix`, `input_suffix`, `input_extra`);
 * - `mistral-fim`: Mistral's `/fim/completions` (`prompt` + `suffix`, chat-shaped answers).
 */
export const UPSTREAM_APIS = ["chat", "suffix", "fim", "infill", "mistral-fim"] as const;
export type UpstreamApi = (typeof UPSTREAM_APIS)[number];

/** Former names, accepted for one release with a warning at start. */
export const DEPRECATED_APIS: Readonly<Record<string, UpstreamApi>> = Object.freeze({ completions: "suffix" });

/** The warning a deprecated name gets at start. */
export function deprecatedApiWarning(name: string): string | undefined {
  const api = DEPRECATED_APIS[name];
  if (api === undefined) return undefined;
  return (
    `TAB_RELAY_UPSTREAM_API=${name} is now called ${api} (prompt + suffix on /v1/completions, for Ollama and the DeepSeek and OpenAI APIs); ` +
    `the old name goes in the next release. For vLLM, SGLang, TGI or llama.cpp's /v1/completions, which take no suffix, use fim; for llama.cpp's /infill, infill`
  );
}
