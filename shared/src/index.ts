export * from "./errors";
export * from "./protocol/limits";
export * from "./protocol/completion";
export * from "./protocol/completionStream";
export * from "./protocol/validation";
export * from "./sse/sseEncoder";
export * from "./sse/sseDecoder";
export * from "./secrets";
