import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { RelayError, newSigningSecret, verifyWebhook } from "@tab-relay/shared";
import { FakeClock } from "@tab-relay/shared/testing";
import { silentLogger } from "../logger";
import { newEvent } from "../conversations/service";
import { createSortableIds } from "../store/sortableIds";
import { openSqliteStore } from "../store/sqlite";
import type { Store, StoredEvent } from "../store/types";
import type { WebhookClient, WebhookOutcome, WebhookRequest } from "./webhookClient";
import { type AttemptResult, createDeliveryWorker } from "./worker";

const HANG = Symbol("hang");
/** An answer the test gives later, one at a time, with `answerNext`. */
const HOLD = Symbol("hold");

/** How long a test waits for something the worker does at once (nothing here waits for time to pass). */
const AT_ONCE_MS = 3000;

/**
 * Resolves once `count()` reaches `n`, re-checked whenever `wake` is called; fails after AT_ONCE_MS. The deadline
 * only bounds a wait for an event: time passes for the worker only when the test advances its FakeClock.
 */
function counter(what: string) {
  let count = 0;
  const waiters = new Set<() => void>();
  return {
    get count() {
      return count;
    },
    add(): void {
      count++;
      for (const wake of waiters) wake();
    },
    async waitFor(n: number, total: () => number = () => count): Promise<void> {
      if (total() >= n) return;
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          if (total() < n) return;
          waiters.delete(check);
          clearTimeout(deadline);
          resolve();
        };
        const deadline = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`expected ${n} ${what}, got ${total()}`));
        }, AT_ONCE_MS);
        waiters.add(check);
      });
    },
  };
}

/**
 * A client whose answers the test scripts per request. HANG is an agent that never answers; like the real client,
 * closing it ends such requests with a network error. HOLD is an agent that answers 204 when the test says so.
 */
function scriptedClient(answer: (request: WebhookRequest) => WebhookOutcome | typeof HANG | typeof HOLD) {
  const requests: WebhookRequest[] = [];
  const sends = counter("requests");
  const hung: ((outcome: WebhookOutcome) => void)[] = [];
  const held: ((outcome: WebhookOutcome) => void)[] = [];
  const client: WebhookClient & {
    requests: WebhookRequest[];
    waitFor(n: number): Promise<void>;
    sent(eventId: string): Promise<void>;
    /** Answers the oldest held request with 204. */
    answerNext(): void;
  } = {
    requests,
    async send(request) {
      requests.push(request);
      const result = answer(request);
      sends.add();
      if (result === HANG) return new Promise<WebhookOutcome>((resolve) => hung.push(resolve));
      if (result === HOLD) return new Promise<WebhookOutcome>((resolve) => held.push(resolve));
      return result;
    },
    close() {
      for (const end of hung.splice(0)) end({ ok: false, error: "socket closed", durationMs: 1, excerpt: "" });
      for (const end of held.splice(0)) end(outcome(204));
    },
    answerNext: () => held.shift()?.(outcome(204)),
    waitFor: (n) => sends.waitFor(n, () => requests.length),
    /** Waits until the event with this id has been sent (events left by an earlier test may go first). */
    sent: (eventId) => sends.waitFor(1, () => requests.filter((r) => r.headers["webhook-id"] === eventId).length),
  };
  return client;
}

/** Stops a worker whose attempts may hang: the grace period passes on its clock. */
async function stopWithin(
  worker: ReturnType<typeof createDeliveryWorker>,
  clock: FakeClock,
  graceMs: number,
): Promise<void> {
  const stopping = worker.stop(graceMs);
  await clock.advance(graceMs);
  await stopping;
}

const outcome = (status: number, extra: Partial<WebhookOutcome> = {}): WebhookOutcome => ({
  ok: status >= 200 && status < 300,
  status,
  durationMs: 1,
  excerpt: "",
  ...extra,
});

