import { ROLES, SCOPES, type Role, type Scope } from "@tab-relay/shared";

/**
 * The scope catalogue and the roles belong to the API (shared/src/protocol/api.ts); what each role may hold is the
 * relay's. A key holds the scopes it was created with, intersected with its user's role.
 */
export { ROLES, SCOPES, type Role, type Scope };

const ALL: readonly Scope[] = SCOPES;

/** What each role may ever do, whatever scopes a key names. */
export const ROLE_SCOPES: Readonly<Record<Role, readonly Scope[]>> = {
  owner: ALL,
  admin: ALL,
  member: SCOPES.filter((s) => s !== "users.write"),
  guest: ["workspace.read", "apps.read", "files.read", "tab.complete", "messages.read", "messages.write"],
};

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
