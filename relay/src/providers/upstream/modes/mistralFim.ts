import { chatText } from "../json";
import { buildSuffixPrompt } from "../prompts";
import { type ModeOptions, type UpstreamMode, joinUrl } from "./mode";

/**
 * Mistral's `POST /v1/fim/completions` (https://docs.mistral.ai/capabilities/code_generation/; request fields
 * from the official SDK, mistralai/client-python src/mistralai/client/models/fimcompletionrequest.py @ 05629d23):
 * `prompt` + `suffix`, and the server writes Codestral's template. Answers are chat-shaped:
 * `choices[0].delta.content` per chunk, `choices[0].message.content` whole. Only documented fields are sent.
 */
export function mistralFimMode(options: ModeOptions): UpstreamMode {
  return {
    api: "mistral-fim",
    url: joinUrl(options.baseUrl, "fim/completions"),
    stops: [],
    body(input) {
      const { prompt, suffix, stop } = buildSuffixPrompt(input.context);
      return JSON.stringify({
        model: options.model,
        prompt,
        suffix,
        max_tokens: input.maxTokens,
        temperature: input.temperature,
        stream: true,
        ...(stop ? { stop } : {}),
      });
    },
    text: chatText,
  };
}
