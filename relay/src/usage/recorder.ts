import { LRUCache } from "lru-cache";
import { TAB_USAGE_LIMITS, type TabUsageEvent } from "@tab-relay/shared";
import type { Clock } from "../clock";
import type { Logger } from "../logger";
import type { Metrics } from "../metrics";
import type { Store, UsageRow } from "../store/types";
import { type UsageCounts, emptyCounts, ghostColumn } from "./columns";

const DAY_MS = 24 * 60 * 60 * 1000;
/** Counts reach the store this often, and once more when the relay closes. */
export const USAGE_FLUSH_EVERY_MS = 10_000;
/**
 * Completions remembered for the events that follow them (the extension reports every 30 s): enough for hundreds of
 * busy people, a few megabytes at most.
 */
export const REMEMBERED_COMPLETIONS = 50_000;
/**
 * Distinct languages a workspace's counts name before the rest count as `other`: clients name them, so their number
 * is capped, per workspace so that one workspace's made-up names never turn another's `python` into `other`.
 */
export const MAX_LANGUAGES = 200;
/**
 * Distinct `language` labels of the process-wide Prometheus series. They are the operator's, not a workspace's
 * insights: Prometheus needs one bound for the process, whatever the number of workspaces.
 */
export const MAX_METRIC_LANGUAGES = 200;
export const UNKNOWN = "unknown";

/** Who a count belongs to: the authenticated caller. */
export interface UsageSubject {
  workspaceId: string;
  userId: string;
}

export interface UsageRecorder {
  /** A completion request finished (answered, cached or failed); `id` is its answer's, for the events after it. */
  completion(
    subject: UsageSubject,
    request: { id: string; language: string | undefined; model: string; cacheHit: boolean; failed: boolean },
  ): void;
  /** A completion request was refused with 429 before its body was read. */
  rateLimited(subject: UsageSubject): void;
  /** The caller's reports; every event counts against the caller. Answers how many were counted. */
  events(subject: UsageSubject, events: readonly TabUsageEvent[]): number;
  /** Writes what is counted so far; resolves when it is stored (or, on failure, kept for the next flush). */
  flush(): Promise<void>;
  /** Resolves when the write under way, if any, has finished. */
  idle(): Promise<void>;
  /** No flush is scheduled after this; writes what is left. */
  stop(): Promise<void>;
}

interface Remembered extends UsageSubject {
  language: string;
  model: string;
}

