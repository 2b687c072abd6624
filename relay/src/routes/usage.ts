import { type Api, RelayError, TAB_USAGE_LIMITS, TabUsageBatch } from "@tab-relay/shared";
import { Router } from "express";
import { z } from "zod";
import { requireScope } from "../http/authenticate";
import { parseWith } from "../http/body";
import type { Caller } from "../http/context";
import { named } from "../http/requestContext";
import type { Clock } from "../clock";
import type { Store, UsageSummary } from "../store/types";
import { emptyCounts, ghostPercentile } from "../usage/columns";
import type { UsageRecorder } from "../usage/recorder";

const DAY_MS = 24 * 60 * 60 * 1000;
/** Without `since`, a report covers the four weeks up to today. */
export const USAGE_DEFAULT_DAYS = 28;
/** The longest range one report may cover: two years, past any sensible retention. */
export const USAGE_MAX_DAYS = 731;

// Bounded so every day, and the defaults and weeks computed from it, stays a four-digit year.
const Day = z.iso
  .date({ error: "must be a date, YYYY-MM-DD" })
  .refine((day) => day >= "1970-01-01" && day < "3000-01-01", "must be a date from 1970 to 2999");
export const UsageQuery = z.object({
  since: Day.optional(),
  until: Day.optional(),
  group_by: z.enum(["day", "user", "language", "model"]).default("day"),
});

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function figures(sum: UsageSummary): Api.TabUsageFigures {
  const acceptances = sum.accepted + sum.accepted_partial;
  return {
    requests: sum.requests,
    cache_hits: sum.cache_hits,
    errors: sum.errors,
    rate_limited: sum.rate_limited,
    suggestions_shown: sum.shown,
    acceptances,
    partial_acceptances: sum.accepted_partial,
    dismissals: sum.dismissed,
    typed_over: sum.typed_over,
    acceptance_rate: sum.shown === 0 ? null : acceptances / sum.shown,
    chars_shown: sum.shown_chars,
    chars_accepted: sum.accepted_chars,
    lines_shown: sum.shown_lines,
    lines_accepted: sum.accepted_lines,
    time_to_ghost_ms: {
      p50: ghostPercentile(sum, 0.5, TAB_USAGE_LIMITS.maxTimeToGhostMs),
      p90: ghostPercentile(sum, 0.9, TAB_USAGE_LIMITS.maxTimeToGhostMs),
    },
    active_users: sum.users,
    next_edits: {
      shown: sum.next_edits_shown,
      accepted: sum.next_edits_accepted,
      dismissed: sum.next_edits_dismissed,
      typed_over: sum.next_edits_typed_over,
      acceptance_rate: sum.next_edits_shown === 0 ? null : sum.next_edits_accepted / sum.next_edits_shown,
      chars_shown: sum.next_edit_chars_shown,
      chars_accepted: sum.next_edit_chars_accepted,
      mean_time_to_show_ms:
        sum.next_edits_shown === 0 ? null : Math.round(sum.next_edit_show_ms / sum.next_edits_shown),
    },
  };
}

/** Whether the caller reads the whole workspace's usage: an owner or admin whose key may manage people. */
function seesWorkspace(caller: Caller): boolean {
  return caller.scopes.has("users.write") && (caller.user.role === "owner" || caller.user.role === "admin");
}

/**
 * `POST /tab/events`, the extension's reports of what became of its suggestions, and `GET /tab/usage`, the daily
 * aggregates they and the relay's own completion counts build (docs/api.md#usage-insights).
 */
export function createUsageRouter(deps: {
  store: Store;
  clock: Clock;
  usage: Pick<UsageRecorder, "events" | "flush">;
}): Router {
  const router = Router();

  // Counted in memory and answered at once; the counts reach the database with the next flush.
  router.post("/tab/events", named("/tab/events"), requireScope("tab.complete"), (req, res) => {
    const caller = req.caller as Caller;
    const batch = parseWith(TabUsageBatch, req.body);
    const counted = deps.usage.events({ workspaceId: caller.workspace.id, userId: caller.user.id }, batch.events);
    const data: Api.TabUsageAccepted = { counted };
    res.status(202).json({ data });
  });

  router.get("/tab/usage", named("/tab/usage"), async (req, res) => {
    const caller = req.caller as Caller;
    const workspace = seesWorkspace(caller);
    if (!workspace && !caller.scopes.has("tab.complete"))
      throw new RelayError("FORBIDDEN", "This API key lacks the scope tab.complete");
    const query = parseWith(UsageQuery, req.query, "query");
    const until = query.until ?? dayOf(deps.clock.now() + DAY_MS);
    const since = query.since ?? dayOf(Date.parse(until) - USAGE_DEFAULT_DAYS * DAY_MS);
    if (since >= until) throw new RelayError("VALIDATION_ERROR", "query.since: must be a day before until");
    if (Date.parse(until) - Date.parse(since) > USAGE_MAX_DAYS * DAY_MS)
      throw new RelayError("VALIDATION_ERROR", `query.since: a report covers at most ${USAGE_MAX_DAYS} days`);
    const range = { since, until, userId: workspace ? undefined : caller.user.id };
    // This relay's counts since its last flush are stored first, so a report includes everything sent to it; other
    // relays sharing the database add theirs within their flush period.
    await deps.usage.flush();
    const [rows, [total], users] = await Promise.all([
      deps.store.usage.summarize(caller.workspace.id, { ...range, groupBy: query.group_by }),
      deps.store.usage.summarize(caller.workspace.id, { ...range, groupBy: "all" }),
      query.group_by === "user" ? deps.store.users.list(caller.workspace.id) : Promise.resolve([]),
    ]);
    const names = new Map(users.map((user) => [user.id, user.name]));
    const data: Api.TabUsageReport = {
      since,
      until,
      group_by: query.group_by,
      scope: workspace ? "workspace" : "self",
      rows: rows.map((row) => ({
        key: row.key,
        ...(query.group_by === "user" ? { name: names.get(row.key) ?? null } : {}),
        ...figures(row),
      })),
      totals: figures(total ?? emptySummary()),
    };
    res.json({ data });
  });
  return router;
}

function emptySummary(): UsageSummary {
  return { key: "", users: 0, ...emptyCounts() };
}
