import type { Db } from "../schema";
import type { Store } from "../types";

export function workspacesStore(db: Db): Store["workspaces"] {
  return {
    async create(input) {
      const row = { id: input.id, slug: input.slug, name: input.name, created_at: input.createdAt };
      await db.insertInto("workspaces").values(row).execute();
      return row;
    },
    async getBySlug(slug) {
      return db
        .selectFrom("workspaces")
        .select(["id", "slug", "name", "created_at"])
        .where("slug", "=", slug)
        .executeTakeFirst();
    },
    async count() {
      const row = await db
        .selectFrom("workspaces")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    async list() {
      return db
        .selectFrom("workspaces")
        .select(["id", "slug", "name", "created_at"])
        .orderBy("created_at")
        .orderBy("id")
        .execute();
    },
  };
}

/** Marks the workspace's directory as changed; called by every write that adds, removes or renames a member. */
export async function bumpDirectory(db: Db, workspaceId: string): Promise<void> {
  await db
    .updateTable("workspaces")
    .set((eb) => ({ directory_version: eb("directory_version", "+", 1) }))
    .where("id", "=", workspaceId)
    .execute();
}