const LANGUAGE = /^[a-z0-9][a-z0-9+#._-]{0,63}$/;

/**
 * Counts usage in memory, per workspace × day × user × language × model, and adds the counts to the store on a timer
 * of its own: a completion or a report only touches a map, never the database.
 */
export function createUsageRecorder(deps: {
  store: Pick<Store, "usage">;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  everyMs?: number;
}): UsageRecorder {
  const everyMs = deps.everyMs ?? USAGE_FLUSH_EVERY_MS;
  let pending = new Map<string, UsageRow>();
  const remembered = new LRUCache<string, Remembered>({ max: REMEMBERED_COMPLETIONS });
  /** Each workspace's languages so far (at most MAX_LANGUAGES each), and the metrics' own (at most MAX_METRIC_LANGUAGES). */
  const languages = new Map<string, Set<string>>();
  const metricLanguages = new Set<string>();
  let today = { start: Number.NEGATIVE_INFINITY, day: "" };
  let stopped = false;
  let timer: unknown;
  let running: Promise<void> = Promise.resolve();

  const languageOf = (workspaceId: string, raw: string | undefined): string => {
    if (raw === undefined) return UNKNOWN;
    const language = raw.trim().toLowerCase();
    if (!LANGUAGE.test(language)) return "other";
    let known = languages.get(workspaceId);
    if (known === undefined) languages.set(workspaceId, (known = new Set()));
    if (known.has(language)) return language;
    if (known.size >= MAX_LANGUAGES) return "other";
    known.add(language);
    return language;
  };
  const metricLanguageOf = (language: string): string => {
    if (metricLanguages.has(language)) return language;
    if (metricLanguages.size >= MAX_METRIC_LANGUAGES) return "other";
    metricLanguages.add(language);
    return language;
  };

  const rowOf = (subject: UsageSubject, language: string, model: string): UsageCounts => {
    const now = deps.clock.now();
    // The day's text is made once a day, not on every count.
    if (now < today.start || now >= today.start + DAY_MS) {
      const start = now - (now % DAY_MS);
      today = { start, day: new Date(start).toISOString().slice(0, 10) };
    }
    const { day } = today;
    const key = `${subject.workspaceId}\u0001${day}\u0001${subject.userId}\u0001${language}\u0001${model}`;
    let row = pending.get(key);
    if (row === undefined) {
      row = { workspace_id: subject.workspaceId, day, user_id: subject.userId, language, model, ...emptyCounts() };
      pending.set(key, row);
    }
    return row;
  };

  const write = async () => {
    if (pending.size === 0) return;
    const rows = [...pending.values()];
    pending = new Map();
    try {
      await deps.store.usage.add(rows);
    } catch (error) {
      deps.logger.error("could not store usage counts; kept for the next flush", { error, rows: rows.length });
      // Counted since the swap and the rows that failed share keys: merge rather than overwrite.
      for (const row of rows) {
        const into = rowOf({ workspaceId: row.workspace_id, userId: row.user_id }, row.language, row.model);
        for (const column of Object.keys(emptyCounts()) as (keyof UsageCounts)[]) into[column] += row[column];
      }
    }
  };
  const schedule = () => {
    if (!stopped) timer = deps.clock.setTimeout(run, everyMs);
  };
  function run(): void {
    running = running.then(write).finally(schedule);
  }
  schedule();

  return {
    completion(subject, request) {
      const language = languageOf(subject.workspaceId, request.language);
      remembered.set(request.id, { ...subject, language, model: request.model });
      const row = rowOf(subject, language, request.model);
      row.requests++;
      if (request.cacheHit) row.cache_hits++;
      if (request.failed) row.errors++;
    },
    rateLimited(subject) {
      const row = rowOf(subject, UNKNOWN, UNKNOWN);
      row.requests++;
      row.rate_limited++;
    },
    events(subject, events) {
      for (const event of events) {
        const completion = remembered.get(event.id);
        // Only the caller's own completion lends its model (and language): a report never reaches another's counts.
        const own =
          completion !== undefined &&
          completion.workspaceId === subject.workspaceId &&
          completion.userId === subject.userId
            ? completion
            : undefined;
        const language =
          event.language !== undefined ? languageOf(subject.workspaceId, event.language) : (own?.language ?? UNKNOWN);
        const row = rowOf(subject, language, own?.model ?? UNKNOWN);
        if (event.kind === "next_edit") {
          // A next edit is not a suggestion at the cursor: its own counters, so completion rates stay what they were.
          row.next_edits_shown++;
          row.next_edit_chars_shown += event.shown_chars;
          row.next_edit_show_ms += Math.min(event.time_to_ghost_ms, TAB_USAGE_LIMITS.maxTimeToGhostMs);
          if (event.outcome === "accepted" || event.outcome === "accepted_partial") {
            row.next_edits_accepted++;
            row.next_edit_chars_accepted += event.accepted_chars;
          } else if (event.outcome === "typed_over") row.next_edits_typed_over++;
          else row.next_edits_dismissed++;
          continue;
        }
        row.shown++;
        row.shown_chars += event.shown_chars;
        row.shown_lines += event.shown_lines;
        row[event.outcome]++;
        if (event.outcome === "accepted" || event.outcome === "accepted_partial") {
          row.accepted_chars += event.accepted_chars;
          row.accepted_lines += event.accepted_lines;
        }
        row[ghostColumn(Math.min(event.time_to_ghost_ms, TAB_USAGE_LIMITS.maxTimeToGhostMs))]++;
        const labels = { language: metricLanguageOf(language) };
        deps.metrics.tabSuggestionsShown.inc(labels);
        if (event.outcome === "accepted" || event.outcome === "accepted_partial") {
          deps.metrics.tabSuggestionsAccepted.inc(labels);
          deps.metrics.tabCharactersAccepted.inc(labels, event.accepted_chars);
        }
      }
      return events.length;
    },
    flush() {
      running = running.then(write);
      return running;
    },
    idle: () => running,
    async stop() {
      stopped = true;
      deps.clock.clearTimeout(timer);
      running = running.then(write);
      await running;
    },
  };
}
