/**
 * Events and signed deliveries for this package's tests (not part of the package: index.ts does not export it).
 */
import { type MessageCreatedEvent, type PingEvent, WEBHOOK_HEADERS, signWebhook } from "@tab-relay/shared";

export const NOW_MS = 1_750_000_000_000;
export const NOW_S = NOW_MS / 1000;

export function messageEvent(overrides: { replyUrl?: string; threadId?: string | null } = {}): MessageCreatedEvent {
  return {
    id: "evt_1",
    type: "message.created",
    created_at: "2025-06-15T15:06:40.000Z",
    workspace: { slug: "acme", name: "Acme" },
    agent: { id: "agt_1", name: "Echo" },
    conversation: { type: "channel", id: "ch_1", name: "#general" },
    message: {
      id: "msg_1",
      text: "@Echo hello",
      thread_id: null,
      author: { id: "usr_1", name: "Ada" },
      mentioned: true,
      direct: false,
      url: "http://relay.test/w/acme/c/ch_1#msg_1",
    },
    reply: {
      url: overrides.replyUrl ?? "http://relay.test/api/v1/agent-api/conversations/channel/ch_1/messages",
      thread_id: overrides.threadId === undefined ? "msg_1" : overrides.threadId,
    },
  };
}

export const PING: PingEvent = {
  id: "evt_ping",
  type: "ping",
  created_at: "2025-06-15T15:06:40.000Z",
  workspace: { slug: "acme", name: "Acme" },
  agent: { id: "agt_1", name: "Echo" },
};

export async function delivery(
  secret: string,
  webhookId: string,
  body: string,
  timestamp: number = NOW_S,
): Promise<Record<string, string>> {
  return {
    [WEBHOOK_HEADERS.id]: webhookId,
    [WEBHOOK_HEADERS.timestamp]: String(timestamp),
    [WEBHOOK_HEADERS.signature]: await signWebhook(secret, webhookId, timestamp, body),
  };
}
