import { RelayError, WEBHOOK_HEADERS, sleepOn } from "@tab-relay/shared";
import type { Clock } from "../clock";
import type { Logger } from "../logger";
import type { SortableIds } from "../store/sortableIds";
import type { DeliveryAttempt, DueEvent, Store, StoredEvent } from "../store/types";
import type { AgentSockets } from "../live/agentSockets";
import { nextAttempt } from "./retryPolicy";
import { signDelivery } from "./signer";
import type { WebhookClient, WebhookOutcome } from "./webhookClient";

/** Even with nothing due the worker looks again this often, in case another process queued events. */
const IDLE_POLL_MS = 30_000;
const BATCH = 32;
const FAIR_PASS_MS = 20;
const NONE: ReadonlySet<string> = new Set();
/** After a failed read of the outbox (the database away), the next try waits this long, doubling up to the max. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5_000;
/** What the delivery log shows as the destination of an attempt over Socket Mode. */
export const SOCKET_URL = "socket";

export interface DeliveryWorkerOptions {
  store: Store;
  /** The outbox's due times, the retry timer, the idle poll and every other wait of the worker run on it. */
  clock: Clock;
  logger: Logger;
  client: WebhookClient;
  ids: SortableIds;
  retryScheduleMs: readonly number[];
  /** Attempts in flight at once, over all agents. */
  maxInFlight?: number;
  /** Attempts in flight at once to one agent, so a slow agent holds only its own share. */
  maxPerAgent?: number;
  random?: () => number;
  /** After every recorded attempt (the console's delivery log refreshes; /metrics counts outcomes). */
  onAttempt?: (event: StoredEvent, result: AttemptResult) => void;
  /** Socket Mode connections: an agent connected here gets its events over the socket instead of a POST. */
  sockets?: Pick<AgentSockets, "connected" | "connectedIds" | "deliver">;
  /** How long a claim on an event lasts: longer than any attempt can take. */
  leaseMs?: number;
}

/** What became of an attempt: `retry` failed and is scheduled again, `failed` gave up; and how it went out. */
export interface AttemptResult {
  outcome: "delivered" | "retry" | "failed";
  via: "webhook" | "socket";
}

export interface DeliveryWorker {
  /**
   * Looks for due events now (called after a transaction queued some): those of `agentIds` when the caller knows
   * whose they are, else the whole outbox.
   */
  wake(agentIds?: readonly string[]): void;
  /** Releases interrupted claims, then delivers whatever is due. */
  start(): Promise<void>;
  /** Stops taking work; waits up to `graceMs` for attempts under way, then abandons them (they stay pending). */
  stop(graceMs: number): Promise<void>;
  /** Attempts under way now. */
  readonly inFlight: number;
}

/** What the worker knows between passes over the outbox, beyond what the database holds. */
interface WorkerState {
  /** `stopped` before start() and after stop(): only a running worker reads the outbox, starts attempts or arms timers. */
  phase: "running" | "stopped";
  /** A pass over the outbox is under way; another waits for it to end. */
  pumping: boolean;
  /** A pass over every agent is wanted: new events, a retry falling due, a redelivery. */
  wantAll: boolean;
  /** Due events were left waiting for room overall (the batch or maxInFlight) when the outbox was last read. */
  backlog: boolean;
  /** When the last pass over everything ran while some agent was at its share (FAIR_PASS_MS apart). */
  lastFairPass: number;
  /** The wait before reading the outbox again after a read failed; doubles up to RETRY_MAX_MS. */
  readRetryMs: number;
}

/** The worker's timers on its clock; each is undefined while not armed. */
interface WorkerTimers {
  /** The earliest retry this worker scheduled itself. */
  due: { handle: unknown; at: number } | undefined;
  /** The idle poll for events another process queued. */
  poll: unknown;
  /** The next pass over everything while some agent is at its share. */
  fair: unknown;
  /** The next read of the outbox after a failed one. */
  readRetry: unknown;
}

/**
 * Delivers the outbox: every pending event that is due is signed afresh (new timestamp, same `webhook-id`) and
 * POSTed to its agent; the outcome is recorded as an attempt and the event is finished or rescheduled with
 * backoff and ±20% jitter. Deliveries run concurrently, capped per agent so a slow agent never delays others.
 * State lives only in the database, so a restarted relay resumes whatever was pending.
 */
