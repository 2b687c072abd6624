import type { Db } from "../schema";
import type { Store } from "../types";

export function notificationsStore(db: Db): Store["notifications"] {
  return {
    async create(notification) {
      await db.insertInto("notifications").values(notification).execute();
    },
    async listForUser(userId, query) {
      let q = db.selectFrom("notifications").selectAll().where("user_id", "=", userId);
      if (query.before !== undefined) q = q.where("id", "<", query.before);
      return q.orderBy("id", "desc").limit(query.limit).execute();
    },
  };
}
