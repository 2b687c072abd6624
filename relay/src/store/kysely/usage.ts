import { type RawBuilder, sql } from "kysely";
import { USAGE_COLUMNS, type UsageCounts, emptyCounts } from "../../usage/columns";
import type { Db } from "../schema";
import type { Store, UsageGroupBy, UsageRow, UsageSummary } from "../types";

/** Rows per INSERT: at most 42 parameters each, well inside SQLite's and PostgreSQL's limits. */
const CHUNK = 200;
const DAY_MS = 24 * 60 * 60 * 1000;

const GROUP_COLUMN = { day: "day", user: "user_id", language: "language", model: "model" } as const;

/** The Monday (UTC) that starts the week of `day`, as YYYY-MM-DD. */
export function weekOf(day: string): string {
  const ms = Date.parse(day);
  return new Date(ms - ((new Date(ms).getUTCDay() + 6) % 7) * DAY_MS).toISOString().slice(0, 10);
}
const addDays = (day: string, days: number) => new Date(Date.parse(day) + days * DAY_MS).toISOString().slice(0, 10);

function merge(into: UsageCounts, row: UsageCounts): void {
  for (const column of USAGE_COLUMNS) into[column] += row[column];
}

/** The rows summed per distinct value of their `keys` columns. */
function rollUp<R extends UsageCounts, K extends keyof R & string>(
  rows: readonly R[],
  keys: readonly K[],
): (Pick<R, K> & UsageCounts)[] {
  const groups = new Map<string, Pick<R, K> & UsageCounts>();
  for (const row of rows) {
    const id = keys.map((key) => String(row[key])).join("\u0001");
    let group = groups.get(id);
    if (group === undefined) {
      const picked = {} as Pick<R, K>;
      for (const key of keys) picked[key] = row[key];
      group = { ...emptyCounts(), ...picked };
      groups.set(id, group);
    }
    merge(group, row);
  }
  return [...groups.values()];
}

/**
 * Every counter's sum, built once: a transaction builds a fresh store around its connection, and building these
 * dozens of raw SQL nodes on each of them was about 3 % of the relay's CPU in the webhook benchmark's profile.
 */
const SUMS = sql.join(USAGE_COLUMNS.map((column) => sql`sum(${sql.ref(column)}) as ${sql.ref(column)}`));

/**
 * The daily rows (`tab_usage`, workspace × day × person × language × model) and two roll-ups the same write keeps,
 * so a year of a large team reads in a few thousand rows: `tab_usage_days` (no person) answers the groupings by day,
 * language and model, and `tab_usage_weeks` (person, language and model per week) the grouping by person and who was active.
 */
