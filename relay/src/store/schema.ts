/** Table shapes as Kysely sees them. Timestamps are ISO-8601 UTC text so the SQL stays portable. */
export interface Database {
  workspaces: { id: string; slug: string; name: string; created_at: string };
  users: { id: string; workspace_id: string; name: string; role: string; created_at: string; removed_at: string | null };
  api_keys: {
    id: string;
    workspace_id: string;
    user_id: string;
    name: string;
    scopes: string;
    secret_hash: string;
    hint: string;
    created_at: string;
    revoked_at: string | null;
  };
}
