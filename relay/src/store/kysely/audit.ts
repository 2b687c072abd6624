import type { Db } from "../schema";
import type { Store } from "../types";

export function auditStore(db: Db): Store["audit"] {
  return {
    async create(entry) {
      await db.insertInto("audit_log").values(entry).execute();
    },
    async list(workspaceId, query) {
      let q = db.selectFrom("audit_log").selectAll().where("workspace_id", "=", workspaceId);
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
