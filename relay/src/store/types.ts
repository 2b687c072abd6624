import type { Role, Scope } from "../auth/scopes";

export interface Workspace {
  id: string;
  slug: string;
  name: string;
  created_at: string;
}

export interface User {
  id: string;
  workspace_id: string;
  name: string;
  role: Role;
  created_at: string;
  removed_at: string | null;
}

/** An API key as stored: never the secret, only its SHA-256 and a short hint for people to recognise it. */
export interface ApiKey {
  id: string;
  workspace_id: string;
  user_id: string;
  name: string;
  scopes: Scope[];
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

/** Everything a request needs to know about the key it came with. */
export interface KeyOwner {
  key: ApiKey;
  user: User;
  workspace: Workspace;
}

export interface NewApiKey {
  id: string;
  workspaceId: string;
  userId: string;
  name: string;
  scopes: Scope[];
  secretHash: string;
  hint: string;
  createdAt: string;
}

/** The relay's data layer. Routes use only this; SQLite implements it now, PostgreSQL can later. */
export interface Store {
  readonly workspaces: {
    create(input: { id: string; slug: string; name: string; createdAt: string }): Promise<Workspace>;
    getBySlug(slug: string): Promise<Workspace | undefined>;
    count(): Promise<number>;
  };
  readonly users: {
    create(input: { id: string; workspaceId: string; name: string; role: Role; createdAt: string }): Promise<User>;
    get(workspaceId: string, id: string): Promise<User | undefined>;
    remove(workspaceId: string, id: string, at: string): Promise<boolean>;
  };
  readonly apiKeys: {
    create(input: NewApiKey): Promise<ApiKey>;
    findOwnerByHash(secretHash: string): Promise<KeyOwner | undefined>;
    get(workspaceId: string, id: string): Promise<ApiKey | undefined>;
    listForUser(workspaceId: string, userId: string): Promise<ApiKey[]>;
    revoke(workspaceId: string, id: string, at: string): Promise<boolean>;
  };
  /** Runs `fn` atomically: all of its writes happen, or none. */
  transaction<T>(fn: (store: Store) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
