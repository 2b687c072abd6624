import { type Kysely, type Migration, type MigrationProvider } from "kysely";

/**
 * Versioned migrations, applied in name order and recorded by Kysely's migrator. Only portable DDL:
 * text keys, ISO timestamps, no engine-specific types, so a PostgreSQL store can run the same list.
 */
const migrations: Record<string, Migration> = {
  "0001_workspaces_users_keys": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable("workspaces")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("slug", "text", (c) => c.notNull().unique())
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("created_at", "text", (c) => c.notNull())
        .execute();
      await db.schema
        .createTable("users")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("workspace_id", "text", (c) => c.notNull().references("workspaces.id"))
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("role", "text", (c) => c.notNull())
        .addColumn("created_at", "text", (c) => c.notNull())
        .addColumn("removed_at", "text")
        .execute();
      await db.schema.createIndex("users_workspace").on("users").column("workspace_id").execute();
      await db.schema
        .createTable("api_keys")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("workspace_id", "text", (c) => c.notNull().references("workspaces.id"))
        .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("scopes", "text", (c) => c.notNull())
        .addColumn("secret_hash", "text", (c) => c.notNull().unique())
        .addColumn("hint", "text", (c) => c.notNull())
        .addColumn("created_at", "text", (c) => c.notNull())
        .addColumn("revoked_at", "text")
        .execute();
      await db.schema.createIndex("api_keys_user").on("api_keys").columns(["workspace_id", "user_id"]).execute();
    },
  },
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
