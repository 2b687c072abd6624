import { completionText, field } from "../json";
import { buildSuffixPrompt } from "../prompts";
import { type Hint, type ModeOptions, type UpstreamMode, joinUrl } from "./mode";

/**
 * llama.cpp's /v1/completions after its late-2025 HTTP refactor ignores `suffix` and plain-continues the prompt
 * (tools/server/server-context.cpp @ fb402660 never reads it; code reading, not run). Its answers carry a
 * non-OpenAI `timings` object (server-task.cpp @ 00efb3e1: the whole answer and the final chunk; partial chunks
 * only in some versions, UNVERIFIED), which gives it away: the completion still works, without the text after
 * the cursor, so this is a logged hint, not a failure.
 */
const SUFFIX_IGNORED: Hint = {
  key: "suffix-ignored",
  text: "this server looks like llama.cpp (its answers carry `timings`), whose /v1/completions ignores `suffix`: set TAB_RELAY_UPSTREAM_API=infill (or fim) so completions see the text after the cursor",
};

/**
 * `POST {base}/completions` with `prompt` + `suffix`; the server writes the FIM template (Ollama
 * openai/openai.go CompletionRequest.Suffix → the model template's .Suffix, ollama/ollama @ fb307609; DeepSeek's
 * https://api.deepseek.com/beta/completions; OpenAI's gpt-3.5-turbo-instruct). Answers in `choices[0].text`.
 */
export function suffixMode(options: ModeOptions): UpstreamMode {
  return {
    api: "suffix",
    url: joinUrl(options.baseUrl, "completions"),
    stops: [],
    body(input) {
      const { prompt, suffix, stop } = buildSuffixPrompt(input.context);
      return JSON.stringify({
        model: options.model,
        max_tokens: input.maxTokens,
        temperature: input.temperature,
        stream: true,
        prompt,
        suffix,
        ...(stop ? { stop } : {}),
      });
    },
    text: completionText,
    notice: (json) =>
      typeof field(json, "timings") === "object" && field(json, "timings") !== null ? SUFFIX_IGNORED : undefined,
  };
}
