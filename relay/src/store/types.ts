import type { Selectable } from "kysely";
import type { Role, Scope } from "../auth/scopes";
import type { UsageCounts } from "../usage/columns";
import type {
  AgentsTable,
  ApiKeysTable,
  AuditLogTable,
  ConversationType,
  ConversationsTable,
  DeliveryAttemptsTable,
  EventsTable,
  MemberType,
  NotificationsTable,
  SessionsTable,
  TabUsageTable,
  UsersTable,
  WorkspacesTable,
} from "./schema";

export type {
  AgentState,
  AttemptOutcome,
  ConversationType,
  DeliveryTrigger,
  EventStatus,
  MemberType,
  Visibility,
} from "./schema";

/*
 * Each row callers get is its table's row (schema.ts), less any column the store keeps to itself. Where the store
 * turns a column into something else on the way out, the type says which and why: a key's scopes (JSON text), an
 * event's claim (a 0/1 integer); a message is reshaped enough that it is declared whole.
 */

/** Less the directory's change counter, which only `conversations.directoryVersion` reads. */
export type Workspace = Omit<Selectable<WorkspacesTable>, "directory_version">;

export type User = Selectable<UsersTable>;

/**
 * An API key without its secret: the store keeps only the secret's SHA-256 and never hands that out, and a short hint
 * lets people recognise the key.
 */
export type ApiKey = Omit<Selectable<ApiKeysTable>, "secret_hash" | "scopes"> & {
  /** Parsed from the row's JSON text. */
  scopes: Scope[];
};

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

/** An agent as routes see it: never the token (only its hash is kept) and never the signing secret. */
export type Agent = Omit<Selectable<AgentsTable>, "token_hash" | "signing_secret" | "removed_at">;

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

/** What an update may change: never the ids, the owner or the timestamps. */
export type AgentPatch = Partial<
  Pick<AgentsTable, "name" | "description" | "webhook_url" | "state" | "token_hash" | "token_hint" | "signing_secret">
>;

/** Less the DM's key, which only finds a DM again. */
export type Conversation = Omit<Selectable<ConversationsTable>, "dm_key">;

export interface MemberRef {
  id: string;
  type: MemberType;
}

/** A user or agent of the workspace, as mentions and member lists name them. */
export interface Member extends MemberRef {
  name: string;
}

/**
 * Declared whole, since little of it is the row as stored: the author is three columns made one member, `aside` is
 * a 0/1 integer made a boolean, and the mentions are a JSON array in a text column, parsed here.
 */
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

/**
 * One event for one agent: the outbox row its deliveries are made from. While an event is claimed, its row's
 * `next_attempt_at` holds when the claim lapses, which is no planned attempt: callers read null there.
 */
export type StoredEvent = Omit<Selectable<EventsTable>, "claimed"> & {
  /** An attempt is under way: the row's 0/1 `claimed`. */
  sending: boolean;
};

/** A pending event ready to go, with what its attempt needs from the agent. */
export interface DueEvent {
  event: StoredEvent;
  /** Null for an agent reached only over Socket Mode. */
  webhookUrl: string | null;
  signingSecret: string;
}

export type DeliveryAttempt = Selectable<DeliveryAttemptsTable>;

export type Notification = Selectable<NotificationsTable>;

/** A console sign-in: it acts with the API key it was made from, and ends when that key is revoked. Never the cookie token's hash. */
export type Session = Omit<Selectable<SessionsTable>, "token_hash">;

/** One audit record as stored; `details` is its JSON text. */
export type AuditRecord = Selectable<AuditLogTable>;

export interface AuditQuery {
  /** Inclusive. */
  since?: string | undefined;
  /** Exclusive. */
  until?: string | undefined;
  actor?: string | undefined;
  action?: AuditRecord["action"] | undefined;
  /** An id: only older records. */
  before?: string | undefined;
  limit: number;
}

/** One daily usage row as stored and added. */
export type UsageRow = TabUsageTable;

export type UsageGroupBy = "day" | "user" | "language" | "model" | "all";

export interface UsageQuery {
  /** A day, inclusive. */
  since: string;
  /** A day, exclusive. */
  until: string;
  /** Only this person's rows. */
  userId?: string | undefined;
  groupBy: UsageGroupBy;
}

/** A group's summed counts; `key` is its day, user id, language or model (empty when grouped as `all`). */
export type UsageSummary = UsageCounts & { key: string; users: number };

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
    /** Changes the role of a user still in the workspace; false when there is none. */
    setRole(workspaceId: string, id: string, role: Role): Promise<boolean>;
    /**
     * Owners still in the workspace. Called in a transaction, it holds the workspace until the transaction ends, so
     * a change that keeps one owner (count, then demote or remove) cannot interleave with another.
     */
    countOwners(workspaceId: string): Promise<number>;
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
    listVisible(
      workspaceId: string,
      memberId: string,
      withPublic: boolean,
    ): Promise<(Conversation & { is_member: boolean })[]>;
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
    due(
      now: string,
      query: { limit: number; skipAgents: ReadonlySet<string>; socketAgents: ReadonlySet<string>; agentId?: string },
    ): Promise<DueEvent[]>;
    /** How many events are pending and when the oldest of them was created (for /metrics, read when scraped). */
    pendingSummary(): Promise<{ count: number; oldestCreatedAt: string | undefined }>;
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
    schedule(
      id: string,
      update: Pick<StoredEvent, "status" | "next_attempt_at" | "next_trigger" | "retries">,
      at: string,
      claim?: string,
    ): Promise<void>;
    cancelPending(agentId: string, at: string): Promise<number>;
  };
  readonly notifications: {
    create(notification: Notification): Promise<void>;
    listForUser(userId: string, query: { before?: string | undefined; limit: number }): Promise<Notification[]>;
  };
  readonly apiKeys: {
    create(input: NewApiKey): Promise<ApiKey>;
    /** A store that remembers owners may answer at once, without a promise (the completion path looks one up per request). */
    findOwnerByHash(secretHash: string): Promise<KeyOwner | undefined> | KeyOwner | undefined;
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
  /** The audit log: added to and pruned, never changed. */
  readonly audit: {
    create(record: AuditRecord): Promise<void>;
    /** The workspace's records, newest first. */
    list(workspaceId: string, query: AuditQuery): Promise<AuditRecord[]>;
    /** Deletes the records older than `before`; answers how many. */
    prune(before: string): Promise<number>;
  };
  /** Tab's daily usage aggregates (docs/api.md#usage-insights): added to and pruned, never changed otherwise. */
  readonly usage: {
    /** Adds each row's counts to the stored row with its key, creating it; at most one row per key in a call. */
    add(rows: UsageRow[]): Promise<void>;
    /** The workspace's rows in the range summed per group, ordered by the group's key. */
    summarize(workspaceId: string, query: UsageQuery): Promise<UsageSummary[]>;
    /** Deletes the days before `beforeDay` (YYYY-MM-DD); answers how many rows. */
    prune(beforeDay: string): Promise<number>;
  };
  /** Runs `fn` atomically: all of its writes happen, or none. */
  transaction<T>(fn: (store: Store) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
