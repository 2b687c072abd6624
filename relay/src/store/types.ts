import type { Role, Scope } from "../auth/scopes";

export interface Workspace {
  id: string;
  slug: string;
  name: string;
  created_at: string;
}

export interface User {
  id: string;
  workspace_id: string;
  name: string;
  role: Role;
  created_at: string;
  removed_at: string | null;
}

/** An API key as stored: never the secret, only its SHA-256 and a short hint for people to recognise it. */
export interface ApiKey {
  id: string;
  workspace_id: string;
  user_id: string;
  name: string;
  scopes: Scope[];
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

/** Everything a request needs to know about the key it came with. */
export interface KeyOwner {
  key: ApiKey;
  user: User;
  workspace: Workspace;
}

export interface NewApiKey {
  id: string;
  workspaceId: string;
  userId: string;
  name: string;
  scopes: Scope[];
  secretHash: string;
  hint: string;
  createdAt: string;
}

export type AgentState = "active" | "paused";

/** An agent as routes see it: never the token (only its hash is kept) and never the signing secret. */
export interface Agent {
  id: string;
  workspace_id: string;
  owner_user_id: string;
  name: string;
  description: string;
  webhook_url: string | null;
  state: AgentState;
  token_hint: string;
  created_at: string;
  updated_at: string;
}

export interface NewAgent {
  id: string;
  workspaceId: string;
  ownerUserId: string;
  name: string;
  description: string;
  webhookUrl: string | null;
  tokenHash: string;
  tokenHint: string;
  signingSecret: string;
  createdAt: string;
}

export type AgentPatch = Partial<{
  name: string;
  description: string;
  webhook_url: string | null;
  state: AgentState;
  token_hash: string;
  token_hint: string;
  signing_secret: string;
}>;

export type ConversationType = "channel" | "dm";
export type Visibility = "public" | "private";
export type MemberType = "user" | "agent";

export interface Conversation {
  id: string;
  workspace_id: string;
  type: ConversationType;
  /** The channel's name without `#`; null for a DM. */
  name: string | null;
  visibility: Visibility | null;
  created_by: string;
  created_at: string;
}

export interface MemberRef {
  id: string;
  type: MemberType;
}

/** A user or agent of the workspace, as mentions and member lists name them. */
export interface Member extends MemberRef {
  name: string;
}

export interface Message {
  id: string;
  workspace_id: string;
  conversation_id: string;
  thread_id: string | null;
  author: Member;
  text: string;
  /** Hidden from agents (`/aside`). */
  aside: boolean;
  mentions: Member[];
  created_at: string;
}

export interface MessageQuery {
  threadId?: string | undefined;
  before?: string | undefined;
  limit: number;
  includeAsides: boolean;
}

export type EventStatus = "pending" | "delivered" | "failed" | "cancelled";
export type DeliveryTrigger = "scheduled" | "manual" | "test";

/** One event for one agent: the outbox row its deliveries are made from. */
export interface StoredEvent {
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
  /** An attempt is under way. */
  sending: boolean;
  created_at: string;
  updated_at: string;
}

/** A pending event ready to go, with what its attempt needs from the agent. */
export interface DueEvent {
  event: StoredEvent;
  /** Null for an agent reached only over Socket Mode. */
  webhookUrl: string | null;
  signingSecret: string;
}

export interface DeliveryAttempt {
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
  outcome: "success" | "failed";
  next_attempt_at: string | null;
}

export interface Notification {
  id: string;
  workspace_id: string;
  user_id: string;
  type: string;
  conversation_id: string;
  message_id: string;
  created_at: string;
  read_at: string | null;
}

/** A console sign-in: it acts with the API key it was made from, and ends when that key is revoked. */
export interface Session {
  id: string;
  api_key_id: string;
  created_at: string;
  expires_at: string;
  ended_at: string | null;
}

/** The relay's data layer. Routes use only this; SQLite and PostgreSQL implement it. */
export interface Store {
  /** Whether this relay is the database's only user (SQLite); several relays may share a PostgreSQL database. */
  readonly exclusive: boolean;
  readonly workspaces: {
    create(input: { id: string; slug: string; name: string; createdAt: string }): Promise<Workspace>;
    getBySlug(slug: string): Promise<Workspace | undefined>;
    count(): Promise<number>;
    /** Every workspace, oldest first (for the CLI, which may have to pick one). */
    list(): Promise<Workspace[]>;
  };
  readonly users: {
    create(input: { id: string; workspaceId: string; name: string; role: Role; createdAt: string }): Promise<User>;
    get(workspaceId: string, id: string): Promise<User | undefined>;
    remove(workspaceId: string, id: string, at: string): Promise<boolean>;
    /** Users still in the workspace. */
    list(workspaceId: string): Promise<User[]>;
  };
  readonly agents: {
    create(input: NewAgent): Promise<Agent>;
    /** Only agents not removed. */
    get(workspaceId: string, id: string): Promise<Agent | undefined>;
    list(workspaceId: string): Promise<Agent[]>;
    findByTokenHash(tokenHash: string): Promise<{ agent: Agent; workspace: Workspace } | undefined>;
    update(workspaceId: string, id: string, patch: AgentPatch, at: string): Promise<Agent | undefined>;
    remove(workspaceId: string, id: string, at: string): Promise<boolean>;
  };
  readonly conversations: {
    create(input: Conversation & { dm_key: string | null }): Promise<Conversation>;
    get(workspaceId: string, type: ConversationType, id: string): Promise<Conversation | undefined>;
    byId(workspaceId: string, id: string): Promise<Conversation | undefined>;
    findDm(workspaceId: string, dmKey: string): Promise<Conversation | undefined>;
    findChannel(workspaceId: string, name: string): Promise<Conversation | undefined>;
    /** Conversations `memberId` is in, and every public channel when `withPublic`. */
    listVisible(workspaceId: string, memberId: string, withPublic: boolean): Promise<(Conversation & { is_member: boolean })[]>;
    /** Adds the member unless already there; true when added. */
    addMember(conversationId: string, member: MemberRef, at: string): Promise<boolean>;
    isMember(conversationId: string, memberId: string): Promise<boolean>;
    members(conversationId: string): Promise<MemberRef[]>;
    /** Every user and agent still in the workspace, with just what mentions need. */
    directory(workspaceId: string): Promise<Member[]>;
    /** Changes whenever the directory does (a user or agent added, removed or renamed). */
    directoryVersion(workspaceId: string): Promise<number>;
  };
  readonly messages: {
    create(message: Message): Promise<Message>;
    get(conversationId: string, id: string): Promise<Message | undefined>;
    /** Newest first. */
    list(conversationId: string, query: MessageQuery): Promise<Message[]>;
    /** Ids of the agents that wrote the thread's first message or any reply in it. */
    agentAuthorsInThread(conversationId: string, threadId: string): Promise<string[]>;
  };
  readonly events: {
    create(event: StoredEvent): Promise<void>;
    get(agentId: string, id: string): Promise<StoredEvent | undefined>;
    /** Newest first. */
    listForAgent(agentId: string, limit: number): Promise<StoredEvent[]>;
    /**
     * Pending events due by `now` whose agent can take them: not removed, has a webhook URL or a socket, and is active
     * (a paused agent still gets test pings). Oldest due first.
     */
    /**
     * `socketAgents` have a Socket Mode connection here, so they can take events without a webhook URL; an agent
     * whose socket another relay holds (a live `agentSockets` row) is left to that relay.
     */
    due(now: string, query: { limit: number; skipAgents: ReadonlySet<string>; socketAgents: ReadonlySet<string>; agentId?: string }): Promise<DueEvent[]>;
    /** Makes the agent's waiting events due now (it just connected, so retrying need not wait). */
    dueNow(agentId: string, now: string): Promise<number>;
    /**
     * Marks events as being attempted until `until`: they are not due again before then, so no other pass (or,
     * sharing a database, no other relay) attempts them meanwhile; recording the attempt ends the claim.
     */
    claim(ids: readonly string[], until: string): Promise<void>;
    /**
     * Gives back one claim without an attempt (shutdown cut it short): the event is due again at once, unless it was
     * cancelled meanwhile or the claim (named by its `until`) lapsed and another claim took its place.
     */
    unclaim(id: string, now: string, claim: string): Promise<void>;
    /** Ends every claim (only for a relay alone on its database: it knows nobody else is attempting anything). */
    releaseClaims(now: string): Promise<number>;
    /** The earliest time after `after` at which a pending event falls due, if any. */
    nextDueAt(after: string): Promise<string | undefined>;
    /**
     * Keeps the attempt and, if the claim it was made under (named by its `until`) still holds the event, ends the
     * claim and updates the event. A claim that lapsed (another relay took the event over), or an event cancelled or
     * rescheduled meanwhile, leaves the event to whoever has it now: the attempt is kept (and counted) with no next
     * attempt, and the answer is false.
     */
    recordAttempt(
      attempt: DeliveryAttempt,
      update: Pick<StoredEvent, "status" | "attempts" | "next_attempt_at" | "next_trigger" | "retries">,
      at: string,
      claim: string,
    ): Promise<boolean>;
    attempts(eventIds: readonly string[]): Promise<DeliveryAttempt[]>;
    /** The outcome of the agent's latest attempt. */
    lastAttempt(agentId: string): Promise<DeliveryAttempt | undefined>;
    /** Sets when (and why) the event is attempted next; with `claim`, only while that claim still holds it. */
    schedule(id: string, update: Pick<StoredEvent, "status" | "next_attempt_at" | "next_trigger" | "retries">, at: string, claim?: string): Promise<void>;
    cancelPending(agentId: string, at: string): Promise<number>;
  };
  readonly notifications: {
    create(notification: Notification): Promise<void>;
    listForUser(userId: string, query: { before?: string | undefined; limit: number }): Promise<Notification[]>;
  };
  readonly apiKeys: {
    create(input: NewApiKey): Promise<ApiKey>;
    findOwnerByHash(secretHash: string): Promise<KeyOwner | undefined>;
    get(workspaceId: string, id: string): Promise<ApiKey | undefined>;
    listForUser(workspaceId: string, userId: string): Promise<ApiKey[]>;
    revoke(workspaceId: string, id: string, at: string): Promise<boolean>;
  };
  /** Socket Mode connections as every relay sharing the database sees them. */
  readonly agentSockets: {
    /** This relay holds sockets of these agents until `until` (renewed while they last). */
    mark(agentIds: readonly string[], relayId: string, until: string): Promise<void>;
    unmark(agentId: string, relayId: string): Promise<void>;
    unmarkRelay(relayId: string): Promise<void>;
    connected(agentId: string, now: string): Promise<boolean>;
  };
  readonly sessions: {
    create(session: Session & { token_hash: string }): Promise<Session>;
    /** The session and everything its key's owner needs, by the cookie token's hash. */
    findByTokenHash(tokenHash: string): Promise<{ session: Session; owner: KeyOwner } | undefined>;
    end(id: string, at: string): Promise<boolean>;
    /**
     * Ends, at `at`, the key's live sessions (not ended, not expired at `at`) beyond its `keep` newest (by
     * `created_at`, then id); answers the ids it ended.
     */
    endOldest(apiKeyId: string, keep: number, at: string): Promise<string[]>;
  };
  /** Runs `fn` atomically: all of its writes happen, or none. */
  transaction<T>(fn: (store: Store) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
