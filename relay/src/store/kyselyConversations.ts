import { type Kysely, type Transaction, sql } from "kysely";
import type { Database } from "./schema";
import type {
  Agent,
  AgentState,
  Conversation,
  ConversationType,
  DeliveryAttempt,
  DeliveryTrigger,
  EventStatus,
  Member,
  MemberType,
  Message,
  Notification,
  Store,
  StoredEvent,
  Visibility,
} from "./types";

export type Db = Kysely<Database> | Transaction<Database>;

/** Marks the workspace's directory as changed; called by every write that adds, removes or renames a member. */
export async function bumpDirectory(db: Db, workspaceId: string): Promise<void> {
  await db
    .updateTable("workspaces")
    .set((eb) => ({ directory_version: eb("directory_version", "+", 1) }))
    .where("id", "=", workspaceId)
    .execute();
}

const AGENT_COLUMNS = [
  "id", "workspace_id", "owner_user_id", "name", "description", "webhook_url", "state", "token_hint", "created_at", "updated_at",
] as const;

function toAgent(row: Pick<Database["agents"], (typeof AGENT_COLUMNS)[number]>): Agent {
  return { ...row, state: row.state as AgentState };
}

export function agentsStore(db: Db): Store["agents"] {
  return {
    async create(input) {
      const row = {
        id: input.id,
        workspace_id: input.workspaceId,
        owner_user_id: input.ownerUserId,
        name: input.name,
        description: input.description,
        webhook_url: input.webhookUrl,
        state: "active",
        token_hash: input.tokenHash,
        token_hint: input.tokenHint,
        signing_secret: input.signingSecret,
        created_at: input.createdAt,
        updated_at: input.createdAt,
        removed_at: null,
      };
      await db.insertInto("agents").values(row).execute();
      await bumpDirectory(db, input.workspaceId);
      // What is returned is what `get` would answer: never the token's hash or the signing secret.
      const { token_hash: _hash, signing_secret: _secret, removed_at: _removed, ...agent } = row;
      return toAgent(agent);
    },
    async get(workspaceId, id) {
      const row = await db
        .selectFrom("agents")
        .select(AGENT_COLUMNS)
        .where("workspace_id", "=", workspaceId)
        .where("id", "=", id)
        .where("removed_at", "is", null)
        .executeTakeFirst();
      return row && toAgent(row);
    },
    async list(workspaceId) {
      const rows = await db
        .selectFrom("agents")
        .select(AGENT_COLUMNS)
        .where("workspace_id", "=", workspaceId)
        .where("removed_at", "is", null)
        .orderBy("created_at")
        .orderBy("id")
        .execute();
      return rows.map(toAgent);
    },
    async findByTokenHash(tokenHash) {
      const row = await db
        .selectFrom("agents as a")
        .innerJoin("workspaces as w", "w.id", "a.workspace_id")
        .select([
          "a.id", "a.workspace_id", "a.owner_user_id", "a.name", "a.description", "a.webhook_url", "a.state", "a.token_hint",
          "a.created_at", "a.updated_at", "w.slug as w_slug", "w.name as w_name", "w.created_at as w_created_at",
        ])
        .where("a.token_hash", "=", tokenHash)
        .where("a.removed_at", "is", null)
        .executeTakeFirst();
      if (!row) return undefined;
      const { w_slug, w_name, w_created_at, ...agent } = row;
      return { agent: toAgent(agent), workspace: { id: agent.workspace_id, slug: w_slug, name: w_name, created_at: w_created_at } };
    },
    async update(workspaceId, id, patch, at) {
      const result = await db
        .updateTable("agents")
        .set({ ...patch, updated_at: at })
        .where("workspace_id", "=", workspaceId)
        .where("id", "=", id)
        .where("removed_at", "is", null)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return undefined;
      if (patch.name !== undefined) await bumpDirectory(db, workspaceId);
      return this.get(workspaceId, id);
    },
    async remove(workspaceId, id, at) {
      // The token hash is replaced too, so the removed agent's token can never match again.
      const result = await db
        .updateTable("agents")
        .set({ removed_at: at, updated_at: at, token_hash: `removed:${id}` })
        .where("workspace_id", "=", workspaceId)
        .where("id", "=", id)
        .where("removed_at", "is", null)
        .executeTakeFirst();
      const removed = Number(result.numUpdatedRows) > 0;
      if (removed) await bumpDirectory(db, workspaceId);
      return removed;
    },
  };
}

function toConversation(row: Omit<Database["conversations"], "dm_key">): Conversation {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    type: row.type as ConversationType,
    name: row.name,
    visibility: row.visibility as Visibility | null,
    created_by: row.created_by,
    created_at: row.created_at,
  };
}

const CONVERSATION_COLUMNS = ["c.id", "c.workspace_id", "c.type", "c.name", "c.visibility", "c.created_by", "c.created_at"] as const;

