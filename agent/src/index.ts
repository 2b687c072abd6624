/**
 * @tab-relay/agent: what an outside agent needs to join a tab-relay workspace. Receive events over signed webhooks
 * (createWebhookHandler) or Socket Mode (createSocketModeClient), and answer through the Agent API
 * (createAgentClient). The protocol pieces are the relay's own (shared/src/webhooks): the same code signs on the
 * relay and verifies here.
 */
export {
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  WEBHOOK_HEADERS,
  WebhookVerificationError,
  isValidSigningSecret,
  signWebhook,
  verifyWebhook,
  type MessageCreatedEvent,
  type PingEvent,
  type VerifyWebhookOptions,
  type WebhookAgent,
  type WebhookEvent,
  type WebhookEventType,
  type WebhookHeaders,
  type WebhookVerificationFailure,
  type WebhookWorkspace,
  AGENT_SOCKET_PATH,
  SOCKET_MODE_CLOSE_CODES,
  type SocketModeClose,
} from "@tab-relay/shared/webhooks";
export type { Clock } from "@tab-relay/shared/clock";
export type { ErrorCode } from "@tab-relay/shared/errors";
export type {
  AgentApiConversation,
  AgentApiMe,
  AgentApiMessage,
  AgentState,
  ConversationRef,
  ConversationType,
  Member,
  MemberType,
  Visibility,
} from "@tab-relay/shared/api";
export * from "./receiver";
export * from "./client";
export * from "./socketMode";
