import { sql } from "kysely";
import { USAGE_COLUMNS } from "../../usage/columns";
import type { Db } from "../schema";
import type { Store, UsageSummary } from "../types";

/** Rows per INSERT: 35 parameters each, well inside SQLite's and PostgreSQL's limits. */
const CHUNK = 200;

const GROUP_COLUMN = { day: "day", user: "user_id", language: "language", model: "model" } as const;

export function usageStore(db: Db): Store["usage"] {
  // Each counter becomes the stored value plus the new row's; qualified, as PostgreSQL calls a bare name ambiguous.
  const merged = Object.fromEntries(
    USAGE_COLUMNS.map((column) => [
      column,
      sql<number>`${sql.ref(`tab_usage.${column}`)} + ${sql.ref(`excluded.${column}`)}`,
    ]),
  );
  return {
    async add(rows) {
      for (let i = 0; i < rows.length; i += CHUNK) {
        await db
          .insertInto("tab_usage")
          .values(rows.slice(i, i + CHUNK))
          .onConflict((oc) => oc.columns(["workspace_id", "day", "user_id", "language", "model"]).doUpdateSet(merged))
          .execute();
      }
    },
    async summarize(workspaceId, query) {
      const key = query.groupBy === "all" ? sql<string>`''` : sql<string>`${sql.ref(GROUP_COLUMN[query.groupBy])}`;
      let q = db
        .selectFrom("tab_usage")
        .select(key.as("key"))
        .select(sql<number>`count(distinct user_id)`.as("users"))
        .select(USAGE_COLUMNS.map((column) => sql<number>`sum(${sql.ref(column)})`.as(column)))
        .where("workspace_id", "=", workspaceId)
        .where("day", ">=", query.since)
        .where("day", "<", query.until);
      if (query.userId !== undefined) q = q.where("user_id", "=", query.userId);
      if (query.groupBy !== "all") q = q.groupBy(GROUP_COLUMN[query.groupBy]).orderBy(GROUP_COLUMN[query.groupBy]);
      const rows = (await q.execute()) as unknown as Record<string, unknown>[];
      return rows
        .filter((row) => query.groupBy !== "all" || Number(row.users) > 0)
        .map((row) => {
          // PostgreSQL answers sums of bigints as text.
          const summary = { key: String(row.key), users: Number(row.users) } as UsageSummary;
          for (const column of USAGE_COLUMNS) summary[column] = Number(row[column] ?? 0);
          return summary;
        });
    },
    async prune(beforeDay) {
      const result = await db.deleteFrom("tab_usage").where("day", "<", beforeDay).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
