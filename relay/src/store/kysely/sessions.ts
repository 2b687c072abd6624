import type { Db } from "../schema";
import type { Store } from "../types";

/** `apiKeys` is the store's own, so a session's owner is found the way a key's is (SQLite's fast path included). */
export function sessionsStore(db: Db, apiKeys: Store["apiKeys"]): Store["sessions"] {
  return {
    async create(input) {
      await db.insertInto("sessions").values(input).execute();
      const { token_hash: _hash, ...session } = input;
      return session;
    },
    async findByTokenHash(tokenHash) {
      const row = await db.selectFrom("sessions").selectAll().where("token_hash", "=", tokenHash).executeTakeFirst();
      if (!row) return undefined;
      const key = await db
        .selectFrom("api_keys")
        .select("secret_hash")
        .where("id", "=", row.api_key_id)
        .executeTakeFirst();
      const owner = key && (await apiKeys.findOwnerByHash(key.secret_hash));
      if (!owner) return undefined;
      const { token_hash: _hash, ...session } = row;
      return { session, owner };
    },
    async end(id, at) {
      const result = await db
        .updateTable("sessions")
        .set({ ended_at: at })
        .where("id", "=", id)
        .where("ended_at", "is", null)
        .executeTakeFirst();
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
      await db
        .updateTable("sessions")
        .set({ ended_at: at })
        .where("id", "in", beyond)
        .where("ended_at", "is", null)
        .execute();
      return beyond;
    },
  };
}
