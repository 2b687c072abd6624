/** The relay's answers, as the console reads them (README "API reference" and the issue 5 additions). */

export type Role = "owner" | "admin" | "member" | "guest";

export interface SessionUser {
  id: string;
  name: string;
  role: Role;
}

export interface Session {
  user: SessionUser;
  workspace: { id: string; slug: string; name: string };
  scopes: string[];
  csrf_token: string;
}

export interface User extends SessionUser {
  created_at: string;
}

export interface MemberRef {
  id: string;
  type: "user" | "agent";
  name: string;
}

export type ConversationType = "channel" | "dm";

export interface Conversation {
  type: ConversationType;
  id: string;
  name: string | null;
  visibility: "public" | "private" | null;
  created_at: string;
  is_member?: boolean;
  members?: MemberRef[];
}

export interface Message {
  id: string;
  conversation: { type: ConversationType; id: string };
  thread_id: string | null;
  text: string;
  author: MemberRef;
  mentions: MemberRef[];
  created_at: string;
  url: string;
  aside?: boolean;
}

export interface Attempt {
  id: string;
  attempt: number;
  trigger: "scheduled" | "manual" | "test";
  at: string;
  url: string;
  outcome: "success" | "failed";
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  response_excerpt: string;
  next_attempt_at: string | null;
}

export interface Delivery {
  id: string;
  event_type: string;
  status: "pending" | "sending" | "delivered" | "failed" | "cancelled";
  created_at: string;
  next_attempt_at: string | null;
  attempts: Attempt[];
}

export interface Agent {
  id: string;
  name: string;
  description: string;
  state: "active" | "paused";
  owner_user_id: string;
  created_at: string;
  updated_at: string;
  can_manage: boolean;
  webhook_url?: string | null;
  token_hint?: string;
  last_delivery?: Attempt | null;
  connection?: { webhook_url: string | null; socket: "connected" | "disconnected" };
}

export interface ApiKey {
  id: string;
  name: string;
  hint: string;
  scopes: string[];
  created_at: string;
  revoked_at: string | null;
}

export type LiveEvent =
  | { type: "hello"; user: SessionUser }
  | { type: "message.created"; conversation: { type: ConversationType; id: string }; message: Message }
  | { type: "agent.updated"; agent_id: string };