export function conversationsStore(db: Db): Store["conversations"] {
  return {
    async create(input) {
      await db.insertInto("conversations").values(input).execute();
      return toConversation(input);
    },
    async get(workspaceId, type, id) {
      const row = await db
        .selectFrom("conversations as c")
        .select(CONVERSATION_COLUMNS)
        .where("c.workspace_id", "=", workspaceId)
        .where("c.type", "=", type)
        .where("c.id", "=", id)
        .executeTakeFirst();
      return row && toConversation(row);
    },
    async byId(workspaceId, id) {
      const row = await db.selectFrom("conversations as c").select(CONVERSATION_COLUMNS).where("c.workspace_id", "=", workspaceId).where("c.id", "=", id).executeTakeFirst();
      return row && toConversation(row);
    },
    async findDm(workspaceId, dmKey) {
      const row = await db
        .selectFrom("conversations as c")
        .select(CONVERSATION_COLUMNS)
        .where("c.workspace_id", "=", workspaceId)
        .where("c.dm_key", "=", dmKey)
        .executeTakeFirst();
      return row && toConversation(row);
    },
    async findChannel(workspaceId, name) {
      const row = await db
        .selectFrom("conversations as c")
        .select(CONVERSATION_COLUMNS)
        .where("c.workspace_id", "=", workspaceId)
        .where("c.type", "=", "channel")
        .where("c.name", "=", name)
        .executeTakeFirst();
      return row && toConversation(row);
    },
    async listVisible(workspaceId, memberId, withPublic) {
      const rows = await db
        .selectFrom("conversations as c")
        .leftJoin("conversation_members as m", (join) => join.onRef("m.conversation_id", "=", "c.id").on("m.member_id", "=", memberId))
        .select([...CONVERSATION_COLUMNS, "m.member_id"])
        .where("c.workspace_id", "=", workspaceId)
        .where((eb) =>
          withPublic
            ? eb.or([eb("m.member_id", "is not", null), eb.and([eb("c.type", "=", "channel"), eb("c.visibility", "=", "public")])])
            : eb("m.member_id", "is not", null),
        )
        .orderBy("c.type")
        .orderBy("c.name")
        .orderBy("c.created_at")
        .orderBy("c.id")
        .execute();
      return rows.map(({ member_id, ...row }) => ({ ...toConversation(row), is_member: member_id !== null }));
    },
    async addMember(conversationId, member, at) {
      const result = await db
        .insertInto("conversation_members")
        .values({ conversation_id: conversationId, member_id: member.id, member_type: member.type, joined_at: at })
        .onConflict((oc) => oc.columns(["conversation_id", "member_id"]).doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
    },
    async isMember(conversationId, memberId) {
      const row = await db
        .selectFrom("conversation_members")
        .select("member_id")
        .where("conversation_id", "=", conversationId)
        .where("member_id", "=", memberId)
        .executeTakeFirst();
      return row !== undefined;
    },
    async directory(workspaceId) {
      const rows = await db
        .selectFrom("users")
        .select(["id", "name", sql.lit("user").as("type")])
        .where("workspace_id", "=", workspaceId)
        .where("removed_at", "is", null)
        .unionAll(
          db.selectFrom("agents").select(["id", "name", sql.lit("agent").as("type")]).where("workspace_id", "=", workspaceId).where("removed_at", "is", null),
        )
        .execute();
      return rows.map((row) => ({ id: row.id, name: row.name, type: row.type as MemberType }));
    },
    async directoryVersion(workspaceId) {
      const row = await db.selectFrom("workspaces").select("directory_version").where("id", "=", workspaceId).executeTakeFirst();
      return Number(row?.directory_version ?? 0);
    },
    async members(conversationId) {
      const rows = await db
        .selectFrom("conversation_members")
        .select(["member_id", "member_type"])
        .where("conversation_id", "=", conversationId)
        .orderBy("joined_at")
        .orderBy("member_id")
        .execute();
      return rows.map((row) => ({ id: row.member_id, type: row.member_type as MemberType }));
    },
  };
}

function toMessage(row: Database["messages"]): Message {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    conversation_id: row.conversation_id,
    thread_id: row.thread_id,
    author: { id: row.author_id, type: row.author_type as MemberType, name: row.author_name },
    text: row.text,
    aside: row.aside === 1,
    mentions: JSON.parse(row.mentions) as Member[],
    created_at: row.created_at,
  };
}

