/**
 * Webhook payloads as docs/api.md#webhook-events documents them. Plain types rather than schemas so the agent
 * helper stays dependency-free; the relay builds these objects, and the signature vouches for them.
 */

export const WEBHOOK_HEADERS = {
  id: "webhook-id",
  timestamp: "webhook-timestamp",
  signature: "webhook-signature",
} as const;

export interface WebhookWorkspace {
  slug: string;
  name: string;
}

export interface WebhookAgent {
  id: string;
  name: string;
}

export interface MessageCreatedEvent {
  /** Event id, prefix `evt_`. */
  id: string;
  type: "message.created";
  /** ISO 8601 UTC with milliseconds. */
  created_at: string;
  workspace: WebhookWorkspace;
  agent: WebhookAgent;
  conversation: {
    type: "channel" | "dm";
    id: string;
    /** For a channel, its name with a leading `#`. */
    name: string;
  };
  message: {
    id: string;
    text: string;
    thread_id: string | null;
    author: { id: string; name: string };
    mentioned: boolean;
    direct: boolean;
    /** Link to the message location. */
    url: string;
  };
  reply: {
    /** The Agent API messages URL of the conversation. */
    url: string;
    /** In a channel, the thread under the person's message; in a DM null, so the reply goes into the conversation. */
    thread_id: string | null;
  };
}

/** Sent by "Send test event". */
export interface PingEvent {
  id: string;
  type: "ping";
  created_at: string;
  workspace: WebhookWorkspace;
  agent: WebhookAgent;
}

export type WebhookEvent = MessageCreatedEvent | PingEvent;

export type WebhookEventType = WebhookEvent["type"];
