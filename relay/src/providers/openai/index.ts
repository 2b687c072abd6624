export { createOpenAIProvider, joinUrl, type OpenAIProviderOptions } from "./openaiProvider";
export { buildChatMessages, buildCompletionsPrompt, CURSOR_MARKER, type ChatMessage, type CompletionsPrompt } from "./prompts";