export function messagesStore(db: Db): Store["messages"] {
  return {
    async create(message) {
      await db
        .insertInto("messages")
        .values({
          id: message.id,
          workspace_id: message.workspace_id,
          conversation_id: message.conversation_id,
          thread_id: message.thread_id,
          author_id: message.author.id,
          author_type: message.author.type,
          author_name: message.author.name,
          text: message.text,
          aside: message.aside ? 1 : 0,
          mentions: JSON.stringify(message.mentions),
          created_at: message.created_at,
        })
        .execute();
      return message;
    },
    async get(conversationId, id) {
      const row = await db.selectFrom("messages").selectAll().where("conversation_id", "=", conversationId).where("id", "=", id).executeTakeFirst();
      return row && toMessage(row);
    },
    async list(conversationId, query) {
      let q = db.selectFrom("messages").selectAll().where("conversation_id", "=", conversationId);
      if (query.threadId !== undefined) {
        const threadId = query.threadId;
        q = q.where((eb) => eb.or([eb("id", "=", threadId), eb("thread_id", "=", threadId)]));
      }
      if (query.before !== undefined) q = q.where("id", "<", query.before);
      if (!query.includeAsides) q = q.where("aside", "=", 0);
      const rows = await q.orderBy("id", "desc").limit(query.limit).execute();
      return rows.map(toMessage);
    },
    async agentAuthorsInThread(conversationId, threadId) {
      const rows = await db
        .selectFrom("messages")
        .select("author_id")
        .distinct()
        .where("conversation_id", "=", conversationId)
        .where((eb) => eb.or([eb("id", "=", threadId), eb("thread_id", "=", threadId)]))
        .where("author_type", "=", "agent")
        .execute();
      return rows.map((row) => row.author_id);
    },
  };
}

function toEvent({ claimed, ...row }: Database["events"]): StoredEvent {
  // While claimed, next_attempt_at holds when the claim lapses, not a planned attempt.
  return {
    ...row,
    status: row.status as EventStatus,
    next_trigger: row.next_trigger as DeliveryTrigger,
    sending: claimed === 1,
    next_attempt_at: claimed === 1 ? null : row.next_attempt_at,
  };
}

function toAttempt(row: Database["delivery_attempts"]): DeliveryAttempt {
  return { ...row, trigger: row.trigger as DeliveryTrigger, outcome: row.outcome as DeliveryAttempt["outcome"] };
}

