import type { Clock } from "../clock";
import type { Logger } from "../logger";
import type { Store } from "../store/types";

const DAY_MS = 24 * 60 * 60 * 1000;
/** Records are pruned within an hour of passing the retention: often enough, and a single indexed delete each time. */
export const AUDIT_PRUNE_EVERY_MS = 60 * 60 * 1000;

export interface AuditRetention {
  /** Resolves when the prune under way, if any, has finished. */
  idle(): Promise<void>;
  /** No prune starts after this; resolves once the one under way has finished. */
  stop(): Promise<void>;
}

/**
 * Deletes audit records and Tab's daily usage aggregates older than `retentionDays`, at start and then every hour, on a timer of its own: requests
 * never wait for it. Relays sharing a database each prune; deleting what another already deleted is harmless.
 */
export function startAuditRetention(deps: {
  store: Pick<Store, "audit" | "usage">;
  clock: Clock;
  logger: Logger;
  retentionDays: number;
  everyMs?: number;
}): AuditRetention {
  const everyMs = deps.everyMs ?? AUDIT_PRUNE_EVERY_MS;
  let stopped = false;
  let timer: unknown;
  let running = Promise.resolve();
  const prune = async () => {
    try {
      const before = new Date(deps.clock.now() - deps.retentionDays * DAY_MS).toISOString();
      const pruned = await deps.store.audit.prune(before);
      if (pruned > 0) deps.logger.info("audit records past the retention deleted", { records: pruned, before });
      // Usage is kept by whole days: a day goes once all of it is past the retention.
      const days = await deps.store.usage.prune(before.slice(0, 10));
      if (days > 0) deps.logger.info("usage aggregates past the retention deleted", { rows: days, before });
    } catch (error) {
      deps.logger.error("could not prune the audit log and usage aggregates", { error });
    } finally {
      if (!stopped) timer = deps.clock.setTimeout(run, everyMs);
    }
  };
  function run(): void {
    running = prune();
  }
  run();
  return {
    idle: () => running,
    async stop() {
      stopped = true;
      deps.clock.clearTimeout(timer);
      await running;
    },
  };
}
