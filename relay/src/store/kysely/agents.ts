import type { AgentsTable, Db } from "../schema";
import type { Store } from "../types";
import { compiledOnce } from "./compiledOnce";
import { bumpDirectory } from "./workspaces";

const AGENT_COLUMNS = [
  "id",
  "workspace_id",
  "owner_user_id",
  "name",
  "description",
  "webhook_url",
  "state",
  "token_hint",
  "created_at",
  "updated_at",
] as const;

export function agentsStore(db: Db): Store["agents"] {
  return {
    async create(input) {
      const row: AgentsTable = {
        id: input.id,
        workspace_id: input.workspaceId,
        owner_user_id: input.ownerUserId,
        name: input.name,
        description: input.description,
        webhook_url: input.webhookUrl,
        state: "active",
        token_hash: input.tokenHash,
        token_hint: input.tokenHint,
        signing_secret: input.signingSecret,
        created_at: input.createdAt,
        updated_at: input.createdAt,
        removed_at: null,
      };
      await db.insertInto("agents").values(row).execute();
      await bumpDirectory(db, input.workspaceId);
      // What is returned is what `get` would answer: never the token's hash or the signing secret.
      const { token_hash: _hash, signing_secret: _secret, removed_at: _removed, ...agent } = row;
      return agent;
    },
    async get(workspaceId, id) {
      const { rows } = await getAgent(db, workspaceId, id);
      return rows[0];
    },
    async list(workspaceId) {
      return db
        .selectFrom("agents")
        .select(AGENT_COLUMNS)
        .where("workspace_id", "=", workspaceId)
        .where("removed_at", "is", null)
        .orderBy("created_at")
        .orderBy("id")
        .execute();
    },
    async findByTokenHash(tokenHash) {
      const row = await db
        .selectFrom("agents as a")
        .innerJoin("workspaces as w", "w.id", "a.workspace_id")
        .select([
          "a.id",
          "a.workspace_id",
          "a.owner_user_id",
          "a.name",
          "a.description",
          "a.webhook_url",
          "a.state",
          "a.token_hint",
          "a.created_at",
          "a.updated_at",
          "w.slug as w_slug",
          "w.name as w_name",
          "w.created_at as w_created_at",
        ])
        .where("a.token_hash", "=", tokenHash)
        .where("a.removed_at", "is", null)
        .executeTakeFirst();
      if (!row) return undefined;
      const { w_slug, w_name, w_created_at, ...agent } = row;
      return { agent, workspace: { id: agent.workspace_id, slug: w_slug, name: w_name, created_at: w_created_at } };
    },
    async update(workspaceId, id, patch, at) {
      const result = await db
        .updateTable("agents")
        .set({ ...patch, updated_at: at })
        .where("workspace_id", "=", workspaceId)
        .where("id", "=", id)
        .where("removed_at", "is", null)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return undefined;
      if (patch.name !== undefined) await bumpDirectory(db, workspaceId);
      return this.get(workspaceId, id);
    },
    async remove(workspaceId, id, at) {
      // The token hash is replaced too, so the removed agent's token can never match again.
      const result = await db
        .updateTable("agents")
        .set({ removed_at: at, updated_at: at, token_hash: `removed:${id}` })
        .where("workspace_id", "=", workspaceId)
        .where("id", "=", id)
        .where("removed_at", "is", null)
        .executeTakeFirst();
      const removed = Number(result.numUpdatedRows) > 0;
      if (removed) await bumpDirectory(db, workspaceId);
      return removed;
    },
  };
}

/** Each post looks up the agents it addresses; built and compiled once (compiledOnce.ts). */
const getAgent = compiledOnce("agents.get", (db: Db, workspaceId: string, id: string) =>
  db
    .selectFrom("agents")
    .select(AGENT_COLUMNS)
    .where("workspace_id", "=", workspaceId)
    .where("id", "=", id)
    .where("removed_at", "is", null),
);