export function eventsStore(db: Db, options: { rowLocks: boolean }): Store["events"] {
  return {
    async create(event) {
      const { sending: _sending, ...row } = event;
      await db.insertInto("events").values({ ...row, claimed: 0 }).execute();
    },
    async get(agentId, id) {
      const row = await db.selectFrom("events").selectAll().where("agent_id", "=", agentId).where("id", "=", id).executeTakeFirst();
      return row && toEvent(row);
    },
    async listForAgent(agentId, limit) {
      const rows = await db.selectFrom("events").selectAll().where("agent_id", "=", agentId).orderBy("created_at", "desc").orderBy("id", "desc").limit(limit).execute();
      return rows.map(toEvent);
    },
    async due(now, { limit, skipAgents, socketAgents, agentId }) {
      let q = db
        .selectFrom("events as e")
        .innerJoin("agents as a", "a.id", "e.agent_id")
        .selectAll("e")
        .select(["a.webhook_url", "a.signing_secret"])
        .where("e.status", "=", "pending")
        .where("e.next_attempt_at", "<=", now)
        .where("a.removed_at", "is", null)
        .where((eb) => {
          const byWebhook = eb.and([
            eb("a.webhook_url", "is not", null),
            eb.not(eb.exists(eb.selectFrom("agent_sockets as s").select("s.agent_id").whereRef("s.agent_id", "=", "a.id").where("s.connected_until", ">", now))),
          ]);
          return socketAgents.size > 0 ? eb.or([byWebhook, eb("a.id", "in", [...socketAgents])]) : byWebhook;
        })
        .where((eb) => eb.or([eb("a.state", "=", "active"), eb("e.type", "=", "ping")]));
      if (agentId !== undefined) q = q.where("e.agent_id", "=", agentId);
      else if (skipAgents.size > 0) q = q.where("e.agent_id", "not in", [...skipAgents]);
      let ordered = q.orderBy("e.next_attempt_at").orderBy("e.id").limit(limit);
      // Inside the claiming transaction, rows another relay is claiming are passed over rather than waited for.
      if (options.rowLocks && db.isTransaction) ordered = ordered.forUpdate("e").skipLocked();
      const rows = await ordered.execute();
      return rows.map(({ webhook_url, signing_secret, ...event }) => ({
        event: toEvent(event),
        webhookUrl: webhook_url,
        signingSecret: signing_secret,
      }));
    },
    async nextDueAt(after) {
      const row = await db
        .selectFrom("events as e")
        .innerJoin("agents as a", "a.id", "e.agent_id")
        .select((eb) => eb.fn.min("e.next_attempt_at").as("at"))
        .where("e.status", "=", "pending")
        .where("e.next_attempt_at", ">", after)
        .where("a.removed_at", "is", null)
        .where("a.webhook_url", "is not", null)
        .where((eb) => eb.or([eb("a.state", "=", "active"), eb("e.type", "=", "ping")]))
        .executeTakeFirst();
      return row?.at ?? undefined;
    },
    async dueNow(agentId, now) {
      const result = await db
        .updateTable("events")
        .set({ next_attempt_at: now })
        .where("agent_id", "=", agentId)
        .where("status", "=", "pending")
        .where("claimed", "=", 0)
        .where("next_attempt_at", ">", now)
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
    async claim(ids, until) {
      if (ids.length === 0) return;
      await db.updateTable("events").set({ claimed: 1, next_attempt_at: until }).where("id", "in", [...ids]).where("status", "=", "pending").execute();
    },
    async unclaim(id, now, claim) {
      await db
        .updateTable("events")
        .set({ claimed: 0, next_attempt_at: now })
        .where("id", "=", id)
        .where("status", "=", "pending")
        .where("claimed", "=", 1)
        .where("next_attempt_at", "=", claim)
        .execute();
    },
    async releaseClaims(now) {
      const result = await db.updateTable("events").set({ claimed: 0, next_attempt_at: now }).where("claimed", "=", 1).executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
    async recordAttempt(attempt, update, at, claim) {
      // The claim's lease time names it: a relay that takes over a lapsed claim sets a later one.
      const result = await db
        .updateTable("events")
        .set({ ...update, claimed: 0, updated_at: at })
        .where("id", "=", attempt.event_id)
        .where("status", "=", "pending")
        .where("claimed", "=", 1)
        .where("next_attempt_at", "=", claim)
        .executeTakeFirst();
      const held = Number(result.numUpdatedRows) > 0;
      if (!held) {
        // Still counted, so the next attempt (a redelivery asked for meanwhile, say) gets the next number.
        await db.updateTable("events").set({ attempts: update.attempts }).where("id", "=", attempt.event_id).where("attempts", "<", update.attempts).execute();
      }
      await db.insertInto("delivery_attempts").values(held ? attempt : { ...attempt, next_attempt_at: null }).execute();
      return held;
    },
    async attempts(eventIds) {
      if (eventIds.length === 0) return [];
      const rows = await db.selectFrom("delivery_attempts").selectAll().where("event_id", "in", [...eventIds]).orderBy("event_id").orderBy("attempt").execute();
      return rows.map(toAttempt);
    },
    async lastAttempt(agentId) {
      const row = await db.selectFrom("delivery_attempts").selectAll().where("agent_id", "=", agentId).orderBy("started_at", "desc").orderBy("id", "desc").limit(1).executeTakeFirst();
      return row && toAttempt(row);
    },
    async schedule(id, update, at, claim) {
      let query = db.updateTable("events").set({ ...update, claimed: 0, updated_at: at }).where("id", "=", id);
      if (claim !== undefined) query = query.where("claimed", "=", 1).where("next_attempt_at", "=", claim);
      await query.execute();
    },
    async cancelPending(agentId, at) {
      const result = await db
        .updateTable("events")
        .set({ status: "cancelled", next_attempt_at: null, claimed: 0, updated_at: at })
        .where("agent_id", "=", agentId)
        .where("status", "=", "pending")
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
  };
}

export function agentSocketsStore(db: Db): Store["agentSockets"] {
  return {
    async mark(agentIds, relayId, until) {
      if (agentIds.length === 0) return;
      await db
        .insertInto("agent_sockets")
        .values(agentIds.map((agentId) => ({ agent_id: agentId, relay_id: relayId, connected_until: until })))
        .onConflict((oc) => oc.columns(["agent_id", "relay_id"]).doUpdateSet({ connected_until: until }))
        .execute();
    },
    async unmark(agentId, relayId) {
      await db.deleteFrom("agent_sockets").where("agent_id", "=", agentId).where("relay_id", "=", relayId).execute();
    },
    async unmarkRelay(relayId) {
      await db.deleteFrom("agent_sockets").where("relay_id", "=", relayId).execute();
    },
    async connected(agentId, now) {
      const row = await db.selectFrom("agent_sockets").select("agent_id").where("agent_id", "=", agentId).where("connected_until", ">", now).executeTakeFirst();
      return row !== undefined;
    },
  };
}

export function notificationsStore(db: Db): Store["notifications"] {
  return {
    async create(notification) {
      await db.insertInto("notifications").values(notification).execute();
    },
    async listForUser(userId, query) {
      let q = db.selectFrom("notifications").selectAll().where("user_id", "=", userId);
      if (query.before !== undefined) q = q.where("id", "<", query.before);
      const rows: Notification[] = await q.orderBy("id", "desc").limit(query.limit).execute();
      return rows;
    },
  };
}
