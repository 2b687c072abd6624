/**
 * The relay's JSON answers, main API and Agent API, as one set of types: the relay's presenters declare them as
 * their return types (so the compiler checks every answer the relay builds), and the console and the tests read
 * answers as these types (so neither can rely on a field the relay does not send). docs/api.md describes each
 * route. Plain types: nothing validates these at run time, and the console imports this file alone.
 */

/** The scope catalogue (docs/api.md#authentication-and-keys). */
export const SCOPES = [
  "workspace.read",
  "apps.read",
  "files.read",
  "tab.complete",
  "messages.read",
  "messages.write",
  "agents.read",
  "agents.write",
  "users.write",
  "keys.write",
] as const;
export type Scope = (typeof SCOPES)[number];

export const ROLES = ["owner", "admin", "member", "guest"] as const;
export type Role = (typeof ROLES)[number];

/** Every successful answer except the completion endpoints' (which answer in the OpenAI shapes). */
export interface DataBody<T> {
  data: T;
}

/** A person as sessions, `GET /me` and the live `hello` frame name them. */
export interface UserRef {
  id: string;
  name: string;
  role: Role;
}

export interface WorkspaceRef {
  id: string;
  slug: string;
  name: string;
}

/** `GET /me`: who the key belongs to and what it may do. */
export interface Me {
  key: { id: string; name: string; hint: string; scopes: Scope[]; created_at: string };
  user: UserRef;
  workspace: WorkspaceRef;
}

/** `GET /users`: a person still in the workspace. */
export interface User extends UserRef {
  created_at: string;
}

/** `POST /users`: the person and their first key, whose secret is shown this once. */
export interface UserCreated {
  user: User;
  api_key: { id: string; name: string; scopes: Scope[]; created_at: string; secret: string };
}

/** `DELETE /users/{id}`. */
export interface UserRemoved {
  id: string;
  removed: true;
  paused_agent_ids: string[];
}

/** `GET /api-keys`, `DELETE /api-keys/{id}`: never the secret. */
export interface ApiKey {
  id: string;
  name: string;
  hint: string;
  scopes: Scope[];
  created_at: string;
  revoked_at: string | null;
}

/** `POST /api-keys`: the key with its secret, shown this once. */
export interface ApiKeyCreated extends ApiKey {
  secret: string;
}

/** `POST /sessions`, `GET /sessions/current`: a console sign-in. */
export interface Session {
  user: UserRef;
  workspace: WorkspaceRef;
  /** The key the session acts with; revoking it ends the session. */
  key: { id: string; name: string; hint: string };
  scopes: Scope[];
  csrf_token: string;
}

/** `DELETE /sessions/current`. */
export interface SessionEnded {
  ended: true;
}

export type MemberType = "user" | "agent";

/** A person or agent as messages (author, mentions) and member lists name them. */
export interface Member {
  id: string;
  type: MemberType;
  name: string;
}

export type ConversationType = "channel" | "dm";
export type Visibility = "public" | "private";

export interface ConversationRef {
  type: ConversationType;
  id: string;
}

/** A conversation as the Agent API shows it: the agent is always in it. */
export interface AgentApiConversation {
  type: ConversationType;
  id: string;
  /** `#name` for a channel; null for a DM. */
  name: string | null;
  /** Null for a DM. */
  visibility: Visibility | null;
  created_at: string;
  /** Every DM has them; a channel only where the route says (creating one, adding a member). */
  members?: Member[];
}

/** A conversation as people see it (`GET /conversations`, `POST /channels`, `POST /dms`). */
export interface Conversation extends Omit<AgentApiConversation, "members"> {
  is_member: boolean;
  members?: Member[];
}

/** `POST /channels/{id}/members`: 201 when the member was added, 200 with `added: false` when already there. */
export interface ChannelMemberAdded extends Conversation {
  added: boolean;
}

