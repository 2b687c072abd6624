import { chatText } from "../json";
import { buildChatMessages } from "../prompts";
import { type ModeOptions, type UpstreamMode, joinUrl } from "./mode";

/** `POST {base}/chat/completions` with system and user messages; answers in `choices[0].delta.content`. */
export function chatMode(options: ModeOptions): UpstreamMode {
  return {
    api: "chat",
    url: joinUrl(options.baseUrl, "chat/completions"),
    stops: [],
    body: (input) =>
      JSON.stringify({
        model: options.model,
        max_tokens: input.maxTokens,
        temperature: input.temperature,
        stream: true,
        messages: buildChatMessages(input.context),
      }),
    text: chatText,
  };
}