export function usageStore(db: Db): Store["usage"] {
  // Each counter becomes the stored value plus the new row's; qualified, as PostgreSQL calls a bare name ambiguous.
  const mergedInto = (table: string) =>
    Object.fromEntries(
      USAGE_COLUMNS.map((column) => [
        column,
        sql<number>`${sql.ref(`${table}.${column}`)} + ${sql.ref(`excluded.${column}`)}`,
      ]),
    );

  /** Sums of `table` where `condition`, per `group` column (or in one row); `users` counts distinct people. */
  async function sum(
    table: "tab_usage" | "tab_usage_days" | "tab_usage_weeks",
    condition: RawBuilder<unknown>,
    group: string | undefined,
    countUsers: boolean,
  ): Promise<UsageSummary[]> {
    const key = group === undefined ? sql`''` : sql.ref(group);
    const users = countUsers ? sql`count(distinct user_id)` : sql`0`;
    const { rows } = await sql<Record<string, unknown>>`
      select ${key} as ${sql.ref("key")}, count(*) as ${sql.ref("n")}, ${users} as ${sql.ref("users")}, ${SUMS}
      from ${sql.table(table)} where ${condition}
      ${group === undefined ? sql`` : sql`group by ${sql.ref(group)} order by ${sql.ref(group)}`}`.execute(db);
    return rows
      .filter((row) => Number(row.n) > 0)
      .map((row) => {
        // PostgreSQL answers counts and sums of bigints as text.
        const summary: UsageSummary = { ...emptyCounts(), key: String(row.key), users: Number(row.users) };
        for (const column of USAGE_COLUMNS) summary[column] = Number(row[column] ?? 0);
        return summary;
      });
  }

  async function addAll(tx: Db, rows: readonly UsageRow[]): Promise<void> {
    const upsert = async (
      table: "tab_usage" | "tab_usage_days" | "tab_usage_weeks",
      keys: readonly string[],
      values: readonly Record<string, unknown>[],
    ) => {
      for (let i = 0; i < values.length; i += CHUNK) {
        await tx
          .insertInto(table)
          .values(values.slice(i, i + CHUNK) as never)
          .onConflict((oc) => oc.columns(keys as never).doUpdateSet(mergedInto(table)))
          .execute();
      }
    };
    await upsert("tab_usage", ["workspace_id", "day", "user_id", "language", "model"], rows);
    await upsert(
      "tab_usage_days",
      ["workspace_id", "day", "language", "model"],
      rollUp(rows, ["workspace_id", "day", "language", "model"]),
    );
    const weekly = rows.map((row) => ({ ...row, week: weekOf(row.day) }));
    await upsert(
      "tab_usage_weeks",
      ["workspace_id", "week", "user_id", "language", "model"],
      rollUp(weekly, ["workspace_id", "week", "user_id", "language", "model"]),
    );
  }

  return {
    async add(rows) {
      if (rows.length === 0) return;
      // The three tables move together, or a reader could see a count in one and not in another.
      if (db.isTransaction) await addAll(db, rows);
      else await db.transaction().execute((tx) => addAll(tx, rows));
    },
    async summarize(workspaceId, query) {
      const inWorkspace = sql`workspace_id = ${workspaceId}`;
      const days = (since: string, until: string) => sql`day >= ${since} and day < ${until}`;
      const range = days(query.since, query.until);
      const groupBy: UsageGroupBy = query.groupBy;
      const column = groupBy === "all" ? undefined : GROUP_COLUMN[groupBy];
      if (query.userId !== undefined) {
        // One person's rows: a few per day, along the (workspace, person, day) index.
        return sum("tab_usage", sql`${inWorkspace} and user_id = ${query.userId} and ${range}`, column, true);
      }
      // Whole weeks come from the weekly roll-up, the days either side of them from the daily rows.
      let firstWeek = weekOf(query.since);
      if (firstWeek < query.since) firstWeek = addDays(firstWeek, 7);
      const endWeek = weekOf(query.until);
      const weeks = firstWeek < endWeek;
      const wholeWeeks = sql`${inWorkspace} and week >= ${firstWeek} and week < ${endWeek}`;
      const edges = sql`${inWorkspace} and (${days(query.since, firstWeek)} or ${days(endWeek, query.until)})`;
      if (groupBy === "user") {
        const parts = weeks
          ? await Promise.all([
              sum("tab_usage_weeks", wholeWeeks, "user_id", false),
              sum("tab_usage", edges, "user_id", false),
            ])
          : [await sum("tab_usage", sql`${inWorkspace} and ${range}`, "user_id", false)];
        const people = new Map<string, UsageSummary>();
        for (const row of parts.flat()) {
          const person = people.get(row.key);
          if (person === undefined) people.set(row.key, { ...row, users: 1 });
          else merge(person, row);
        }
        return [...people.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      }
      // Counts from the roll-up without people. People by day from the daily rows' key (an index-only read); by
      // language, model or in all from the weekly roll-up's rows and the edges' daily ones.
      const key = column === undefined ? sql`''` : sql.ref(column);
      const pairs =
        weeks && groupBy !== "day"
          ? sql`select ${key} as ${sql.ref("key")}, user_id from tab_usage_weeks where ${wholeWeeks}
              union all select ${key} as ${sql.ref("key")}, user_id from tab_usage where ${edges}`
          : sql`select ${key} as ${sql.ref("key")}, user_id from tab_usage where ${inWorkspace} and ${range}`;
      const [counts, people] = await Promise.all([
        sum("tab_usage_days", sql`${inWorkspace} and ${range}`, column, false),
        sql<{ key: string; users: unknown }>`
          select ${sql.ref("key")}, count(distinct user_id) as ${sql.ref("users")}
          from (${pairs}) as pairs group by ${sql.ref("key")}`.execute(db),
      ]);
      const users = new Map(people.rows.map((row) => [String(row.key), Number(row.users)]));
      return counts.map((row) => ({ ...row, users: users.get(row.key) ?? 0 }));
    },
    async prune(beforeDay) {
      const daily = await db.deleteFrom("tab_usage").where("day", "<", beforeDay).executeTakeFirst();
      await db.deleteFrom("tab_usage_days").where("day", "<", beforeDay).execute();
      // A week goes once all of its seven days are before `beforeDay`.
      await db.deleteFrom("tab_usage_weeks").where("week", "<=", addDays(beforeDay, -7)).execute();
      return Number(daily.numDeletedRows);
    },
  };
}
