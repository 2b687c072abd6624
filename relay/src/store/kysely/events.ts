import type { Db, EventsTable } from "../schema";
import type { Store, StoredEvent } from "../types";

function toEvent({ claimed, ...row }: EventsTable): StoredEvent {
  // While claimed, next_attempt_at holds when the claim lapses, not a planned attempt.
  return {
    ...row,
    sending: claimed === 1,
    next_attempt_at: claimed === 1 ? null : row.next_attempt_at,
  };
}

export function eventsStore(db: Db, options: { rowLocks: boolean }): Store["events"] {
  return {
    async create(event) {
      const { sending: _sending, ...row } = event;
      await db
        .insertInto("events")
        .values({ ...row, claimed: 0 })
        .execute();
    },
    async get(agentId, id) {
      const row = await db
        .selectFrom("events")
        .selectAll()
        .where("agent_id", "=", agentId)
        .where("id", "=", id)
        .executeTakeFirst();
      return row && toEvent(row);
    },
    async listForAgent(agentId, limit) {
      const rows = await db
        .selectFrom("events")
        .selectAll()
        .where("agent_id", "=", agentId)
        .orderBy("created_at", "desc")
        .orderBy("id", "desc")
        .limit(limit)
        .execute();
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
            eb.not(
              eb.exists(
                eb
                  .selectFrom("agent_sockets as s")
                  .select("s.agent_id")
                  .whereRef("s.agent_id", "=", "a.id")
                  .where("s.connected_until", ">", now),
              ),
            ),
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
    async pendingSummary() {
      // Both read only the events_due index (status first), never the rows' payloads: the cost follows the backlog,
      // about 12 ms for 100,000 pending events on SQLite. Ids sort by creation time, so the smallest is the oldest.
      const counted = await db
        .selectFrom("events")
        .select((eb) => eb.fn.countAll().as("count"))
        .where("status", "=", "pending")
        .executeTakeFirst();
      const oldest = await db
        .selectFrom("events")
        .select("created_at")
        .where("id", "=", (eb) =>
          eb
            .selectFrom("events as p")
            .select((inner) => inner.fn.min("p.id").as("id"))
            .where("p.status", "=", "pending"),
        )
        .executeTakeFirst();
      return { count: Number(counted?.count ?? 0), oldestCreatedAt: oldest?.created_at };
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
      await db
        .updateTable("events")
        .set({ claimed: 1, next_attempt_at: until })
        .where("id", "in", [...ids])
        .where("status", "=", "pending")
        .execute();
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
      const result = await db
        .updateTable("events")
        .set({ claimed: 0, next_attempt_at: now })
        .where("claimed", "=", 1)
        .executeTakeFirst();
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
        await db
          .updateTable("events")
          .set({ attempts: update.attempts })
          .where("id", "=", attempt.event_id)
          .where("attempts", "<", update.attempts)
          .execute();
      }
      await db
        .insertInto("delivery_attempts")
        .values(held ? attempt : { ...attempt, next_attempt_at: null })
        .execute();
      return held;
    },
    async attempts(eventIds) {
      if (eventIds.length === 0) return [];
      return db
        .selectFrom("delivery_attempts")
        .selectAll()
        .where("event_id", "in", [...eventIds])
        .orderBy("event_id")
        .orderBy("attempt")
        .execute();
    },
    async lastAttempt(agentId) {
      return db
        .selectFrom("delivery_attempts")
        .selectAll()
        .where("agent_id", "=", agentId)
        .orderBy("started_at", "desc")
        .orderBy("id", "desc")
        .limit(1)
        .executeTakeFirst();
    },
    async schedule(id, update, at, claim) {
      let query = db
        .updateTable("events")
        .set({ ...update, claimed: 0, updated_at: at })
        .where("id", "=", id);
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
