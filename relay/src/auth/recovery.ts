import type { WallClock } from "../clock";
import { createSortableIds } from "../store/sortableIds";
import type { ApiKey, Store, User, Workspace } from "../store/types";
import { createApiKey } from "./apiKeys";
import { ROLE_SCOPES, SCOPES, type Scope, isScope } from "./scopes";

export const DEFAULT_RECOVERY_KEY_NAME = "Created with tab-relay keys create";

export interface RecoveryKeyRequest {
  /** The workspace's slug; needed only when the database holds more than one. */
  workspace?: string | undefined;
  /** A user id, or the workspace's earliest-added owner still in it. */
  user: { id: string } | "owner";
  /** Scope names as typed; every scope the role allows when absent. */
  scopes?: readonly string[] | undefined;
  name?: string | undefined;
}

export interface RecoveryKey {
  workspace: Workspace;
  user: User;
  key: ApiKey;
  /** Shown once, like every key's. */
  secret: string;
}

/** A request the database cannot satisfy; the message starts with the flag that named it. */
export class RecoveryKeyError extends Error {
  override readonly name = "RecoveryKeyError";
}

/**
 * Makes an API key with nothing but access to the database: the way back in when every owner key is lost or was
 * revoked. It only adds a row, so it is safe beside a relay serving the same database: on SQLite the relay remembers
 * only keys it has already looked up (relay/src/store/sqlite.ts), so the new key is read from the file on its first
 * use, and on PostgreSQL every request reads its key anyway.
 */
export async function createRecoveryKey(
  store: Store,
  clock: WallClock,
  request: RecoveryKeyRequest,
): Promise<RecoveryKey> {
  const name = (request.name ?? DEFAULT_RECOVERY_KEY_NAME).trim();
  if (name === "" || name.length > 100) throw new RecoveryKeyError("--name: must be 1-100 characters");
  const named = request.scopes && parseScopes(request.scopes);
  return store.transaction(async (tx) => {
    const workspace = await pickWorkspace(tx, request.workspace);
    const user = await pickUser(tx, workspace, request.user);
    const allowed = ROLE_SCOPES[user.role];
    const beyond = named?.filter((scope) => !allowed.includes(scope)) ?? [];
    if (beyond.length > 0)
      throw new RecoveryKeyError(
        `--scopes: ${user.name} is ${article(user.role)} ${user.role}, who cannot hold ${beyond.join(", ")}`,
      );
    const scopes = named ?? allowed;
    const { key, secret } = await createApiKey(tx, clock, { workspaceId: workspace.id, user, name, scopes });
    // Made at the machine, by whoever can open the database: no person or address of the workspace to name.
    await tx.audit.create({
      id: createSortableIds(clock)("aud"),
      workspace_id: workspace.id,
      at: key.created_at,
      action: "api_key.created",
      actor_user_id: null,
      via: "cli",
      via_id: null,
      address: "local",
      target_type: "api_key",
      target_id: key.id,
      details: JSON.stringify({ name: key.name, scopes: key.scopes, holder_user_id: user.id }),
    });
    return { workspace, user, key, secret };
  });
}

function parseScopes(typed: readonly string[]): Scope[] {
  const names = typed.map((scope) => scope.trim()).filter((scope) => scope !== "");
  if (names.length === 0) throw new RecoveryKeyError(`--scopes: name at least one of ${SCOPES.join(", ")}`);
  const unknown = names.filter((scope) => !isScope(scope));
  if (unknown.length > 0)
    throw new RecoveryKeyError(
      `--scopes: unknown scope ${unknown.map((s) => JSON.stringify(s)).join(", ")}; the scopes are ${SCOPES.join(", ")}`,
    );
  // In the catalogue's order, each once, as the API shows them.
  return SCOPES.filter((scope) => names.includes(scope));
}

async function pickWorkspace(store: Store, slug: string | undefined): Promise<Workspace> {
  if (slug !== undefined) {
    const workspace = await store.workspaces.getBySlug(slug);
    if (!workspace) throw new RecoveryKeyError(`--workspace: no workspace "${slug}" in the database`);
    return workspace;
  }
  const workspaces = await store.workspaces.list();
  if (workspaces.length === 1) return workspaces[0] as Workspace;
  if (workspaces.length === 0) throw new RecoveryKeyError("no workspace in the database: run `tab-relay init` first");
  throw new RecoveryKeyError(
    `--workspace: the database holds ${workspaces.length} workspaces (${workspaces.map((w) => w.slug).join(", ")}); name one with --workspace SLUG`,
  );
}

async function pickUser(store: Store, workspace: Workspace, wanted: RecoveryKeyRequest["user"]): Promise<User> {
  if (wanted === "owner") {
    // Users are listed as added, without those removed.
    const owner = (await store.users.list(workspace.id)).find((user) => user.role === "owner");
    if (!owner)
      throw new RecoveryKeyError(`--owner: workspace ${workspace.slug} has no owner left; name someone with --user ID`);
    return owner;
  }
  const user = await store.users.get(workspace.id, wanted.id);
  if (!user) throw new RecoveryKeyError(`--user: no user ${wanted.id} in workspace ${workspace.slug}`);
  if (user.removed_at !== null) {
    throw new RecoveryKeyError(
      `--user: ${user.id} (${user.name}) was removed from workspace ${workspace.slug} at ${user.removed_at}; a removed person's keys are refused`,
    );
  }
  return user;
}

function article(role: string): string {
  return /^[aeiou]/.test(role) ? "an" : "a";
}
