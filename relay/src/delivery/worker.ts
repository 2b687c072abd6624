import { WEBHOOK_HEADERS, signWebhook } from "@tab-relay/shared";
import type { Clock } from "../clock";
import type { Logger } from "../logger";
import type { SortableIds } from "../store/sortableIds";
import type { DeliveryAttempt, DueEvent, Store, StoredEvent } from "../store/types";
import type { WebhookClient, WebhookOutcome } from "./webhookClient";

/** Answers that end a delivery at once: the spec's 410 (gone) and 413 (too large, so a retry cannot help). */
const FINAL_STATUSES: ReadonlySet<number> = new Set([410, 413]);
const JITTER = 0.2;
/** A Retry-After longer than this is not honoured beyond it: the agent may not hold events back for days. */
const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;
/** Even with nothing due the worker looks again this often, in case another process queued events. */
const IDLE_POLL_MS = 30_000;
const BATCH = 32;

export interface DeliveryWorkerOptions {
  store: Store;
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
}

export interface DeliveryWorker {
  /** Looks for due events now (called after a transaction queued some). */
  wake(): void;
  start(): void;
  /** Stops taking work; waits up to `graceMs` for attempts under way, then abandons them (they stay pending). */
  stop(graceMs: number): Promise<void>;
  /** Attempts under way now. */
  readonly inFlight: number;
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
  const random = options.random ?? Math.random;
  const inFlight = new Map<string, Promise<void>>();
  const perAgent = new Map<string, number>();
  let running = false;
  let stopped = true;
  let pumping = false;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let timerAt = Infinity;
  let pollTimer: NodeJS.Timeout | undefined;
  const iso = (ms: number) => new Date(ms).toISOString();

  function wake(): void {
    if (stopped) return;
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    void pump()
      .catch((error: unknown) => logger.error("delivery worker failed to read the outbox", { error }))
      .finally(() => {
        pumping = false;
        if (again) {
          again = false;
          wake();
        }
      });
  }

  async function pump(): Promise<void> {
    for (;;) {
      const room = maxInFlight - inFlight.size;
      if (stopped || room <= 0) return;
      const saturated = new Set([...perAgent].filter(([, n]) => n >= maxPerAgent).map(([agentId]) => agentId));
      // A small batch: most wakes start one or two attempts, and reading payloads that cannot start yet costs.
      const limit = Math.min(room, BATCH);
      const due = await store.events.due(iso(clock.now()), { limit, skipEvents: new Set(inFlight.keys()), skipAgents: saturated });
      let started = 0;
      let skipped = 0;
      for (const item of due) {
        if (stopped) return;
        const count = perAgent.get(item.event.agent_id) ?? 0;
        if (count >= maxPerAgent) {
          skipped++;
          continue;
        }
        perAgent.set(item.event.agent_id, count + 1);
        inFlight.set(item.event.id, attempt(item));
        started++;
      }
      // Look again when the batch was full or held events of agents that just filled up, as long as it moved.
      if (started === 0 || (skipped === 0 && due.length < limit)) break;
    }
  }

  /**
   * Arms the timer for the earliest known due time. The worker learns due times from the retries it schedules
   * itself; everything else that makes an event due (a new message, a redelivery, a resumed agent) wakes it
   * directly, so the database is asked only at start and on the idle poll.
   */
  function armTimer(dueMs: number): void {
    if (stopped || (timer !== undefined && timerAt <= dueMs)) return;
    clearTimeout(timer);
    timerAt = dueMs;
    timer = setTimeout(() => {
      timer = undefined;
      timerAt = Infinity;
      wake();
    }, Math.max(0, Math.min(IDLE_POLL_MS, dueMs - clock.now())));
    timer.unref();
  }

  async function poll(): Promise<void> {
    if (stopped) return;
    const next = await store.events.nextDueAt();
    const nextMs = next === undefined ? Infinity : Date.parse(next);
    // Something due now is in flight or waiting for its agent's share, and finishing attempts wake the worker.
    armTimer(nextMs > clock.now() ? nextMs : clock.now() + IDLE_POLL_MS);
    clearTimeout(pollTimer);
    // Another process sharing the database (or a clock step) can make events due without telling this one.
    pollTimer = setTimeout(() => void poll().then(wake, (error: unknown) => logger.error("delivery worker failed to poll", { error })), IDLE_POLL_MS);
    pollTimer.unref();
  }

