import type { Db } from "../schema";
import type { Store } from "../types";
import { bumpDirectory } from "./workspaces";

export function usersStore(db: Db, options: { rowLocks: boolean }): Store["users"] {
  return {
    async create(input) {
      const row = {
        id: input.id,
        workspace_id: input.workspaceId,
        name: input.name,
        role: input.role,
        created_at: input.createdAt,
        removed_at: null,
      };
      await db.insertInto("users").values(row).execute();
      await bumpDirectory(db, input.workspaceId);
      return row;
    },
    async get(workspaceId, id) {
      return db
        .selectFrom("users")
        .selectAll()
        .where("workspace_id", "=", workspaceId)
        .where("id", "=", id)
        .executeTakeFirst();
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
    async setRole(workspaceId, id, role) {
      const result = await db
        .updateTable("users")
        .set({ role })
        .where("workspace_id", "=", workspaceId)
        .where("id", "=", id)
        .where("removed_at", "is", null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },
    async countOwners(workspaceId) {
      // PostgreSQL: the workspace's row is held until the transaction ends, so transactions that count owners and then
      // demote or remove one take turns (under READ COMMITTED both would otherwise count two and leave none). SQLite
      // runs one transaction at a time on its one connection.
      if (options.rowLocks && db.isTransaction)
        await db.selectFrom("workspaces").select("id").where("id", "=", workspaceId).forUpdate().execute();
      const row = await db
        .selectFrom("users")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("workspace_id", "=", workspaceId)
        .where("role", "=", "owner")
        .where("removed_at", "is", null)
        .executeTakeFirstOrThrow();
      return Number(row.n);
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
