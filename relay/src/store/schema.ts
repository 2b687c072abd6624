import type { Generated, Kysely, Transaction } from "kysely";
import type { AuditAction, Api } from "@tab-relay/shared";
import type { Role } from "../auth/scopes";
import type { UsageCounts } from "../usage/columns";

/*
 * Table shapes as Kysely sees them: the one declaration of each row. `types.ts` derives the domain rows from these
 * where a row is what callers get, and declares its own only where the store changes what it reads (see there).
 * Timestamps are ISO-8601 UTC text so the SQL stays portable. A text column that only ever holds one of a few values
 * is typed as those values: SQL checks nothing, but every write goes through these types, so what is read back is
 * one of them.
 */

export type AgentState = "active" | "paused";
export type ConversationType = "channel" | "dm";
export type Visibility = "public" | "private";
export type MemberType = "user" | "agent";
export type EventStatus = "pending" | "delivered" | "failed" | "cancelled";
export type DeliveryTrigger = "scheduled" | "manual" | "test";
export type AttemptOutcome = "success" | "failed";

export interface WorkspacesTable {
  id: string;
  slug: string;
  name: string;
  created_at: string;
  /** Bumped whenever a user or agent joins, leaves or is renamed, so mention lookups can cache the directory. */
  directory_version: Generated<number>;
}

export interface UsersTable {
  id: string;
  workspace_id: string;
  name: string;
  role: Role;
  created_at: string;
  removed_at: string | null;
}

export interface ApiKeysTable {
  id: string;
  workspace_id: string;
  user_id: string;
  name: string;
  /** A JSON array of scopes. */
  scopes: string;
  secret_hash: string;
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

export interface AgentSocketsTable {
  agent_id: string;
  relay_id: string;
  connected_until: string;
}

export interface SessionsTable {
  id: string;
  api_key_id: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
  ended_at: string | null;
}

// From migration 0002 on: conversations and agents. Booleans are 0/1 integers so both engines agree.
export interface AgentsTable {
  id: string;
  workspace_id: string;
  owner_user_id: string;
  name: string;
  description: string;
  webhook_url: string | null;
  state: AgentState;
  token_hash: string;
  token_hint: string;
  signing_secret: string;
  created_at: string;
  updated_at: string;
  removed_at: string | null;
}

export interface ConversationsTable {
  id: string;
  workspace_id: string;
  type: ConversationType;
  /** The channel's name without `#`; null for a DM. */
  name: string | null;
  visibility: Visibility | null;
  /** The DM's member ids, sorted and joined, so asking for the same DM again finds it; null for a channel. */
  dm_key: string | null;
  created_by: string;
  created_at: string;
}

export interface ConversationMembersTable {
  conversation_id: string;
  member_id: string;
  member_type: MemberType;
  joined_at: string;
}

export interface MessagesTable {
  id: string;
  workspace_id: string;
  conversation_id: string;
  thread_id: string | null;
  author_id: string;
  author_type: MemberType;
  author_name: string;
  text: string;
  aside: number;
  /** A JSON array of members. */
  mentions: string;
  created_at: string;
}

export interface EventsTable {
  id: string;
  workspace_id: string;
  agent_id: string;
  type: string;
  /** The exact JSON body every attempt sends and signs. */
  payload: string;
  status: EventStatus;
  attempts: number;
  next_attempt_at: string | null;
  next_trigger: DeliveryTrigger;
  /** Whether a failed attempt is followed by the retry schedule (0 for test pings and redeliveries of finished events). */
  retries: number;
  /** An attempt is under way; see `next_attempt_at` in types.ts's StoredEvent. */
  claimed: number;
  created_at: string;
  updated_at: string;
}

export interface DeliveryAttemptsTable {
  id: string;
  event_id: string;
  agent_id: string;
  attempt: number;
  trigger: DeliveryTrigger;
  url: string;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_excerpt: string;
  outcome: AttemptOutcome;
  next_attempt_at: string | null;
}

export interface NotificationsTable {
  id: string;
  workspace_id: string;
  user_id: string;
  type: string;
  conversation_id: string;
  message_id: string;
  created_at: string;
  read_at: string | null;
}

// From migration 0006 on: the audit log. Rows are only ever added and, past the retention, deleted.
export interface AuditLogTable {
  id: string;
  /** A failed sign-in with a key the relay does not know is recorded once in each workspace. */
  workspace_id: string;
  at: string;
  action: AuditAction;
  actor_user_id: string | null;
  via: Api.AuditVia;
  via_id: string | null;
  address: string;
  target_type: NonNullable<Api.AuditEntry["target"]>["type"] | null;
  target_id: string | null;
  /** A JSON object of the entry's details; never a secret. */
  details: string;
}

// From migration 0007 on: Tab's daily usage, one row per workspace, day (UTC, YYYY-MM-DD), user, language and model,
// whose counts only ever grow (by additive upserts) until the retention deletes the day.
export type TabUsageTable = {
  workspace_id: string;
  day: string;
  user_id: string;
  language: string;
  model: string;
} & UsageCounts;

/** The daily rows summed over people: what reports by day, language and model read. */
export type TabUsageDaysTable = { workspace_id: string; day: string; language: string; model: string } & UsageCounts;

/**
 * The daily rows summed per week (`week` is its Monday, YYYY-MM-DD), person, language and model: what reports by
 * person read, and who was active in a long range.
 */
export type TabUsageWeeksTable = {
  workspace_id: string;
  week: string;
  user_id: string;
  language: string;
  model: string;
} & UsageCounts;

export interface Database {
  workspaces: WorkspacesTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  agent_sockets: AgentSocketsTable;
  sessions: SessionsTable;
  agents: AgentsTable;
  conversations: ConversationsTable;
  conversation_members: ConversationMembersTable;
  messages: MessagesTable;
  events: EventsTable;
  delivery_attempts: DeliveryAttemptsTable;
  notifications: NotificationsTable;
  audit_log: AuditLogTable;
  tab_usage: TabUsageTable;
  tab_usage_days: TabUsageDaysTable;
  tab_usage_weeks: TabUsageWeeksTable;
}

/** What every repository queries through: the database, or a transaction on it. */
export type Db = Kysely<Database> | Transaction<Database>;