  async function attempt(due: DueEvent): Promise<void> {
    const { event } = due;
    try {
      const startedMs = clock.now();
      const timestamp = Math.floor(startedMs / 1000);
      const signature = await signWebhook(due.signingSecret, event.id, timestamp, event.payload);
      const outcome = await client.send({
        url: due.webhookUrl,
        headers: { [WEBHOOK_HEADERS.id]: event.id, [WEBHOOK_HEADERS.timestamp]: String(timestamp), [WEBHOOK_HEADERS.signature]: signature },
        body: event.payload,
      });
      // An attempt cut short by shutdown is not the agent's failure: the event stays as it was and goes out after restart.
      if (stopped && !outcome.ok && outcome.status === undefined) return;
      await record(due, startedMs, outcome);
    } catch (error) {
      logger.error("delivery attempt failed", { event_id: event.id, agent_id: event.agent_id, error });
    } finally {
      inFlight.delete(event.id);
      const left = (perAgent.get(event.agent_id) ?? 1) - 1;
      if (left > 0) perAgent.set(event.agent_id, left);
      else perAgent.delete(event.agent_id);
      wake();
    }
  }

  async function record(due: DueEvent, startedMs: number, outcome: WebhookOutcome): Promise<void> {
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
      url: due.webhookUrl,
      started_at: iso(startedMs),
      duration_ms: Math.round(outcome.durationMs),
      status_code: outcome.status ?? null,
      error: outcome.error ?? null,
      response_excerpt: outcome.excerpt,
      outcome: outcome.ok ? "success" : "failed",
      next_attempt_at: next.next_attempt_at,
    };
    await store.transaction((tx) => tx.events.recordAttempt(attempt, { ...next, attempts: number }, iso(now)));
    if (next.next_attempt_at !== null) armTimer(Date.parse(next.next_attempt_at));
    const fields = {
      event_id: event.id,
      agent_id: event.agent_id,
      attempt: number,
      trigger: event.next_trigger,
      status: outcome.status,
      error: outcome.error,
      duration_ms: attempt.duration_ms,
      next_attempt_at: next.next_attempt_at ?? undefined,
    };
    if (outcome.ok) logger.info("webhook delivered", fields);
    else logger.warn("webhook attempt failed", fields);
  }

  function nextState(event: StoredEvent, number: number, outcome: WebhookOutcome, now: number) {
    const done = { next_attempt_at: null, next_trigger: event.next_trigger, retries: event.retries };
    if (outcome.ok) return { ...done, status: "delivered" as const };
    const exhausted = number > options.retryScheduleMs.length;
    if (event.retries === 0 || exhausted || (outcome.status !== undefined && FINAL_STATUSES.has(outcome.status))) {
      return { ...done, status: "failed" as const };
    }
    const scheduled = options.retryScheduleMs[number - 1] as number;
    let delay = scheduled * (1 + JITTER * (2 * random() - 1));
    if (outcome.retryAfterMs !== undefined) delay = Math.max(delay, Math.min(outcome.retryAfterMs, MAX_RETRY_AFTER_MS));
    return { status: "pending" as const, next_attempt_at: iso(now + Math.round(delay)), next_trigger: "scheduled" as const, retries: event.retries };
  }

  return {
    wake,
    start() {
      if (running) return;
      running = true;
      stopped = false;
      wake();
      void poll().catch((error: unknown) => logger.error("delivery worker failed to poll", { error }));
    },
    async stop(graceMs) {
      stopped = true;
      running = false;
      clearTimeout(timer);
      clearTimeout(pollTimer);
      const settled = Promise.allSettled([...inFlight.values()]);
      let graceTimer: NodeJS.Timeout | undefined;
      await Promise.race([settled, new Promise((resolve) => (graceTimer = setTimeout(resolve, graceMs)))]);
      clearTimeout(graceTimer);
      client.close();
      await settled;
    },
    get inFlight() {
      return inFlight.size;
    },
  };
}