export function createDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const { store, clock, logger, client } = options;
  const maxInFlight = options.maxInFlight ?? 256;
  const maxPerAgent = options.maxPerAgent ?? 8;
  const policy = { scheduleMs: options.retryScheduleMs, random: options.random ?? Math.random };
  const leaseMs = options.leaseMs ?? 120_000;
  // Sharing a database, another relay's claims lapse without a word; a look every tenth of a lease (one small query)
  // finds a dead relay's work soon after its lease.
  const idlePollMs = store.exclusive ? IDLE_POLL_MS : Math.min(IDLE_POLL_MS, Math.max(1000, leaseMs / 10));
  const inFlight = new Map<string, Promise<void>>();
  const perAgent = new Map<string, number>();
  const agentsWanted = new Set<string>();
  /**
   * Agents whose due events may be waiting for their share: each of their finishing attempts reads their outbox
   * again, until one read finds less than the share had room for. Kept per agent, so one burst to one agent does not
   * make every later attempt of every agent read the outbox once more.
   */
  const waiting = new Set<string>();
  const state: WorkerState = {
    phase: "stopped",
    pumping: false,
    wantAll: false,
    backlog: false,
    lastFairPass: -Infinity,
    readRetryMs: RETRY_FIRST_MS,
  };
  const timers: WorkerTimers = { due: undefined, poll: undefined, fair: undefined, readRetry: undefined };
  const stopped = () => state.phase === "stopped";
  const iso = (ms: number) => new Date(ms).toISOString();

  /**
   * Asks for a look at the whole outbox (a retry falling due, a redelivery), or at the outbox of a few agents when
   * new events are theirs alone. A pass over one agent reads only its due events along its index and starts at once;
   * a pass over everything waits up to FAIR_PASS_MS while some agent is at its share and scans that agent's waiting
   * events, so a post to one agent must not cost that, nor make another agent's new event wait for it.
   */
  function wake(agentIds?: readonly string[]): void {
    if (agentIds === undefined) state.wantAll = true;
    else for (const agentId of agentIds) agentsWanted.add(agentId);
    drain();
  }

  /**
   * Reads the outbox one pass at a time. A pass over one agent (after one of its attempts ends) is cheap; a pass
   * over everything that must skip agents at their share scans those agents' waiting events, so while some agent
   * is backed up such passes run at most every FAIR_PASS_MS instead of after every event.
   */
  function drain(): void {
    if (stopped() || state.pumping) return;
    const now = clock.now();
    let pass: Promise<void> | undefined;
    const [agentId] = agentsWanted;
    if (agentId !== undefined) {
      agentsWanted.delete(agentId);
      pass = pump(agentId);
    } else if (state.wantAll) {
      const blocked = [...perAgent.values()].some((n) => n >= maxPerAgent);
      if (blocked && now - state.lastFairPass < FAIR_PASS_MS) {
        clock.clearTimeout(timers.fair);
        timers.fair = clock.setTimeout(drain, FAIR_PASS_MS - (now - state.lastFairPass));
        return;
      }
      state.wantAll = false;
      if (blocked) state.lastFairPass = now;
      pass = pump(undefined);
    }
    if (pass === undefined) return;
    state.pumping = true;
    void pass
      .then(
        () => {
          state.readRetryMs = RETRY_FIRST_MS;
        },
        (error: unknown) => {
          // The pass was asked for because something is due; it must happen once the database answers again.
          logger.error("delivery worker failed to read the outbox", { error, retry_in_ms: state.readRetryMs });
          retryLater();
        },
      )
      .finally(() => {
        state.pumping = false;
        drain();
      });
  }

  async function pump(onlyAgent: string | undefined): Promise<void> {
    for (;;) {
      const room = maxInFlight - inFlight.size;
      if (stopped()) return;
      if (room <= 0) {
        state.backlog = true;
        return;
      }
      const saturated = new Set([...perAgent].filter(([, n]) => n >= maxPerAgent).map(([agentId]) => agentId));
      if (onlyAgent !== undefined && saturated.has(onlyAgent)) {
        // Woken for this agent while its share is taken: its next finishing attempt must look again.
        waiting.add(onlyAgent);
        return;
      }
      // A small batch: most passes start one or two attempts, and reading payloads that cannot start yet costs.
      const limit =
        onlyAgent === undefined ? Math.min(room, BATCH) : Math.min(room, maxPerAgent - (perAgent.get(onlyAgent) ?? 0));
      const now = clock.now();
      const socketAgents = options.sockets?.connectedIds() ?? NONE;
      const starting: DueEvent[] = [];
      let skipped = 0;
      let due: DueEvent[] = [];
      // The lease names this pass's claims: recording an attempt checks the event is still held by it.
      const lease = iso(now + leaseMs);
      try {
        // Reading and claiming is one transaction, so relays sharing a database never claim the same event.
        await store.transaction(async (tx) => {
          due = await tx.events.due(iso(now), {
            limit,
            skipAgents: saturated,
            socketAgents,
            ...(onlyAgent !== undefined ? { agentId: onlyAgent } : {}),
          });
          for (const item of due) {
            const count = perAgent.get(item.event.agent_id) ?? 0;
            // A redelivery asked for while the event's attempt is still under way waits for that attempt.
            if (count >= maxPerAgent || inFlight.has(item.event.id) || stopped()) {
              skipped++;
              waiting.add(item.event.agent_id);
              continue;
            }
            perAgent.set(item.event.agent_id, count + 1);
            starting.push(item);
          }
          // Claimed events are not due again until the claim lapses, so the next pass skips them without being told.
          await tx.events.claim(
            starting.map((item) => item.event.id),
            lease,
          );
        });
      } catch (error) {
        for (const item of starting) release(item.event.agent_id);
        throw error;
      }
      if (stopped()) {
        // Claimed but never started: let them go now rather than when the claim lapses.
        for (const item of starting) {
          release(item.event.agent_id);
          await giveBack(item.event, lease);
        }
        return;
      }
      for (const item of starting) inFlight.set(item.event.id, attempt(item, lease));
      const started = starting.length;
      // Due events left behind wait for a free share, so finishing attempts must look again.
      const left = skipped > 0 || due.length === limit;
      if (onlyAgent !== undefined) {
        // The agent's own read: more of its events can be due only if its share cut the read short.
        if (due.length === limit) waiting.add(onlyAgent);
        else if (skipped === 0) waiting.delete(onlyAgent);
      } else {
        // A pass over everything leaves agents at their share out of its read, so it cannot know that none of their
        // events is due: one just queued for such an agent must go when one of its attempts ends, not at the next poll.
        for (const agentId of saturated) waiting.add(agentId);
        state.backlog = due.length === limit;
      }
      // Look again at once when the batch was full or held events of agents that just filled up, as long as it moved.
      if (onlyAgent !== undefined || started === 0 || !left) break;
    }
  }

  /** A look at the whole outbox after a pause: it covers whatever the failed pass was for. */
  function retryLater(): void {
    if (stopped()) return;
    clock.clearTimeout(timers.readRetry);
    timers.readRetry = clock.setTimeout(() => {
      timers.readRetry = undefined;
      wake();
    }, state.readRetryMs);
    state.readRetryMs = Math.min(state.readRetryMs * 2, RETRY_MAX_MS);
  }

  /**
   * Arms the timer for the earliest known due time. The worker learns due times from the retries it schedules
   * itself; everything else that makes an event due (a new message, a redelivery, a resumed agent) wakes it
   * directly, so the database is asked only at start and on the idle poll.
   */
  function armTimer(dueMs: number): void {
    if (stopped() || (timers.due !== undefined && timers.due.at <= dueMs)) return;
    clock.clearTimeout(timers.due?.handle);
    const fire = (): void => {
      const due = timers.due as NonNullable<WorkerTimers["due"]>;
      // System timers run on a monotonic clock and can fire a millisecond before the wall clock reaches the due
      // time; reading the outbox then would miss the event and the poll below would look past it.
      const early = due.at - clock.now();
      if (early > 0) {
        due.handle = clock.setTimeout(fire, early);
        return;
      }
      timers.due = undefined;
      wake();
      // Only the earliest retry had the timer; the next one is read back from the outbox.
      void poll().catch((error: unknown) => logger.error("delivery worker failed to poll", { error }));
    };
    timers.due = { at: dueMs, handle: clock.setTimeout(fire, Math.max(0, Math.min(idlePollMs, dueMs - clock.now()))) };
  }

  async function poll(): Promise<void> {
    if (stopped()) return;
    clock.clearTimeout(timers.poll);
    // Another process sharing the database (or a clock step) can make events due without telling this one. Armed
    // before asking the database, so a poll that fails (the database away) does not end the polling.
    timers.poll = clock.setTimeout(
      () =>
        void poll().then(
          () => wake(),
          (error: unknown) => logger.error("delivery worker failed to poll", { error }),
        ),
      idlePollMs,
    );
    const now = clock.now();
    const next = await store.events.nextDueAt(iso(now));
    armTimer(next === undefined ? now + idlePollMs : Date.parse(next));
  }

  async function giveBack(event: StoredEvent, lease: string): Promise<void> {
    await store.events.unclaim(event.id, iso(clock.now()), lease);
  }

  function release(agentId: string): void {
    const left = (perAgent.get(agentId) ?? 1) - 1;
    if (left > 0) perAgent.set(agentId, left);
    else perAgent.delete(agentId);
  }

  async function attempt(due: DueEvent, lease: string): Promise<void> {
    const { event } = due;
    try {
      const startedMs = clock.now();
      const timestamp = Math.floor(startedMs / 1000);
      const signature = signDelivery(due.signingSecret, event.id, timestamp, event.payload);
      const headers = {
        [WEBHOOK_HEADERS.id]: event.id,
        [WEBHOOK_HEADERS.timestamp]: String(timestamp),
        [WEBHOOK_HEADERS.signature]: signature,
      };
      // A connected socket wins over the webhook URL: the agent is there now, and sockets need no public address.
      const viaSocket = options.sockets?.connected(event.agent_id) === true;
      if (!viaSocket && due.webhookUrl === null) {
        // The agent's only socket went away since the event was read: not an attempt, so no retry is spent. The
        // claim is dropped and the event waits for the agent's next connection.
        const update = {
          status: "pending" as const,
          next_attempt_at: iso(clock.now()),
          next_trigger: event.next_trigger,
          retries: event.retries,
        };
        await store.events.schedule(event.id, update, iso(clock.now()), lease);
        return;
      }
      const outcome = viaSocket
        ? await (options.sockets as NonNullable<DeliveryWorkerOptions["sockets"]>).deliver(event.agent_id, {
            id: event.id,
            headers,
            body: event.payload,
          })
        : await client.send({ url: due.webhookUrl as string, headers, body: event.payload });
      // An attempt cut short by shutdown is not the agent's failure: no attempt is recorded, and the claim is given
      // back so another relay (or this one, restarted) sends the event at once.
      if (stopped() && !outcome.ok && outcome.status === undefined) return await giveBack(event, lease);
      await recordWhileHeld(due, lease, startedMs, outcome, viaSocket ? SOCKET_URL : (due.webhookUrl ?? SOCKET_URL));
    } catch (error) {
      logger.error("delivery attempt failed", { event_id: event.id, agent_id: event.agent_id, error });
    } finally {
      inFlight.delete(event.id);
      release(event.agent_id);
      // Without a backlog nothing is waiting for this share: new events, redeliveries and retries wake the worker themselves.
      if (state.backlog || waiting.has(event.agent_id)) {
        agentsWanted.add(event.agent_id);
        // Room freed overall may let another agent's waiting events go too.
        if (state.backlog && inFlight.size === maxInFlight - 1) state.wantAll = true;
        drain();
      }
    }
  }

  /**
   * Records the attempt, retrying while the database is unavailable and the claim holds: the agent has its answer
   * (perhaps a success), and recorded in time it is not sent again. Past the lease the event is due again and is
   * sent again (delivery is at least once).
   */
  async function recordWhileHeld(
    due: DueEvent,
    lease: string,
    startedMs: number,
    outcome: WebhookOutcome,
    url: string,
  ): Promise<void> {
    let waitMs = RETRY_FIRST_MS;
    for (;;) {
      try {
        return await record(due, lease, startedMs, outcome, url);
      } catch (error) {
        const unavailable = error instanceof RelayError && error.code === "SERVICE_UNAVAILABLE";
        if (!unavailable || stopped() || clock.now() + waitMs >= Date.parse(lease)) throw error;
        logger.warn("could not record a delivery attempt; retrying", {
          event_id: due.event.id,
          error,
          retry_in_ms: waitMs,
        });
        await sleepOn(clock, waitMs);
        waitMs = Math.min(waitMs * 2, RETRY_MAX_MS);
      }
    }
  }

  async function record(
    due: DueEvent,
    lease: string,
    startedMs: number,
    outcome: WebhookOutcome,
    url: string,
  ): Promise<void> {
    const { event } = due;
    const number = event.attempts + 1;
    const now = clock.now();
    const next = nextState(event, number, outcome, now);
    const attempt: DeliveryAttempt = {
      id: options.ids("atm"),
      event_id: event.id,
      agent_id: event.agent_id,
      attempt: number,
      trigger: event.next_trigger,
      url,
      started_at: iso(startedMs),
      duration_ms: Math.round(outcome.durationMs),
      status_code: outcome.status ?? null,
      error: outcome.error ?? null,
      response_excerpt: outcome.excerpt,
      outcome: outcome.ok ? "success" : "failed",
      next_attempt_at: next.next_attempt_at,
    };
    const held = await store.transaction((tx) =>
      tx.events.recordAttempt(attempt, { ...next, attempts: number }, iso(now), lease),
    );
    if (held && next.next_attempt_at !== null) armTimer(Date.parse(next.next_attempt_at));
    options.onAttempt?.(event, {
      outcome: next.status === "pending" ? "retry" : next.status,
      via: url === SOCKET_URL ? "socket" : "webhook",
    });
    const fields = {
      event_id: event.id,
      agent_id: event.agent_id,
      attempt: number,
      trigger: event.next_trigger,
      status: outcome.status,
      error: outcome.error,
      duration_ms: attempt.duration_ms,
      next_attempt_at: held ? (next.next_attempt_at ?? undefined) : undefined,
      // The event was cancelled, redelivered or (its claim lapsed) taken over by another relay while this attempt ran.
      claim_ended: held ? undefined : true,
    };
    if (outcome.ok) logger.info("webhook delivered", fields);
    else logger.warn("webhook attempt failed", fields);
  }

  function nextState(event: StoredEvent, number: number, outcome: WebhookOutcome, now: number) {
    const next = nextAttempt({ number, retries: event.retries, outcome }, policy);
    if (next.kind === "retry")
      return {
        status: "pending" as const,
        next_attempt_at: iso(now + next.delayMs),
        next_trigger: "scheduled" as const,
        retries: event.retries,
      };
    return { status: next.kind, next_attempt_at: null, next_trigger: event.next_trigger, retries: event.retries };
  }

  return {
    wake,
    async start() {
      if (state.phase === "running") return;
      state.phase = "running";
      // Alone on its database, a starting relay knows claims left behind (a crash, SIGKILL) are void: those events go
      // out now. Sharing one, claims of others may be live; a dead relay's lapse after the lease instead.
      if (store.exclusive) {
        const released = await store.events.releaseClaims(iso(clock.now()));
        if (released > 0) logger.info("delivery worker resumed interrupted attempts", { events: released });
      }
      wake();
      await poll();
    },
    async stop(graceMs) {
      state.phase = "stopped";
      for (const handle of [timers.due?.handle, timers.poll, timers.fair, timers.readRetry]) clock.clearTimeout(handle);
      timers.due = undefined;
      const settled = Promise.allSettled([...inFlight.values()]);
      let graceTimer: unknown;
      await Promise.race([
        settled,
        new Promise((resolve) => (graceTimer = clock.setTimeout(() => resolve(undefined), graceMs))),
      ]);
      clock.clearTimeout(graceTimer);
      client.close();
      await settled;
    },
    get inFlight() {
      return inFlight.size;
    },
  };
}
