import type { Db } from "../schema";
import type { Store } from "../types";

export function auditStore(db: Db): Store["audit"] {
  return {
    async create(entry) {
      await db.insertInto("audit_log").values(entry).execute();
    },
    async list(workspaceId, query) {
      // A failed sign-in with an unknown key belongs to no workspace; the relay's every workspace sees it.
      let q = db.selectFrom("audit_log").selectAll().where((eb) => eb.or([eb("workspace_id", "=", workspaceId), eb("workspace_id", "is", null)]));
      if (query.since !== undefined) q = q.where("at", ">=", query.since);
      if (query.until !== undefined) q = q.where("at", "<", query.until);
      if (query.actor !== undefined) q = q.where("actor_user_id", "=", query.actor);
      if (query.action !== undefined) q = q.where("action", "=", query.action);
      if (query.before !== undefined) q = q.where("id", "<", query.before);
      return q.orderBy("id", "desc").limit(query.limit).execute();
    },
    async prune(before) {
      const result = await db.deleteFrom("audit_log").where("at", "<", before).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
