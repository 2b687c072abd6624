import { type Kysely, type Migration, type MigrationProvider, sql } from "kysely";
import { NEXT_EDIT_COUNTERS, USAGE_COLUMNS } from "../usage/columns";

export type Engine = "sqlite" | "postgres";

/**
 * Versioned migrations, applied in name order and recorded by Kysely's migrator. Only portable DDL:
 * text keys, ISO timestamps, no engine-specific types, so SQLite and PostgreSQL run the same list.
 */
function migrationsFor(engine: Engine): Record<string, Migration> {
  // SQLite compares text byte by byte; PostgreSQL by the database's collation, which can order `_` or lower case
  // differently. Paging by id, due times and every ORDER BY rely on SQLite's order, so PostgreSQL gets it too.
  const text = engine === "postgres" ? sql`text collate "C"` : "text";
  return {
    "0001_workspaces_users_keys": {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("workspaces")
          .addColumn("id", text, (c) => c.primaryKey())
          .addColumn("slug", text, (c) => c.notNull().unique())
          .addColumn("name", text, (c) => c.notNull())
          .addColumn("created_at", text, (c) => c.notNull())
          .execute();
        await db.schema
          .createTable("users")
          .addColumn("id", text, (c) => c.primaryKey())
          .addColumn("workspace_id", text, (c) => c.notNull().references("workspaces.id"))
          .addColumn("name", text, (c) => c.notNull())
          .addColumn("role", text, (c) => c.notNull())
          .addColumn("created_at", text, (c) => c.notNull())
          .addColumn("removed_at", text)
          .execute();
        await db.schema.createIndex("users_workspace").on("users").column("workspace_id").execute();
        await db.schema
          .createTable("api_keys")
          .addColumn("id", text, (c) => c.primaryKey())
          .addColumn("workspace_id", text, (c) => c.notNull().references("workspaces.id"))
          .addColumn("user_id", text, (c) => c.notNull().references("users.id"))
          .addColumn("name", text, (c) => c.notNull())
          .addColumn("scopes", text, (c) => c.notNull())
          .addColumn("secret_hash", text, (c) => c.notNull().unique())
          .addColumn("hint", text, (c) => c.notNull())
          .addColumn("created_at", text, (c) => c.notNull())
          .addColumn("revoked_at", text)
          .execute();
        await db.schema.createIndex("api_keys_user").on("api_keys").columns(["workspace_id", "user_id"]).execute();
      },
    },
    "0002_conversations_agents_outbox": {
      async up(db: Kysely<unknown>) {
        // Bumped whenever a user or agent joins, leaves or is renamed, so mention lookups can cache the directory.
        await db.schema
          .alterTable("workspaces")
          .addColumn("directory_version", "integer", (c) => c.notNull().defaultTo(0))
          .execute();
        await db.schema
          .createTable("agents")
          .addColumn("id", text, (c) => c.primaryKey())
          .addColumn("workspace_id", text, (c) => c.notNull().references("workspaces.id"))
          .addColumn("owner_user_id", text, (c) => c.notNull().references("users.id"))
          .addColumn("name", text, (c) => c.notNull())
          .addColumn("description", text, (c) => c.notNull())
          .addColumn("webhook_url", text)
          .addColumn("state", text, (c) => c.notNull())
          .addColumn("token_hash", text, (c) => c.notNull().unique())
          .addColumn("token_hint", text, (c) => c.notNull())
          .addColumn("signing_secret", text, (c) => c.notNull())
          .addColumn("created_at", text, (c) => c.notNull())
          .addColumn("updated_at", text, (c) => c.notNull())
          .addColumn("removed_at", text)
          .execute();
        await db.schema.createIndex("agents_workspace").on("agents").column("workspace_id").execute();
        await db.schema
          .createTable("conversations")
          .addColumn("id", text, (c) => c.primaryKey())
          .addColumn("workspace_id", text, (c) => c.notNull().references("workspaces.id"))
          .addColumn("type", text, (c) => c.notNull())
          .addColumn("name", text)
          .addColumn("visibility", text)
          .addColumn("dm_key", text)
          .addColumn("created_by", text, (c) => c.notNull())
          .addColumn("created_at", text, (c) => c.notNull())
          .execute();
        // One channel per name and one DM per set of members in a workspace.
        await db.schema
          .createIndex("conversations_channel_name")
          .on("conversations")
          .columns(["workspace_id", "type", "name"])
          .unique()
          .execute();
        await db.schema
          .createIndex("conversations_dm_key")
          .on("conversations")
          .columns(["workspace_id", "dm_key"])
          .unique()
          .execute();
        await db.schema
          .createTable("conversation_members")
          .addColumn("conversation_id", text, (c) => c.notNull().references("conversations.id"))
          .addColumn("member_id", text, (c) => c.notNull())
          .addColumn("member_type", text, (c) => c.notNull())
          .addColumn("joined_at", text, (c) => c.notNull())
          .addPrimaryKeyConstraint("conversation_members_pk", ["conversation_id", "member_id"])
          .execute();
        await db.schema
          .createIndex("conversation_members_member")
          .on("conversation_members")
          .column("member_id")
          .execute();
        await db.schema
          .createTable("messages")
          .addColumn("id", text, (c) => c.primaryKey())
          .addColumn("workspace_id", text, (c) => c.notNull().references("workspaces.id"))
          .addColumn("conversation_id", text, (c) => c.notNull().references("conversations.id"))
          .addColumn("thread_id", text)
          .addColumn("author_id", text, (c) => c.notNull())
          .addColumn("author_type", text, (c) => c.notNull())
          .addColumn("author_name", text, (c) => c.notNull())
          .addColumn("text", text, (c) => c.notNull())
          .addColumn("aside", "integer", (c) => c.notNull())
          .addColumn("mentions", text, (c) => c.notNull())
          .addColumn("created_at", text, (c) => c.notNull())
          .execute();
        // Message ids sort by time, so listing newest first and paging with `before` both walk this index.
        await db.schema
          .createIndex("messages_conversation")
          .on("messages")
          .columns(["conversation_id", "id"])
          .execute();
        await db.schema.createIndex("messages_thread").on("messages").columns(["thread_id", "id"]).execute();
        // The outbox: one row per event and agent, written in the transaction of the message that caused it.
        await db.schema
          .createTable("events")
          .addColumn("id", text, (c) => c.primaryKey())
          .addColumn("workspace_id", text, (c) => c.notNull().references("workspaces.id"))
          .addColumn("agent_id", text, (c) => c.notNull().references("agents.id"))
          .addColumn("type", text, (c) => c.notNull())
          .addColumn("payload", text, (c) => c.notNull())
          .addColumn("status", text, (c) => c.notNull())
          .addColumn("attempts", "integer", (c) => c.notNull())
          .addColumn("next_attempt_at", text)
          .addColumn("next_trigger", text, (c) => c.notNull())
          .addColumn("retries", "integer", (c) => c.notNull())
          // 1 while a relay is attempting the event; next_attempt_at then holds when that claim lapses.
          .addColumn("claimed", "integer", (c) => c.notNull())
          .addColumn("created_at", text, (c) => c.notNull())
          .addColumn("updated_at", text, (c) => c.notNull())
          .execute();
        await db.schema.createIndex("events_due").on("events").columns(["status", "next_attempt_at", "id"]).execute();
        await db.schema.createIndex("events_agent").on("events").columns(["agent_id", "id"]).execute();
        await db.schema
          .createIndex("events_agent_due")
          .on("events")
          .columns(["agent_id", "status", "next_attempt_at", "id"])
          .execute();
        await db.schema
          .createTable("delivery_attempts")
          .addColumn("id", text, (c) => c.primaryKey())
          .addColumn("event_id", text, (c) => c.notNull().references("events.id"))
          .addColumn("agent_id", text, (c) => c.notNull())
          .addColumn("attempt", "integer", (c) => c.notNull())
          .addColumn("trigger", text, (c) => c.notNull())
          .addColumn("url", text, (c) => c.notNull())
          .addColumn("started_at", text, (c) => c.notNull())
          .addColumn("duration_ms", "integer", (c) => c.notNull())
          .addColumn("status_code", "integer")
          .addColumn("error", text)
          .addColumn("response_excerpt", text, (c) => c.notNull())
          .addColumn("outcome", text, (c) => c.notNull())
          .addColumn("next_attempt_at", text)
          .execute();
        await db.schema
          .createIndex("delivery_attempts_event")
          .on("delivery_attempts")
          .columns(["event_id", "attempt"])
          .execute();
        await db.schema
          .createTable("notifications")
          .addColumn("id", text, (c) => c.primaryKey())
          .addColumn("workspace_id", text, (c) => c.notNull().references("workspaces.id"))
          .addColumn("user_id", text, (c) => c.notNull().references("users.id"))
          .addColumn("type", text, (c) => c.notNull())
          .addColumn("conversation_id", text, (c) => c.notNull())
          .addColumn("message_id", text, (c) => c.notNull())
          .addColumn("created_at", text, (c) => c.notNull())
          .addColumn("read_at", text)
          .execute();
        await db.schema.createIndex("notifications_user").on("notifications").columns(["user_id", "id"]).execute();
      },
    },
    "0003_sessions": {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("sessions")
          .addColumn("id", text, (c) => c.primaryKey())
          .addColumn("api_key_id", text, (c) => c.notNull().references("api_keys.id"))
          .addColumn("token_hash", text, (c) => c.notNull().unique())
          .addColumn("created_at", text, (c) => c.notNull())
          .addColumn("expires_at", text, (c) => c.notNull())
          .addColumn("ended_at", text)
          .execute();
      },
    },
    "0004_agent_sockets": {
      async up(db: Kysely<unknown>) {
        // Which relay holds a Socket Mode connection of which agent, renewed while it lasts: relays sharing a
        // database leave those agents' events to the relay with the socket, and a dead relay's rows lapse.
        await db.schema
          .createTable("agent_sockets")
          .addColumn("agent_id", text, (c) => c.notNull())
          .addColumn("relay_id", text, (c) => c.notNull())
          .addColumn("connected_until", text, (c) => c.notNull())
          .addPrimaryKeyConstraint("agent_sockets_pk", ["agent_id", "relay_id"])
          .execute();
      },
    },
    "0005_sessions_by_key": {
      async up(db: Kysely<unknown>) {
        // Every sign-in lists its key's live sessions to end those beyond the cap; ended ones stay in the table.
        await db.schema.createIndex("sessions_key").on("sessions").columns(["api_key_id", "created_at"]).execute();
      },
    },
    "0006_audit_log": {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("audit_log")
          .addColumn("id", text, (c) => c.primaryKey())
          // No foreign keys: a record outlives the key, agent or person it names, and names them only by id.
          .addColumn("workspace_id", text, (c) => c.notNull())
          .addColumn("at", text, (c) => c.notNull())
          .addColumn("action", text, (c) => c.notNull())
          .addColumn("actor_user_id", text)
          .addColumn("via", text, (c) => c.notNull())
          .addColumn("via_id", text)
          .addColumn("address", text, (c) => c.notNull())
          .addColumn("target_type", text)
          .addColumn("target_id", text)
          .addColumn("details", text, (c) => c.notNull())
          .execute();
        // Ids sort by time: the log lists newest first and pages with `before` along these indexes, the last two when
        // it is filtered by who acted or by what was done.
        await db.schema.createIndex("audit_log_workspace").on("audit_log").columns(["workspace_id", "id"]).execute();
        await db.schema
          .createIndex("audit_log_actor")
          .on("audit_log")
          .columns(["workspace_id", "actor_user_id", "id"])
          .execute();
        await db.schema
          .createIndex("audit_log_action")
          .on("audit_log")
          .columns(["workspace_id", "action", "id"])
          .execute();
        await db.schema.createIndex("audit_log_at").on("audit_log").column("at").execute();
      },
    },
    "0007_tab_usage": {
      async up(db: Kysely<unknown>) {
        // No foreign keys, like the audit log: a person's usage stays in the reports after they are removed. Each
        // table's key is what the upserts merge on, and reports read a workspace's range of days (or weeks) along it.
        const counters = (name: string, keys: readonly string[]) => {
          let table = db.schema.createTable(name);
          for (const key of keys) table = table.addColumn(key, text, (c) => c.notNull());
          // The columns as they were at 0007: later migrations add theirs, so a database made at any version ends
          // with the same tables.
          for (const column of USAGE_COLUMNS.filter((c) => !(NEXT_EDIT_COUNTERS as readonly string[]).includes(c)))
            table = table.addColumn(column, "bigint", (c) => c.notNull().defaultTo(0));
          return table.addPrimaryKeyConstraint(`${name}_pk`, keys as never).execute();
        };
        await counters("tab_usage", ["workspace_id", "day", "user_id", "language", "model"]);
        await counters("tab_usage_days", ["workspace_id", "day", "language", "model"]);
        await counters("tab_usage_weeks", ["workspace_id", "week", "user_id", "language", "model"]);
        // One person's report, and the retention's deletes across workspaces.
        await db.schema
          .createIndex("tab_usage_user")
          .on("tab_usage")
          .columns(["workspace_id", "user_id", "day"])
          .execute();
        await db.schema.createIndex("tab_usage_day").on("tab_usage").column("day").execute();
        await db.schema.createIndex("tab_usage_days_day").on("tab_usage_days").column("day").execute();
        await db.schema.createIndex("tab_usage_weeks_week").on("tab_usage_weeks").column("week").execute();
      },
    },
    "0008_tab_usage_next_edits": {
      async up(db: Kysely<unknown>) {
        // Additive counters with a default, so the rows already stored read as "no next edits" and nothing is rewritten.
        for (const table of ["tab_usage", "tab_usage_days", "tab_usage_weeks"])
          for (const column of NEXT_EDIT_COUNTERS)
            await db.schema
              .alterTable(table)
              .addColumn(column, "bigint", (c) => c.notNull().defaultTo(0))
              .execute();
      },
    },
  };
}

export function migrationProviderFor(engine: Engine): MigrationProvider {
  const migrations = migrationsFor(engine);
  return { getMigrations: async () => migrations };
}

export const migrationProvider: MigrationProvider = migrationProviderFor("sqlite");