/** A message as the Agent API shows it: agents never see asides, so there is no `aside` field. */
export interface AgentApiMessage {
  id: string;
  conversation: ConversationRef;
  thread_id: string | null;
  text: string;
  author: Member;
  mentions: Member[];
  created_at: string;
  /** Opens the message in the console. */
  url: string;
}

/** A message as people see it. */
export interface Message extends AgentApiMessage {
  /** Posted with `/aside`: hidden from agents. */
  aside: boolean;
}

/** `GET /notifications`: `message` is null when the message is no longer there to show. */
export interface Notification {
  id: string;
  type: string;
  created_at: string;
  message: Message | null;
}

export type AgentState = "active" | "paused";
export type DeliveryTrigger = "scheduled" | "manual" | "test";
export type DeliveryStatus = "pending" | "sending" | "delivered" | "failed" | "cancelled";

/** One attempt in an agent's delivery log (docs/api.md#delivery). */
export interface DeliveryAttempt {
  id: string;
  attempt: number;
  trigger: DeliveryTrigger;
  at: string;
  url: string;
  outcome: "success" | "failed";
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  response_excerpt: string;
  next_attempt_at: string | null;
}

/** `GET /agents/{id}/deliveries` (and the 202 of a test event or a redelivery): one event with its attempts. */
export interface Delivery {
  /** The event id, sent as `webhook-id`. */
  id: string;
  event_type: string;
  status: DeliveryStatus;
  created_at: string;
  next_attempt_at: string | null;
  attempts: DeliveryAttempt[];
}

export interface AgentConnection {
  webhook_url: string | null;
  socket: "connected" | "disconnected";
}

/** What everyone who may read the agent sees. */
export interface AgentFields {
  id: string;
  name: string;
  description: string;
  state: AgentState;
  owner_user_id: string;
  created_at: string;
  updated_at: string;
}

/** What only those who may manage the agent see. */
interface AgentManagement {
  webhook_url: string | null;
  connection: AgentConnection;
  token_hint: string;
  last_delivery: DeliveryAttempt | null;
}

/**
 * An agent as people see it (`GET /agents`, `GET /agents/{id}`, ...). Where it is connected and how delivery
 * goes come with `can_manage: true` only, so a viewer who cannot manage it is never sent them.
 */
export type Agent = AgentFields &
  (({ can_manage: true } & AgentManagement) | ({ can_manage: false } & { [K in keyof AgentManagement]?: never }));

/** `POST /agents`: both secrets, shown this once. */
export interface AgentCreated {
  agent: Agent;
  token: string;
  signing_secret: string;
}

/** `POST /agents/{id}/token`. */
export interface AgentTokenRotated {
  agent: Agent;
  token: string;
}

/** `POST /agents/{id}/signing-secret`. */
export interface AgentSigningSecretRotated {
  agent: Agent;
  signing_secret: string;
}

/** `DELETE /agents/{id}`. */
export interface AgentRemoved {
  id: string;
  removed: true;
}

