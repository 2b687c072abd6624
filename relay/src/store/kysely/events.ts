import type { Db, DeliveryAttemptsTable, EventsTable } from "../schema";
import type { Store, StoredEvent } from "../types";
import { compiledOnce } from "./compiledOnce";

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
      await insertEvent(
        db,
        event.id,
        event.workspace_id,
        event.agent_id,
        event.type,
        event.payload,
        event.status,
        event.attempts,
        event.next_attempt_at,
        event.next_trigger,
        event.retries,
        event.created_at,
        event.updated_at,
      );
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
      // Inside the claiming transaction, rows another relay is claiming are passed over rather than waited for.
      const locked = options.rowLocks && db.isTransaction;
      const { rows } =
        agentId !== undefined
          ? await (locked ? dueOfAgentLocked : dueOfAgent)(db, now, [...socketAgents], agentId, limit)
          : await (locked ? dueLocked : due)(db, now, [...socketAgents], [...skipAgents], limit);
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
      await claim(db, until, [...ids]);
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
      const result = await recordOutcome(
        db,
        update.status,
        update.next_attempt_at,
        update.next_trigger,
        update.retries,
        update.attempts,
        at,
        attempt.event_id,
        claim,
      );
      const held = Number(result.numAffectedRows ?? 0) > 0;
      if (!held) {
        // Still counted, so the next attempt (a redelivery asked for meanwhile, say) gets the next number.
        await db
          .updateTable("events")
          .set({ attempts: update.attempts })
          .where("id", "=", attempt.event_id)
          .where("attempts", "<", update.attempts)
          .execute();
      }
      await insertAttempt(
        db,
        attempt.id,
        attempt.event_id,
        attempt.agent_id,
        attempt.attempt,
        attempt.trigger,
        attempt.url,
        attempt.started_at,
        attempt.duration_ms,
        attempt.status_code,
        attempt.error,
        attempt.response_excerpt,
        attempt.outcome,
        held ? attempt.next_attempt_at : null,
      );
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

/**
 * The outbox's hot queries, built and compiled once (compiledOnce.ts): the post's insert, the worker's read and claim,
 * and the record of an attempt.
 */
const insertEvent = compiledOnce(
  "events.create",
  (
    db: Db,
    id: string,
    workspaceId: string,
    agentId: string,
    type: string,
    payload: string,
    status: EventsTable["status"],
    attempts: number,
    nextAttemptAt: string | null,
    nextTrigger: EventsTable["next_trigger"],
    retries: number,
    createdAt: string,
    updatedAt: string,
  ) =>
    db.insertInto("events").values({
      id,
      workspace_id: workspaceId,
      agent_id: agentId,
      type,
      payload,
      status,
      attempts,
      next_attempt_at: nextAttemptAt,
      next_trigger: nextTrigger,
      retries,
      claimed: 0,
      created_at: createdAt,
      updated_at: updatedAt,
    }),
);

/** Pending events due at `now` whose agent can take them, oldest due first; one agent's, or all but `skipAgents`. */
function dueQuery(
  db: Db,
  now: string,
  socketAgents: readonly string[],
  limit: number,
  agent: { id: string } | { skip: readonly string[] },
  locked: boolean,
) {
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
      return socketAgents.length > 0 ? eb.or([byWebhook, eb("a.id", "in", socketAgents)]) : byWebhook;
    })
    .where((eb) => eb.or([eb("a.state", "=", "active"), eb("e.type", "=", "ping")]));
  if ("id" in agent) q = q.where("e.agent_id", "=", agent.id);
  else if (agent.skip.length > 0) q = q.where("e.agent_id", "not in", agent.skip);
  const ordered = q.orderBy("e.next_attempt_at").orderBy("e.id").limit(limit);
  return locked ? ordered.forUpdate("e").skipLocked() : ordered;
}

const dueOfAgent = compiledOnce(
  "events.due.agent",
  (db: Db, now: string, socketAgents: readonly string[], agentId: string, limit: number) =>
    dueQuery(db, now, socketAgents, limit, { id: agentId }, false),
);
const dueOfAgentLocked = compiledOnce(
  "events.due.agent.locked",
  (db: Db, now: string, socketAgents: readonly string[], agentId: string, limit: number) =>
    dueQuery(db, now, socketAgents, limit, { id: agentId }, true),
);
const due = compiledOnce(
  "events.due",
  (db: Db, now: string, socketAgents: readonly string[], skipAgents: readonly string[], limit: number) =>
    dueQuery(db, now, socketAgents, limit, { skip: skipAgents }, false),
);
const dueLocked = compiledOnce(
  "events.due.locked",
  (db: Db, now: string, socketAgents: readonly string[], skipAgents: readonly string[], limit: number) =>
    dueQuery(db, now, socketAgents, limit, { skip: skipAgents }, true),
);

const claim = compiledOnce("events.claim", (db: Db, until: string, ids: readonly string[]) =>
  db
    .updateTable("events")
    .set({ claimed: 1, next_attempt_at: until })
    .where("id", "in", ids)
    .where("status", "=", "pending"),
);

const recordOutcome = compiledOnce(
  "events.recordAttempt",
  (
    db: Db,
    status: EventsTable["status"],
    nextAttemptAt: string | null,
    nextTrigger: EventsTable["next_trigger"],
    retries: number,
    attempts: number,
    at: string,
    id: string,
    claim: string,
  ) =>
    db
      .updateTable("events")
      .set({
        status,
        next_attempt_at: nextAttemptAt,
        next_trigger: nextTrigger,
        retries,
        attempts,
        claimed: 0,
        updated_at: at,
      })
      .where("id", "=", id)
      .where("status", "=", "pending")
      .where("claimed", "=", 1)
      .where("next_attempt_at", "=", claim),
);

const insertAttempt = compiledOnce(
  "delivery_attempts.create",
  (
    db: Db,
    id: string,
    eventId: string,
    agentId: string,
    attempt: number,
    trigger: DeliveryAttemptsTable["trigger"],
    url: string,
    startedAt: string,
    durationMs: number,
    statusCode: number | null,
    error: string | null,
    responseExcerpt: string,
    outcome: DeliveryAttemptsTable["outcome"],
    nextAttemptAt: string | null,
  ) =>
    db.insertInto("delivery_attempts").values({
      id,
      event_id: eventId,
      agent_id: agentId,
      attempt,
      trigger,
      url,
      started_at: startedAt,
      duration_ms: durationMs,
      status_code: statusCode,
      error,
      response_excerpt: responseExcerpt,
      outcome,
      next_attempt_at: nextAttemptAt,
    }),
);
