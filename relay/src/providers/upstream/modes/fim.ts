import type { TabContext } from "@tab-relay/shared";
import { contextSnippets } from "../context";
import { completionText } from "../json";
import { MID_LINE_STOP, isMidLine } from "../prompts";
import type { FimTemplate } from "../templates";
import { MAX_UPSTREAM_STOPS, type ModeOptions, type UpstreamMode, joinUrl } from "./mode";

/** The FIM prompt of a request, with context from other files in the template's repository-level form. */
export function fimPrompt(template: FimTemplate, context: TabContext): string {
  return template.render({
    prefix: context.active_text_before_cursor,
    suffix: context.active_text_after_cursor ?? "",
    snippets: contextSnippets(context),
    context,
  });
}

/**
 * `POST {base}/completions` with a raw `prompt` in the model's FIM template and no `suffix` field, which vLLM
 * rejects when it is anything but null (vllm/renderers/online_renderer.py @ efa1035f: "suffix is not currently
 * supported") and TGI when present at all (router/src/server.rs @ db931fcf). Answers in `choices[0].text`.
 * The template's stop sequences go upstream (the first few; mid-line, a newline first); all of them are cut
 * by the postprocessor. vLLM strips special tokens from its text by default (skip_special_tokens=True), and
 * whether its text stops still match them then is UNVERIFIED; the model's end-of-sequence token ends the
 * generation either way, so no vLLM-only field (`stop_token_ids`, `skip_special_tokens`) is sent, which keeps
 * the request valid on every server.
 */
export function fimMode(options: ModeOptions & { template: FimTemplate }): UpstreamMode {
  const { template } = options;
  return {
    api: "fim",
    url: joinUrl(options.baseUrl, "completions"),
    stops: template.stops,
    body(input) {
      const { context } = input;
      const stop = [
        ...(isMidLine(context.active_text_after_cursor ?? "") ? MID_LINE_STOP : []),
        ...template.stops,
      ].slice(0, MAX_UPSTREAM_STOPS);
      return JSON.stringify({
        model: options.model,
        prompt: fimPrompt(template, context),
        max_tokens: input.maxTokens,
        temperature: input.temperature,
        stream: true,
        ...(stop.length > 0 ? { stop } : {}),
      });
    },
    text: completionText,
  };
}
