import type { Generated, Kysely, Transaction } from "kysely";

/** Table shapes as Kysely sees them. Timestamps are ISO-8601 UTC text so the SQL stays portable. */
export interface Database {
  workspaces: { id: string; slug: string; name: string; created_at: string; directory_version: Generated<number> };
  users: { id: string; workspace_id: string; name: string; role: string; created_at: string; removed_at: string | null };
  api_keys: {
    id: string;
    workspace_id: string;
    user_id: string;
    name: string;
    scopes: string;
    secret_hash: string;
    hint: string;
    created_at: string;
    revoked_at: string | null;
  };
  agent_sockets: { agent_id: string; relay_id: string; connected_until: string };
  sessions: { id: string; api_key_id: string; token_hash: string; created_at: string; expires_at: string; ended_at: string | null };
  // From migration 0002 on: conversations and agents. Booleans are 0/1 integers so both engines agree.
  agents: {
    id: string;
    workspace_id: string;
    owner_user_id: string;
    name: string;
    description: string;
    webhook_url: string | null;
    state: string;
    token_hash: string;
    token_hint: string;
    signing_secret: string;
    created_at: string;
    updated_at: string;
    removed_at: string | null;
  };
  conversations: {
    id: string;
    workspace_id: string;
    type: string;
    name: string | null;
    visibility: string | null;
    dm_key: string | null;
    created_by: string;
    created_at: string;
  };
  conversation_members: {
    conversation_id: string;
    member_id: string;
    member_type: string;
    joined_at: string;
  };
  messages: {
    id: string;
    workspace_id: string;
    conversation_id: string;
    thread_id: string | null;
    author_id: string;
    author_type: string;
    author_name: string;
    text: string;
    aside: number;
    mentions: string;
    created_at: string;
  };
  events: {
    id: string;
    workspace_id: string;
    agent_id: string;
    type: string;
    payload: string;
    status: string;
    attempts: number;
    next_attempt_at: string | null;
    next_trigger: string;
    retries: number;
    claimed: number;
    created_at: string;
    updated_at: string;
  };
  delivery_attempts: {
    id: string;
    event_id: string;
    agent_id: string;
    attempt: number;
    trigger: string;
    url: string;
    started_at: string;
    duration_ms: number;
    status_code: number | null;
    error: string | null;
    response_excerpt: string;
    outcome: string;
    next_attempt_at: string | null;
  };
  notifications: {
    id: string;
    workspace_id: string;
    user_id: string;
    type: string;
    conversation_id: string;
    message_id: string;
    created_at: string;
    read_at: string | null;
  };
}

/** What every repository queries through: the database, or a transaction on it. */
export type Db = Kysely<Database> | Transaction<Database>;
