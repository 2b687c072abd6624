import type { Kysely } from "kysely";
import type { Role, Scope } from "../auth/scopes";
import { type Db, agentsStore, bumpDirectory, conversationsStore, eventsStore, messagesStore, notificationsStore, agentSocketsStore } from "./kyselyConversations";
import type { Database } from "./schema";
import type { ApiKey, KeyOwner, Store, User } from "./types";

/** The key lookup every API request makes: the key, its user and its workspace, by the secret's hash. */
export function ownerByHashQuery(db: Db, secretHash: string) {
  return db
    .selectFrom("api_keys as k")
    .innerJoin("users as u", "u.id", "k.user_id")
    .innerJoin("workspaces as w", "w.id", "k.workspace_id")
    .select([
      "k.id as k_id", "k.workspace_id as k_workspace_id", "k.user_id as k_user_id", "k.name as k_name",
      "k.scopes as k_scopes", "k.hint as k_hint", "k.created_at as k_created_at", "k.revoked_at as k_revoked_at",
      "u.name as u_name", "u.role as u_role", "u.created_at as u_created_at", "u.removed_at as u_removed_at",
      "w.slug as w_slug", "w.name as w_name", "w.created_at as w_created_at",
    ])
    .where("k.secret_hash", "=", secretHash);
}

export type OwnerRow = NonNullable<Awaited<ReturnType<ReturnType<typeof ownerByHashQuery>["executeTakeFirst"]>>>;

export function toKeyOwner(row: OwnerRow): KeyOwner {
  return {
    key: {
      id: row.k_id, workspace_id: row.k_workspace_id, user_id: row.k_user_id, name: row.k_name,
      scopes: parseScopes(row.k_scopes), hint: row.k_hint, created_at: row.k_created_at, revoked_at: row.k_revoked_at,
    },
    user: toUser({
      id: row.k_user_id, workspace_id: row.k_workspace_id, name: row.u_name, role: row.u_role,
      created_at: row.u_created_at, removed_at: row.u_removed_at,
    }),
    workspace: { id: row.k_workspace_id, slug: row.w_slug, name: row.w_name, created_at: row.w_created_at },
  };
}

/** Engine-specific shortcuts for the hot path; the SQL stays the portable Kysely query's. */
export interface FastPaths {
  ownerByHash?: (secretHash: string) => KeyOwner | undefined;
  /** PostgreSQL: due events are read `FOR UPDATE SKIP LOCKED`, so relays sharing the database never claim the same one. */
  rowLocks?: boolean;
}

/** A Store over any Kysely connection; the SQL here is portable between SQLite and PostgreSQL. */
export function createKyselyStore(db: Db, close: () => Promise<void>, fast?: FastPaths, exclusive = true): Store {
  const store: Store = {
    exclusive,
    workspaces: {
      async create(input) {
        const row = { id: input.id, slug: input.slug, name: input.name, created_at: input.createdAt };
        await db.insertInto("workspaces").values(row).execute();
        return row;
      },
      async getBySlug(slug) {
        return db.selectFrom("workspaces").select(["id", "slug", "name", "created_at"]).where("slug", "=", slug).executeTakeFirst();
      },
      async count() {
        const row = await db.selectFrom("workspaces").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
        return Number(row.n);
      },
      async list() {
        return db.selectFrom("workspaces").select(["id", "slug", "name", "created_at"]).orderBy("created_at").orderBy("id").execute();
      },
    },
    users: {
      async create(input) {
        const row = { id: input.id, workspace_id: input.workspaceId, name: input.name, role: input.role, created_at: input.createdAt, removed_at: null };
        await db.insertInto("users").values(row).execute();
        await bumpDirectory(db, input.workspaceId);
        return row;
      },
      async get(workspaceId, id) {
        const row = await db.selectFrom("users").selectAll().where("workspace_id", "=", workspaceId).where("id", "=", id).executeTakeFirst();
        return row && toUser(row);
      },
      async remove(workspaceId, id, at) {
        const result = await db
          .updateTable("users")
          .set({ removed_at: at })
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .where("removed_at", "is", null)
          .executeTakeFirst();
        const removed = Number(result.numUpdatedRows) > 0;
        if (removed) await bumpDirectory(db, workspaceId);
        return removed;
      },
      async list(workspaceId) {
        const rows = await db
          .selectFrom("users")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("removed_at", "is", null)
          .orderBy("created_at")
          .orderBy("id")
          .execute();
        return rows.map(toUser);
      },
    },
    agents: agentsStore(db),
    conversations: conversationsStore(db),
    messages: messagesStore(db),
    events: eventsStore(db, { rowLocks: fast?.rowLocks === true }),
    notifications: notificationsStore(db),
    agentSockets: agentSocketsStore(db),
    sessions: {
      async create(input) {
        await db.insertInto("sessions").values(input).execute();
        const { token_hash: _hash, ...session } = input;
        return session;
      },
      async findByTokenHash(tokenHash) {
        const row = await db.selectFrom("sessions").selectAll().where("token_hash", "=", tokenHash).executeTakeFirst();
        if (!row) return undefined;
        const key = await db.selectFrom("api_keys").select("secret_hash").where("id", "=", row.api_key_id).executeTakeFirst();
        const owner = key && (await store.apiKeys.findOwnerByHash(key.secret_hash));
        if (!owner) return undefined;
        const { token_hash: _hash, ...session } = row;
        return { session, owner };
      },
      async end(id, at) {
        const result = await db.updateTable("sessions").set({ ended_at: at }).where("id", "=", id).where("ended_at", "is", null).executeTakeFirst();
        return Number(result.numUpdatedRows) > 0;
      },
      async endOldest(apiKeyId, keep, at) {
        // Listed, then ended by id: portable (SQLite's OFFSET needs a LIMIT, PostgreSQL's LIMIT -1 is an error), and
        // the list is short because every sign-in trims it back to `keep`.
        const live = await db
          .selectFrom("sessions")
          .select("id")
          .where("api_key_id", "=", apiKeyId)
          .where("ended_at", "is", null)
          .where("expires_at", ">", at)
          .orderBy("created_at", "desc")
          .orderBy("id", "desc")
          .execute();
        const beyond = live.slice(keep).map((row) => row.id);
        if (beyond.length === 0) return [];
        await db.updateTable("sessions").set({ ended_at: at }).where("id", "in", beyond).where("ended_at", "is", null).execute();
        return beyond;
      },
    },
    apiKeys: {
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
      async findOwnerByHash(secretHash) {
        if (fast?.ownerByHash) return fast.ownerByHash(secretHash);
        const row = await ownerByHashQuery(db, secretHash).executeTakeFirst();
        return row && toKeyOwner(row);
      },
      async get(workspaceId, id) {
        const row = await db.selectFrom("api_keys").selectAll().where("workspace_id", "=", workspaceId).where("id", "=", id).executeTakeFirst();
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
    },
    async transaction(fn) {
      if (db.isTransaction) return fn(store);
      return (db as Kysely<Database>).transaction().execute((trx) => fn(createKyselyStore(trx, async () => undefined, { rowLocks: fast?.rowLocks === true }, exclusive)));
    },
    close,
  };
  return store;
}

function toUser(row: Database["users"]): User {
  return { ...row, role: row.role as Role };
}

function toApiKey(row: Database["api_keys"]): ApiKey {
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

