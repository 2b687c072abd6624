/** What the signed-in console knows: the session and a cached directory of people and agents. */
import { api } from "./api";
import type { LiveState } from "./live";
import type { Agent, Member, Scope, Session, User } from "@tab-relay/shared/api";

export const app: { session: Session | null; live: LiveState } = { session: null, live: "disconnected" };

export function hasScope(scope: Scope): boolean {
  return app.session?.scopes.includes(scope) ?? false;
}

export function me(): Session["user"] | null {
  return app.session?.user ?? null;
}

export interface Directory {
  users: User[];
  agents: Agent[];
}

let directory: Promise<Directory> | null = null;

/** People and agents, for mentions and names; a missing scope just leaves that half empty. */
export function loadDirectory(fresh = false): Promise<Directory> {
  if (!directory || fresh) {
    directory = Promise.all([
      api<User[]>("GET", "/users").catch(() => [] as User[]),
      hasScope("agents.read")
        ? api<Agent[]>("GET", "/agents").catch(() => [] as Agent[])
        : Promise.resolve([] as Agent[]),
    ]).then(([users, agents]) => ({ users, agents }));
  }
  return directory;
}

export function forgetDirectory(): void {
  directory = null;
}

export function mentionCandidates(dir: Directory): Member[] {
  const self = me()?.id;
  return [
    ...dir.users.filter((u) => u.id !== self).map((u): Member => ({ id: u.id, type: "user", name: u.name })),
    ...dir.agents.map((a): Member => ({ id: a.id, type: "agent", name: a.name })),
  ].sort((a, b) => a.name.localeCompare(b.name));
}
