import type { UpstreamApi } from "./api";
import { chatMode } from "./modes/chat";
import { fimMode } from "./modes/fim";
import { infillMode } from "./modes/infill";
import type { UpstreamMode } from "./modes/mode";
import { mistralFimMode } from "./modes/mistralFim";
import { suffixMode } from "./modes/suffix";
import { type FimTemplate, customTemplate, fimTemplate, isFimFamily } from "./templates";

export { DEPRECATED_APIS, UPSTREAM_APIS, type UpstreamApi, deprecatedApiWarning } from "./api";
export { createUpstreamProvider, type UpstreamProviderOptions } from "./provider";
export { buildChatMessages, buildSuffixPrompt, CURSOR_MARKER, type ChatMessage, type SuffixPrompt } from "./prompts";
export { DEFAULT_INFILL_MAX_PREDICT_MS, infillUrl } from "./modes/infill";
export { joinUrl, type UpstreamMode } from "./modes/mode";
export {
  FIM_FAMILIES,
  type FimFamily,
  type FimTemplate,
  customTemplate,
  customTemplateProblems,
  familyForModel,
  fimTemplate,
  isFimFamily,
} from "./templates";

export interface ModeSettings {
  api: UpstreamApi;
  baseUrl: string;
  model: string;
  /** For `fim`: a family name or a custom template string (checked when the configuration was read). */
  fimTemplate?: string | undefined;
  /** For `infill`: llama.cpp's `t_max_predict_ms`. */
  infillMaxPredictMs: number;
}

/** A family name gives its built-in template; anything else is a custom template string. */
export function resolveFimTemplate(spec: string): FimTemplate {
  return isFimFamily(spec) ? fimTemplate(spec) : customTemplate(spec);
}

export function upstreamMode(settings: ModeSettings): UpstreamMode {
  const { baseUrl, model } = settings;
  switch (settings.api) {
    case "chat":
      return chatMode({ baseUrl, model });
    case "suffix":
      return suffixMode({ baseUrl, model });
    case "fim":
      if (settings.fimTemplate === undefined) throw new Error("the fim mode needs a template");
      return fimMode({ baseUrl, model, template: resolveFimTemplate(settings.fimTemplate) });
    case "infill":
      return infillMode({ baseUrl, model, maxPredictMs: settings.infillMaxPredictMs });
    case "mistral-fim":
      return mistralFimMode({ baseUrl, model });
  }
}
