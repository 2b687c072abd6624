import { TAB_USAGE_MAX_BATCH, TabUsageEvent } from "@tab-relay/shared";
import { sendUsageBatch } from "./request";
import type { Settings } from "./settings";
import type { Clock, FetchLike, Logger } from "./types";

export interface UsageReporterDeps {
  readonly clock: Clock;
  readonly fetch: FetchLike;
  readonly logger: Logger;
  readonly getSettings: () => Settings;
  readonly getApiKey: () => Promise<string | undefined>;
  /** False when VS Code's `telemetry.telemetryLevel` is `off`, read by the adapter. */
  readonly telemetryAllowed: () => boolean;
}

export interface UsageReporterOptions {
  readonly intervalMs?: number;
  /** Events kept while the relay cannot be reached; the oldest are dropped past this. */
  readonly maxQueued?: number;
  readonly maxBatch?: number;
  readonly timeoutMs?: number;
}

export interface UsageReporterStats {
  sent: number;
  dropped: number;
  queued: number;
}

/**
 * Sends usage events to the relay in batches, about every 30 seconds and on flush. It runs beside completions and
 * never in their way: `record` only queues, at most one batch is in flight, and a relay that cannot be reached
 * costs a bounded queue whose oldest events are dropped.
 */
export class UsageReporter {
  private readonly queue: TabUsageEvent[] = [];
  private readonly intervalMs: number;
  private readonly maxQueued: number;
  private readonly maxBatch: number;
  private readonly timeoutMs: number;
  private timer: unknown;
  private notBefore = 0;
  private sending: Promise<void> | undefined;
  private readonly counters = { sent: 0, dropped: 0 };

  constructor(
    private readonly deps: UsageReporterDeps,
    options: UsageReporterOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 30_000;
    this.maxQueued = options.maxQueued ?? 10 * TAB_USAGE_MAX_BATCH;
    this.maxBatch = Math.min(options.maxBatch ?? TAB_USAGE_MAX_BATCH, TAB_USAGE_MAX_BATCH);
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** Off when `tabRelay.reportUsage` is false or VS Code's telemetry is off. */
  get enabled(): boolean {
    return this.deps.getSettings().reportUsage && this.deps.telemetryAllowed();
  }

  get stats(): Readonly<UsageReporterStats> {
    return { ...this.counters, queued: this.queue.length };
  }

  record(event: TabUsageEvent): void {
    if (!this.enabled) return this.clear();
    // A malformed event would make the relay refuse the whole batch.
    if (!TabUsageEvent.safeParse(event).success) return this.deps.logger.warn(`usage: not reporting a malformed event`);
    this.queue.push(event);
    const excess = this.queue.length - this.maxQueued;
    if (excess > 0) {
      this.queue.splice(0, excess);
      this.counters.dropped += excess;
    }
    this.schedule(this.intervalMs);
  }

  /** Sends everything queued now, unless the relay asked to wait (on deactivate). */
  async flush(): Promise<void> {
    this.cancelTimer();
    await this.sending;
    await this.sendNow();
  }

  dispose(): void {
    this.cancelTimer();
  }

  private schedule(ms: number): void {
    if (this.timer !== undefined) return;
    this.timer = this.deps.clock.setTimeout(() => {
      this.timer = undefined;
      void this.tick();
    }, ms);
  }

  private cancelTimer(): void {
    if (this.timer !== undefined) this.deps.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async tick(): Promise<void> {
    if (this.sending === undefined) await this.sendNow();
  }

  private async sendNow(): Promise<void> {
    this.sending = this.send();
    await this.sending;
    this.sending = undefined;
    if (this.queue.length > 0) this.schedule(Math.max(this.intervalMs, this.notBefore - this.deps.clock.now()));
  }

  private async send(): Promise<void> {
    if (!this.enabled) return this.clear();
    if (this.deps.clock.now() < this.notBefore) return;
    const settings = this.deps.getSettings();
    const apiKey = await this.deps.getApiKey();
    if (apiKey === undefined || apiKey === "" || settings.relayUrl === "") return;
    while (this.queue.length > 0) {
      const events = this.queue.slice(0, this.maxBatch);
      const outcome = await sendUsageBatch(this.deps, {
        relayUrl: settings.relayUrl,
        apiKey,
        batch: { events },
        timeoutMs: this.timeoutMs,
      });
      if (outcome.kind === "ok") {
        this.take(events);
        this.counters.sent += events.length;
        continue;
      }
      if (outcome.kind === "unreachable") {
        this.deps.logger.info(`usage: relay unreachable (${outcome.message}); ${this.queue.length} events kept`);
        return;
      }
      const retryable = outcome.status === undefined || outcome.status === 429 || outcome.status >= 500;
      if (retryable) {
        if (outcome.retryAfterMs !== undefined) this.notBefore = this.deps.clock.now() + outcome.retryAfterMs;
        this.deps.logger.info(`usage: ${outcome.status ?? ""} ${outcome.code}; ${this.queue.length} events kept`);
        return;
      }
      // The relay refused these events for good (an old relay without the endpoint, a revoked key): drop them.
      this.take(events);
      this.counters.dropped += events.length;
      this.deps.logger.warn(`usage: ${outcome.status} ${outcome.code}: ${outcome.message}; ${events.length} dropped`);
    }
  }

  /** Removes a sent batch from the front; events dropped meanwhile from the front are already gone. */
  private take(events: readonly TabUsageEvent[]): void {
    const first = this.queue.indexOf(events[0] as TabUsageEvent);
    if (first === -1) return;
    let count = 0;
    while (count < events.length && this.queue[first + count] === events[count]) count++;
    this.queue.splice(first, count);
  }

  private clear(): void {
    this.queue.length = 0;
    this.cancelTimer();
  }
}
