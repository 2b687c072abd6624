/** The scope catalogue. A key holds the scopes it was created with, intersected with its user's role. */
export const SCOPES = [
  "workspace.read",
  "apps.read",
  "files.read",
  "tab.complete",
  "messages.read",
  "messages.write",
  "agents.read",
  "agents.write",
  "users.write",
  "keys.write",
] as const;
export type Scope = (typeof SCOPES)[number];

export const ROLES = ["owner", "admin", "member", "guest"] as const;
export type Role = (typeof ROLES)[number];

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