/** What the audit log records (docs/api.md#audit-log). */
export const AUDIT_ACTIONS = [
  "session.signed_in",
  "session.sign_in_failed",
  "api_key.created",
  "api_key.revoked",
  "user.added",
  "user.removed",
  "user.role_changed",
  "agent.created",
  "agent.paused",
  "agent.resumed",
  "agent.removed",
  "agent.token_replaced",
  "agent.signing_secret_replaced",
  "agent.webhook_url_changed",
  "agent.redelivery_requested",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * How the actor was signed in: an API key, a console session (made from a key), neither (a failed sign-in), or the
 * command line at the relay's machine (`tab-relay keys create`).
 */
export type AuditVia = "api_key" | "session" | "none" | "cli";

/** `GET /audit`: one security-relevant change. Never a secret: keys and tokens appear only by id. */
export interface AuditEntry {
  id: string;
  at: string;
  action: AuditAction;
  actor: {
    /** Null when nobody could be named (a sign-in with an unknown key). */
    user_id: string | null;
    via: AuditVia;
    /** The API key's or the session's id. */
    via_id: string | null;
    /** The client's address, behind the proxies the relay trusts. */
    address: string;
  };
  /** What the change was made to; null for a failed sign-in that named nobody. */
  target: { type: "user" | "api_key" | "session" | "agent" | "delivery"; id: string } | null;
  /** Facts that vary by action (a role's old and new value, a key's scopes, why a sign-in failed). */
  details: Record<string, string | string[] | null>;
}

/** How `GET /tab/usage` groups its rows. */
export type TabUsageGroupBy = "day" | "user" | "language" | "model";

/**
 * Tab's usage figures for a group of days, people, languages or models (docs/api.md#usage-insights). Requests and
 * cache hits are the relay's own count; suggestions and acceptances are what the extension reported.
 */
export interface TabUsageFigures {
  /** Completion requests, including those refused with 429. */
  requests: number;
  cache_hits: number;
  /** Requests the relay answered with an error (the provider failed, or the relay shut down mid-answer). */
  errors: number;
  rate_limited: number;
  suggestions_shown: number;
  /** Accepted whole or in part. */
  acceptances: number;
  partial_acceptances: number;
  dismissals: number;
  typed_over: number;
  /** acceptances / suggestions_shown; null with nothing shown. */
  acceptance_rate: number | null;
  chars_shown: number;
  chars_accepted: number;
  lines_shown: number;
  lines_accepted: number;
  /** From the pause in typing to the ghost text, as reported; each the upper bound of its histogram bucket. */
  time_to_ghost_ms: { p50: number | null; p90: number | null };
  /** People with any request or report in the group. */
  active_users: number;
  /** Next edits the extension reported, apart from the completion figures above. */
  next_edits: TabNextEditFigures;
}

/** Next edits shown in the editor and what became of them, as the extension reported (sizes and times, no code). */
export interface TabNextEditFigures {
  shown: number;
  accepted: number;
  dismissed: number;
  /** The person typed something else where it was drawn. */
  typed_over: number;
  /** accepted / shown; null with nothing shown. */
  acceptance_rate: number | null;
  /** Characters of the new text shown, and of those applied. */
  chars_shown: number;
  chars_accepted: number;
  /** Mean time from the pause in typing to the next edit on screen; null with nothing shown. */
  mean_time_to_show_ms: number | null;
}

export interface TabUsageRow extends TabUsageFigures {
  /** The day (YYYY-MM-DD), user id, language or model. */
  key: string;
  /** With `group_by=user`: the person's name, null once they are removed from the workspace. */
  name?: string | null;
}

/** `GET /tab/usage`. */
export interface TabUsageReport {
  /** The first day counted. */
  since: string;
  /** The day after the last one counted. */
  until: string;
  group_by: TabUsageGroupBy;
  /** `workspace` for owners and admins; `self` when only the caller's own usage is counted. */
  scope: "workspace" | "self";
  rows: TabUsageRow[];
  totals: TabUsageFigures;
}

/** `POST /tab/events`: how many of the batch's events were counted. */
export interface TabUsageAccepted {
  counted: number;
}

/** A frame on the console's live socket, `/api/v1/live` (docs/api.md#console-sessions-and-live-updates). */
export type LiveEvent =
  | { type: "hello"; user: UserRef }
  | { type: "message.created"; conversation: ConversationRef; message: Message }
  | { type: "agent.updated"; agent_id: string };

/** Agent API `GET /me`. */
export interface AgentApiMe {
  agent: Pick<AgentFields, "id" | "name" | "description" | "state" | "created_at">;
  workspace: { slug: string; name: string };
}

/** Where a relay serves the VS Code extension that matches it (a checkout's build; 404 where it has none). */
export const EXTENSION_DOWNLOAD_PATH = "/downloads/tab-relay.vsix";