describe("the delivery worker", () => {
  let store: Store;
  const clock = new FakeClock(Date.parse("2026-11-21T12:00:00.000Z"));
  const ids = createSortableIds(clock);
  const secret = newSigningSecret();
  let workspaceId = "";

  before(async () => {
    store = await openSqliteStore(":memory:");
    const at = new Date(clock.now()).toISOString();
    const ws = await store.workspaces.create({ id: "ws_1", slug: "acme", name: "Acme", createdAt: at });
    workspaceId = ws.id;
    await store.users.create({ id: "usr_1", workspaceId, name: "Olive", role: "owner", createdAt: at });
  });
  after(() => store.close());

  async function agentWithEvents(
    name: string,
    count: number,
    retries = 1,
  ): Promise<{ agentId: string; eventIds: string[] }> {
    const at = new Date(clock.now()).toISOString();
    const agent = await store.agents.create({
      id: ids("agt"),
      workspaceId,
      ownerUserId: "usr_1",
      name,
      description: "",
      webhookUrl: `http://agents.test/${name}`,
      tokenHash: `hash-${name}`,
      tokenHint: "hint",
      signingSecret: secret,
      createdAt: at,
    });
    const eventIds: string[] = [];
    for (let i = 0; i < count; i++) {
      const id = ids("evt");
      await store.events.create(
        newEvent(id, workspaceId, agent.id, "message.created", JSON.stringify({ id, n: i }), at, retries, "scheduled"),
      );
      eventIds.push(id);
    }
    return { agentId: agent.id, eventIds };
  }

  /** One more event for the agent, due now, as a post queues it. */
  async function queueEvent(agentId: string): Promise<string> {
    const id = ids("evt");
    const at = new Date(clock.now()).toISOString();
    await store.events.create(
      newEvent(id, workspaceId, agentId, "message.created", JSON.stringify({ id }), at, 1, "scheduled"),
    );
    return id;
  }

  /** A worker that sends one event at a time per agent, with no delay, through `client`. */
  const oneAtATime = (client: WebhookClient) =>
    createDeliveryWorker({ store, clock, logger: silentLogger, client, ids, retryScheduleMs: [1000], maxPerAgent: 1 });

  test("a failed attempt is rescheduled by the schedule with jitter, keeping the event id, and signed afresh", async () => {
    const { agentId, eventIds } = await agentWithEvents("retry", 1);
    const client = scriptedClient(() => outcome(500, { excerpt: "boom" }));
    // random() = 1 is the top of the ±20% jitter band.
    const worker = createDeliveryWorker({
      store,
      clock,
      logger: silentLogger,
      client,
      ids,
      retryScheduleMs: [10_000, 60_000],
      random: () => 1,
    });
    await worker.start();
    await client.waitFor(1);
    await worker.stop(1000);
    const [event] = await store.events.listForAgent(agentId, 10);
    assert.equal(event?.status, "pending");
    assert.equal(event?.attempts, 1);
    assert.equal(event?.next_attempt_at, new Date(clock.now() + 12_000).toISOString());
    const request = client.requests[0] as WebhookRequest;
    assert.equal(request.headers["webhook-id"], eventIds[0]);
    await verifyWebhook(secret, request.headers, request.body, { nowSeconds: Math.floor(clock.now() / 1000) });
    const [attempt] = await store.events.attempts(eventIds);
    assert.equal(attempt?.status_code, 500);
    assert.equal(attempt?.response_excerpt, "boom");
    assert.equal(attempt?.trigger, "scheduled");
  });

  test("Retry-After longer than the scheduled delay wins", async () => {
    const { agentId } = await agentWithEvents("retry-after", 1);
    const client = scriptedClient(() => outcome(503, { retryAfterMs: 120_000 }));
    const worker = createDeliveryWorker({
      store,
      clock,
      logger: silentLogger,
      client,
      ids,
      retryScheduleMs: [1000],
      random: () => 0.5,
    });
    await worker.start();
    await client.waitFor(1);
    await worker.stop(1000);
    const [event] = await store.events.listForAgent(agentId, 1);
    assert.equal(event?.next_attempt_at, new Date(clock.now() + 120_000).toISOString());
  });

  for (const status of [410, 413]) {
    test(`a ${status} answer ends the delivery without a retry`, async () => {
      const { agentId } = await agentWithEvents(`final-${status}`, 1);
      const client = scriptedClient(() => outcome(status));
      const worker = createDeliveryWorker({ store, clock, logger: silentLogger, client, ids, retryScheduleMs: [1000] });
      await worker.start();
      await client.waitFor(1);
      await worker.stop(1000);
      const [event] = await store.events.listForAgent(agentId, 1);
      assert.equal(event?.status, "failed");
      assert.equal(event?.next_attempt_at, null);
    });
  }

  test("after the last scheduled retry the event is failed; an event without retries fails after one attempt", async () => {
    const exhausted = await agentWithEvents("exhausted", 1);
    const once = await agentWithEvents("once", 1, 0);
    const client = scriptedClient(() => outcome(500));
    const worker = createDeliveryWorker({ store, clock, logger: silentLogger, client, ids, retryScheduleMs: [] });
    await worker.start();
    await client.waitFor(2);
    await worker.stop(1000);
    for (const { agentId } of [exhausted, once]) {
      const [event] = await store.events.listForAgent(agentId, 1);
      assert.equal(event?.status, "failed");
      assert.equal(event?.attempts, 1);
    }
  });

  test("each recorded attempt is reported with what became of it: delivered, retry or failed, and how it went out", async () => {
    const delivered = await agentWithEvents("reported-ok", 1);
    const retried = await agentWithEvents("reported-retry", 1);
    const given = await agentWithEvents("reported-gone", 1);
    const status = new Map([
      [delivered.eventIds[0], 200],
      [retried.eventIds[0], 500],
      [given.eventIds[0], 410],
    ]);
    const client = scriptedClient((request) => outcome(status.get(request.headers["webhook-id"]) ?? 200));
    const reported = new Map<string, AttemptResult>();
    const onAttempt = (event: StoredEvent, result: AttemptResult) => reported.set(event.id, result);
    const worker = createDeliveryWorker({
      store,
      clock,
      logger: silentLogger,
      client,
      ids,
      retryScheduleMs: [60_000],
      onAttempt,
    });
    await worker.start();
    await client.waitFor(3);
    await worker.stop(1000);
    assert.deepEqual(reported.get(delivered.eventIds[0] as string), { outcome: "delivered", via: "webhook" });
    assert.deepEqual(reported.get(retried.eventIds[0] as string), { outcome: "retry", via: "webhook" });
    assert.deepEqual(reported.get(given.eventIds[0] as string), { outcome: "failed", via: "webhook" });
  });

  test("an agent that hangs holds only its own share: another agent's events go out meanwhile", async () => {
    await clock.advance(3600_000);
    const slow = await agentWithEvents("slow", 20);
    const fast = await agentWithEvents("fast", 5);
    const client = scriptedClient((request) => (request.url.endsWith("/slow") ? HANG : outcome(204)));
    const worker = createDeliveryWorker({
      store,
      clock,
      logger: silentLogger,
      client,
      ids,
      retryScheduleMs: [1000],
      maxPerAgent: 3,
      maxInFlight: 10,
    });
    await worker.start();
    await client.waitFor(8);
    // 50 ms on the worker's clock: a fair pass put off while the slow agent is at its share (20 ms) has come.
    await clock.advance(50);
    const slowSent = client.requests.filter((r) => r.url.endsWith("/slow")).length;
    const fastSent = client.requests.filter((r) => r.url.endsWith("/fast")).length;
    assert.equal(slowSent, 3, "the slow agent has exactly its share in flight");
    assert.equal(fastSent, 5, "every event of the other agent went out");
    const fastEvents = await store.events.listForAgent(fast.agentId, 10);
    assert.ok(fastEvents.every((event) => event.status === "delivered"));
    // Attempts still under way when the relay stops are abandoned, not recorded: the events stay pending.
    await stopWithin(worker, clock, 10);
    const slowEvents = await store.events.listForAgent(slow.agentId, 30);
    assert.equal(slowEvents.filter((event) => event.status === "pending").length, 20);
    assert.equal((await store.events.attempts(slow.eventIds)).length, 0);
  });

  test("an event queued while its agent is at its share goes out as soon as an attempt ends, not at the next poll", async () => {
    await clock.advance(3600_000);
    const { agentId, eventIds } = await agentWithEvents("one-at-a-time", 1);
    // The agent's attempts wait until the test answers them; no time passes on the worker's clock.
    const client = scriptedClient((request) => (request.url.endsWith("/one-at-a-time") ? HOLD : outcome(204)));
    const mine = () =>
      client.requests.filter((r) => r.url.endsWith("/one-at-a-time")).map((r) => r.headers["webhook-id"]);
    const worker = oneAtATime(client);
    await worker.start();
    await client.sent(eventIds[0]!);
    // A second event for the agent, queued as a post queues it: the worker is woken while the agent's share is taken.
    const second = await queueEvent(agentId);
    worker.wake();
    // Let the pass the wake-up started run (it can only skip the agent) before the first attempt ends.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(mine(), [eventIds[0]], "one attempt at a time to the agent");
    client.answerNext();
    // Before the fix the second event waited for the next wake-up or the 30 s idle poll; the clock never moves here.
    await client.sent(second);
    assert.deepEqual(mine(), [eventIds[0], second]);
    client.answerNext();
    await worker.stop(1000);
  });

  test("a new event for one agent goes out at once while another agent is at its share, without waiting for a pass over everything", async () => {
    await clock.advance(3600_000);
    const busy = await agentWithEvents("busy", 1);
    const idle = await agentWithEvents("idle", 0);
    const client = scriptedClient((request) => (request.url.endsWith("/busy") ? HOLD : outcome(204)));
    const worker = oneAtATime(client);
    await worker.start();
    await client.sent(busy.eventIds[0]!);
    // A pass over everything while the busy agent is at its share: the next one may come only FAIR_PASS_MS later.
    worker.wake();
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    const id = await queueEvent(idle.agentId);
    // As a post wakes the worker: for the agents it queued events for. The clock does not move.
    worker.wake([idle.agentId]);
    await client.sent(id);
    client.answerNext();
    await worker.stop(1000);
  });

  test("once an agent's waiting events are out, its later attempts do not read the outbox again", async () => {
    await clock.advance(3600_000);
    const { agentId, eventIds } = await agentWithEvents("burst", 3);
    let transactions = 0;
    const counting: Store = {
      ...store,
      transaction: (fn) => {
        transactions++;
        return store.transaction(fn);
      },
    };
    const recorded = counter("recorded attempts");
    const worker = createDeliveryWorker({
      store: counting,
      clock,
      logger: silentLogger,
      client: scriptedClient(() => outcome(204)),
      ids,
      retryScheduleMs: [1000],
      maxPerAgent: 2,
      // Events left pending by earlier tests go out too; only this agent's attempts are counted.
      onAttempt: (event) => {
        if (event.agent_id === agentId) recorded.add();
      },
    });
    /** Until nothing is under way and whatever the last attempt started has run. */
    const settle = async () => {
      while (worker.inFlight > 0) await new Promise((resolve) => setImmediate(resolve));
      for (let i = 0; i < 30; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    await worker.start();
    // Three events and a share of two: the third waits for a free share, then the agent's read finds nothing more.
    await recorded.waitFor(3);
    await settle();
    const events = await store.events.listForAgent(agentId, 3);
    assert.deepEqual(
      events.map((event) => event.status),
      eventIds.map(() => "delivered"),
    );
    const before = transactions;
    await queueEvent(agentId);
    worker.wake([agentId]);
    await recorded.waitFor(4);
    await settle();
    assert.equal(transactions - before, 2, "one read that claims the event and one that records its attempt");
    await worker.stop(1000);
  });

  test("an attempt that outlives its claim leaves the event to the relay that took it over", async () => {
    await clock.advance(3600_000);
    const { agentId, eventIds } = await agentWithEvents("stalled", 1);
    const dueNow = async () =>
      (
        await store.events.due(new Date(clock.now()).toISOString(), {
          limit: 10,
          skipAgents: new Set(),
          socketAgents: new Set(),
        })
      ).length;
    // Events left by earlier tests go out at once; only this agent's hangs.
    const answer = (request: WebhookRequest) => (request.url.endsWith("/stalled") ? HANG : outcome(204));
    const recorded = counter("recorded attempts");
    const onAttempt = (event: StoredEvent) => {
      if (event.id === eventIds[0]) recorded.add();
    };
    // Relay A's attempt hangs past its one-second lease.
    const clientA = scriptedClient(answer);
    const relayA = createDeliveryWorker({
      store,
      clock,
      logger: silentLogger,
      client: clientA,
      ids,
      retryScheduleMs: [1000],
      leaseMs: 1000,
      onAttempt,
    });
    await relayA.start();
    await clientA.sent(eventIds[0] as string);
    await clock.advance(5000);
    // Relay B, sharing the database, finds the lapsed claim and attempts the event itself.
    const clientB = scriptedClient(answer);
    const relayB = createDeliveryWorker({
      store: { ...store, exclusive: false },
      clock,
      logger: silentLogger,
      client: clientB,
      ids,
      retryScheduleMs: [1000],
      leaseMs: 60_000,
      onAttempt,
    });
    await relayB.start();
    await clientB.sent(eventIds[0] as string);

    // A's attempt finally fails: it is logged, but B's claim stands, so nobody else starts the event meanwhile.
    clientA.close();
    await recorded.waitFor(1);
    const [stale] = await store.events.attempts(eventIds);
    assert.equal(stale?.outcome, "failed");
    assert.equal(stale?.next_attempt_at, null, "no retry is promised by the relay that lost the claim");
    const [held] = await store.events.listForAgent(agentId, 10);
    assert.equal(held?.sending, true);
    await clock.advance(30_000);
    assert.equal(await dueNow(), 0, "not due again while B's attempt is under way");

    clientB.close();
    await recorded.waitFor(2);
    const [event] = await store.events.listForAgent(agentId, 10);
    assert.equal(event?.sending, false);
    assert.equal(event?.status, "pending", "B's failure schedules the retry");
    assert.notEqual(event?.next_attempt_at, null);
    await stopWithin(relayA, clock, 10);
    await stopWithin(relayB, clock, 10);
  });
});

/**
 * A store whose database goes away on demand: while `down`, transactions (every outbox read and every recorded
 * attempt) fail as the PostgreSQL store fails when it cannot reach its server; `pollDown` fails only the poll's query.
 */
function storeWithOutages(inner: Store, exclusive: boolean) {
  const state = { down: false, pollDown: false };
  const unavailable = () =>
    Promise.reject(new RelayError("SERVICE_UNAVAILABLE", "The database is not answering; retry shortly"));
  const store: Store = {
    ...inner,
    exclusive,
    events: {
      ...inner.events,
      nextDueAt: (now) => (state.down || state.pollDown ? unavailable() : inner.events.nextDueAt(now)),
    },
    transaction: (fn) => (state.down ? unavailable() : inner.transaction(fn)),
  };
  return { store, state };
}

describe("the delivery worker while its database is away", () => {
  let inner: Store;
  const clock = new FakeClock(Date.parse("2026-11-22T12:00:00.000Z"));
  const ids = createSortableIds(clock);
  const workspaceId = "ws_1";
  let agentCount = 0;

  before(async () => {
    inner = await openSqliteStore(":memory:");
    const at = new Date(clock.now()).toISOString();
    await inner.workspaces.create({ id: workspaceId, slug: "acme", name: "Acme", createdAt: at });
    await inner.users.create({ id: "usr_1", workspaceId, name: "Olive", role: "owner", createdAt: at });
  });
  after(() => inner.close());

  async function newAgent(): Promise<string> {
    const name = `agent${++agentCount}`;
    const agent = await inner.agents.create({
      id: ids("agt"),
      workspaceId,
      ownerUserId: "usr_1",
      name,
      description: "",
      webhookUrl: `http://agents.test/${name}`,
      tokenHash: `hash-${name}`,
      tokenHint: "hint",
      signingSecret: newSigningSecret(),
      createdAt: new Date(clock.now()).toISOString(),
    });
    return agent.id;
  }

  /** An event written straight to the database, as another relay would: nobody wakes this worker for it. */
  async function queue(agentId: string): Promise<string> {
    const id = ids("evt");
    await inner.events.create(
      newEvent(
        id,
        workspaceId,
        agentId,
        "message.created",
        JSON.stringify({ id }),
        new Date(clock.now()).toISOString(),
        1,
        "scheduled",
      ),
    );
    return id;
  }

  test("a read of the outbox that failed is tried again: events due meanwhile go out once the database answers, unprompted", async () => {
    const { store, state } = storeWithOutages(inner, true);
    const client = scriptedClient(() => outcome(204));
    const worker = createDeliveryWorker({ store, clock, logger: silentLogger, client, ids, retryScheduleMs: [1000] });
    await worker.start();
    const agentId = await newAgent();
    state.down = true;
    const eventId = await queue(agentId);
    // Woken for the new event while the database is away, the worker's read fails.
    worker.wake();
    await clock.advance(100);
    assert.equal(client.requests.length, 0);
    state.down = false;
    // Nothing wakes it again; the idle poll (30 s alone on a database) is far off. The read is tried again 250 ms
    // after it failed.
    await clock.advance(149);
    assert.equal(client.requests.length, 0);
    await clock.advance(1);
    await client.sent(eventId);
    await worker.stop(1000);
  });

  test("polling goes on after a poll failed, so events another relay queued are found once the database answers", async () => {
    const { store, state } = storeWithOutages(inner, false);
    const client = scriptedClient(() => outcome(204));
    // Sharing the database with a 10 s lease, the worker polls every second.
    const worker = createDeliveryWorker({
      store,
      clock,
      logger: silentLogger,
      client,
      ids,
      retryScheduleMs: [1000],
      leaseMs: 10_000,
    });
    await worker.start();
    state.pollDown = true;
    // The polls at 1 s and 2 s fail.
    await clock.advance(2_300);
    state.pollDown = false;
    const eventId = await queue(await newAgent());
    assert.equal(client.requests.length, 0, "nobody woke the worker for the event");
    // The poll at 3 s finds it.
    await clock.advance(700);
    await client.sent(eventId);
    await worker.stop(1000);
  });

  test("an attempt made while the database went away is recorded once it is back, and the event is not sent again", async () => {
    const { store, state } = storeWithOutages(inner, true);
    const agentId = await newAgent();
    const eventId = await queue(agentId);
    // The agent answers 204, but by then the database is gone for 600 ms.
    const client = scriptedClient(() => {
      state.down = true;
      clock.setTimeout(() => (state.down = false), 600);
      return outcome(204);
    });
    const recorded = counter("recorded attempts");
    const worker = createDeliveryWorker({
      store,
      clock,
      logger: silentLogger,
      client,
      ids,
      retryScheduleMs: [1000],
      leaseMs: 60_000,
      onAttempt: () => recorded.add(),
    });
    await worker.start();
    await client.waitFor(1);
    // Tries to record at once, after 250 ms and after 750 ms: the database is back at 600 ms.
    await clock.advance(749);
    assert.equal(recorded.count, 0);
    await clock.advance(1);
    await recorded.waitFor(1);
    const [event] = await inner.events.listForAgent(agentId, 1);
    assert.equal(event?.status, "delivered", "recorded as delivered well within the claim's lease");
    assert.equal(event?.sending, false);
    assert.deepEqual(
      (await inner.events.attempts([eventId])).map((a) => a.outcome),
      ["success"],
    );
    assert.equal(client.requests.length, 1, "sent once");
    await worker.stop(1000);
  });
});
