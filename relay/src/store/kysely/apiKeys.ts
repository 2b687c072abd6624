import type { Scope } from "../../auth/scopes";
import type { ApiKeysTable, Db } from "../schema";
import type { ApiKey, KeyOwner, Store } from "../types";

/** The key lookup every API request makes: the key, its user and its workspace, by the secret's hash. */
export function ownerByHashQuery(db: Db, secretHash: string) {
  return db
    .selectFrom("api_keys as k")
    .innerJoin("users as u", "u.id", "k.user_id")
    .innerJoin("workspaces as w", "w.id", "k.workspace_id")
    .select([
      "k.id as k_id",
      "k.workspace_id as k_workspace_id",
      "k.user_id as k_user_id",
      "k.name as k_name",
      "k.scopes as k_scopes",
      "k.hint as k_hint",
      "k.created_at as k_created_at",
      "k.revoked_at as k_revoked_at",
      "u.name as u_name",
      "u.role as u_role",
      "u.created_at as u_created_at",
      "u.removed_at as u_removed_at",
      "w.slug as w_slug",
      "w.name as w_name",
      "w.created_at as w_created_at",
    ])
    .where("k.secret_hash", "=", secretHash);
}

export type OwnerRow = NonNullable<Awaited<ReturnType<ReturnType<typeof ownerByHashQuery>["executeTakeFirst"]>>>;

export function toKeyOwner(row: OwnerRow): KeyOwner {
  return {
    key: {
      id: row.k_id,
      workspace_id: row.k_workspace_id,
      user_id: row.k_user_id,
      name: row.k_name,
      scopes: parseScopes(row.k_scopes),
      hint: row.k_hint,
      created_at: row.k_created_at,
      revoked_at: row.k_revoked_at,
    },
    user: {
      id: row.k_user_id,
      workspace_id: row.k_workspace_id,
      name: row.u_name,
      role: row.u_role,
      created_at: row.u_created_at,
      removed_at: row.u_removed_at,
    },
    workspace: { id: row.k_workspace_id, slug: row.w_slug, name: row.w_name, created_at: row.w_created_at },
  };
}

/** An engine's own way to the key lookup, for the hot path (SQLite's prepared statement). */
export type OwnerLookup = (secretHash: string) => KeyOwner | undefined;

export function apiKeysStore(db: Db, ownerByHash?: OwnerLookup): Store["apiKeys"] {
  return {
    async create(input) {
      await db
        .insertInto("api_keys")
        .values({
          id: input.id,
          workspace_id: input.workspaceId,
          user_id: input.userId,
          name: input.name,
          scopes: JSON.stringify(input.scopes),
          secret_hash: input.secretHash,
          hint: input.hint,
          created_at: input.createdAt,
          revoked_at: null,
        })
        .execute();
      return {
        id: input.id,
        workspace_id: input.workspaceId,
        user_id: input.userId,
        name: input.name,
        scopes: [...input.scopes],
        hint: input.hint,
        created_at: input.createdAt,
        revoked_at: null,
      };
    },
    findOwnerByHash(secretHash) {
      if (ownerByHash) return ownerByHash(secretHash);
      return ownerByHashQuery(db, secretHash)
        .executeTakeFirst()
        .then((row) => row && toKeyOwner(row));
    },
    async get(workspaceId, id) {
      const row = await db
        .selectFrom("api_keys")
        .selectAll()
        .where("workspace_id", "=", workspaceId)
        .where("id", "=", id)
        .executeTakeFirst();
      return row && toApiKey(row);
    },
    async listForUser(workspaceId, userId) {
      const rows = await db
        .selectFrom("api_keys")
        .selectAll()
        .where("workspace_id", "=", workspaceId)
        .where("user_id", "=", userId)
        .orderBy("created_at", "desc")
        .orderBy("id")
        .execute();
      return rows.map(toApiKey);
    },
    async revoke(workspaceId, id, at) {
      const result = await db
        .updateTable("api_keys")
        .set({ revoked_at: at })
        .where("workspace_id", "=", workspaceId)
        .where("id", "=", id)
        .where("revoked_at", "is", null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },
  };
}

function toApiKey(row: ApiKeysTable): ApiKey {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    user_id: row.user_id,
    name: row.name,
    scopes: parseScopes(row.scopes),
    hint: row.hint,
    created_at: row.created_at,
    revoked_at: row.revoked_at,
  };
}

function parseScopes(text: string): Scope[] {
  return JSON.parse(text) as Scope[];
}
