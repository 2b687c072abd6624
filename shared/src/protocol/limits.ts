/** Where the main API lives, and the completion route inside it. */
export const API_PREFIX = "/api/v1";
export const TAB_COMPLETIONS_PATH = "/tab/chat/completions";
/**
 * The `openai` SDK's base URL inside the API: the SDK asks `{base}/models` and `{base}/chat/completions`, and
 * `/tab/models` keeps the spec's shape, so the SDK's list (and the same completion route) are served under here.
 */
export const OPENAI_BASE_PATH = "/tab/openai";
export const OPENAI_COMPLETIONS_PATH = `${OPENAI_BASE_PATH}/chat/completions`;

/**
 * The completion request's limits (docs/api.md#completions) and the clients' defaults (docs/extension.md), shared
 * by the relay (enforcing) and clients (sizing context).
 */
export const TAB_LIMITS = {
  activeTextBeforeCursor: 16_384,
  activeTextAfterCursor: 16_384,
  surroundingContext: 32_768,
  maxCompletionTokens: 500,
} as const;

export const TAB_DEFAULTS = {
  model: "tab-v1",
  debounceMs: 120,
  minVisibleSuggestionLength: 2,
  temperature: 0.2,
  contextCharsBefore: 600,
  contextCharsAfter: 80,
  surroundingContextChars: 500,
} as const;
