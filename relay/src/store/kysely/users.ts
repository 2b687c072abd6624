import type { Db } from "../schema";
import type { Store } from "../types";
import { bumpDirectory } from "./workspaces";

export function usersStore(db: Db): Store["users"] {
  return {
    async create(input) {
      const row = { id: input.id, workspace_id: input.workspaceId, name: input.name, role: input.role, created_at: input.createdAt, removed_at: null };
      await db.insertInto("users").values(row).execute();
      await bumpDirectory(db, input.workspaceId);
      return row;
    },
    async get(workspaceId, id) {
      return db.selectFrom("users").selectAll().where("workspace_id", "=", workspaceId).where("id", "=", id).executeTakeFirst();
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
      return db
        .selectFrom("users")
        .selectAll()
        .where("workspace_id", "=", workspaceId)
        .where("removed_at", "is", null)
        .orderBy("created_at")
        .orderBy("id")
        .execute();
    },
  };
}
