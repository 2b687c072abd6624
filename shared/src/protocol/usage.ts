import { z } from "zod";

/** The most events one POST /api/v1/tab/events may carry; a client with more sends several batches. */
export const TAB_USAGE_MAX_BATCH = 100;

/**
 * Bounds on every number of an event: a suggestion is at most a few hundred tokens, so anything past these is a
 * broken or hostile client, and the aggregates' sums stay far inside a 64-bit integer.
 */
export const TAB_USAGE_LIMITS = {
  maxChars: 100_000,
  maxLines: 10_000,
  maxTimeToGhostMs: 600_000,
} as const;

/**
 * What was shown: a completion's ghost text at the cursor (the default, so extensions older than next edits send
 * nothing new), or a next edit proposed elsewhere near the cursor.
 */
export const TabUsageKind = z.enum(["completion", "next_edit"]);
export type TabUsageKind = z.infer<typeof TabUsageKind>;

/** What became of one suggestion the editor showed. */
export const TabUsageOutcome = z.enum(["accepted", "accepted_partial", "dismissed", "typed_over"]);
export type TabUsageOutcome = z.infer<typeof TabUsageOutcome>;

const count = (max: number) => z.number().int().min(0).max(max);

/**
 * One shown suggestion's fate, sent by the extension in a {@link TabUsageBatch}. It carries sizes and a time, never
 * code text: the relay aggregates it per day, user, language and model (docs/api.md#usage-insights).
 */
export const TabUsageEvent = z
  .object({
    /** The `id` of the relay's completion (or next-edit) answer that produced the suggestion. */
    id: z.string().min(1).max(128),
    /** Absent means `completion`. A next edit's chars and lines are those of its new text, its time to being drawn. */
    kind: TabUsageKind.optional(),
    outcome: TabUsageOutcome,
    shown_chars: count(TAB_USAGE_LIMITS.maxChars),
    accepted_chars: count(TAB_USAGE_LIMITS.maxChars),
    shown_lines: count(TAB_USAGE_LIMITS.maxLines),
    accepted_lines: count(TAB_USAGE_LIMITS.maxLines),
    /** From the pause in typing to the ghost text appearing. */
    time_to_ghost_ms: count(TAB_USAGE_LIMITS.maxTimeToGhostMs),
    language: z.string().min(1).max(128).optional(),
  })
  // Unknown fields are refused rather than dropped, so a client cannot send code text the relay would then ignore.
  .strict()
  .superRefine((event, issues) => {
    if (event.accepted_chars > event.shown_chars) {
      issues.addIssue({
        code: "custom",
        path: ["accepted_chars"],
        message: "accepted_chars cannot exceed shown_chars",
      });
    }
    if (event.accepted_lines > event.shown_lines) {
      issues.addIssue({
        code: "custom",
        path: ["accepted_lines"],
        message: "accepted_lines cannot exceed shown_lines",
      });
    }
  });
export type TabUsageEvent = z.infer<typeof TabUsageEvent>;

/** Body of POST /api/v1/tab/events. */
export const TabUsageBatch = z.object({
  events: z.array(TabUsageEvent).min(1).max(TAB_USAGE_MAX_BATCH),
});
export type TabUsageBatch = z.infer<typeof TabUsageBatch>;
