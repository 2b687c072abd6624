import { RelayError } from "@tab-relay/shared";
import { z } from "zod";
import { createApiKey } from "../auth/apiKeys";
import { SCOPES } from "../auth/scopes";
import { newId } from "../auth/secrets";
import type { WallClock } from "../clock";
import { createSortableIds } from "../store/sortableIds";
import type { Conversation, Store, User, Workspace } from "../store/types";

export const WorkspaceSlug = z
  .string()
  .regex(/^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/, "must be 1-64 lowercase letters, digits or inner hyphens");

export interface InitializedWorkspace {
  workspace: Workspace;
  user: User;
  apiKey: string;
  /** The public `#general` the owner is in, when asked for. */
  general?: Conversation | undefined;
}

/** The channel `tab-relay init` starts a workspace with, so there is somewhere to talk (and mention an agent) at once. */
export const GENERAL_CHANNEL = "general";

/**
 * Creates a workspace, its owner, and an owner key with every scope, all in one transaction; with `general`, also a
 * public #general with the owner in it (the CLI's init asks for it; tests that build their own channels do not).
 */
export async function initWorkspace(
  store: Store,
  clock: WallClock,
  input: { slug: string; name?: string | undefined; ownerName: string; general?: boolean },
): Promise<InitializedWorkspace> {
  const slug = WorkspaceSlug.safeParse(input.slug);
  if (!slug.success)
    throw new RelayError("VALIDATION_ERROR", `workspace: ${slug.error.issues[0]?.message ?? "invalid"}`);
  const ownerName = input.ownerName.trim();
  if (ownerName === "" || ownerName.length > 100)
    throw new RelayError("VALIDATION_ERROR", "owner: must be 1-100 characters");
  return store.transaction(async (tx) => {
    if (await tx.workspaces.getBySlug(slug.data)) {
      throw new RelayError("VALIDATION_ERROR", `workspace: a workspace with the slug "${slug.data}" already exists`);
    }
    const now = new Date(clock.now()).toISOString();
    const workspace = await tx.workspaces.create({
      id: newId("ws"),
      slug: slug.data,
      name: input.name?.trim() || slug.data,
      createdAt: now,
    });
    const user = await tx.users.create({
      id: newId("usr"),
      workspaceId: workspace.id,
      name: ownerName,
      role: "owner",
      createdAt: now,
    });
    const { secret } = await createApiKey(tx, clock, {
      workspaceId: workspace.id,
      user,
      name: "Owner key (created by init)",
      scopes: SCOPES,
    });
    let general: Conversation | undefined;
    if (input.general === true) {
      general = await tx.conversations.create({
        id: createSortableIds(clock)("ch"),
        workspace_id: workspace.id,
        type: "channel",
        name: GENERAL_CHANNEL,
        visibility: "public",
        dm_key: null,
        created_by: user.id,
        created_at: now,
      });
      await tx.conversations.addMember(general.id, { id: user.id, type: "user" }, now);
    }
    return { workspace, user, apiKey: secret, general };
  });
}
