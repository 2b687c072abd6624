export * from "./errors";
export * from "./protocol/limits";
export * from "./protocol/completion";
export * from "./protocol/completionStream";
export * from "./protocol/validation";
export * from "./protocol/snippets";
export * from "./protocol/text";
export * from "./protocol/usage";
export * from "./protocol/nextEdit";
export {
  AUDIT_ACTIONS,
  EXTENSION_DOWNLOAD_PATH,
  ROLES,
  SCOPES,
  type AuditAction,
  type Role,
  type Scope,
} from "./protocol/api";
// The answers' types go under one name, so the relay can tell `Api.Agent` (what it sends) from its own rows.
export type * as Api from "./protocol/api";
export * from "./sse/sseEncoder";
export * from "./sse/sseDecoder";
export * from "./secrets";
export * from "./retryAfter";
export * from "./clock";
export * from "./awaitedLater";
export * from "./webhooks";
