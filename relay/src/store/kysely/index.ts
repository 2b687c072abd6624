import type { Db } from "../schema";
import type { Store } from "../types";
import { agentSocketsStore } from "./agentSockets";
import { auditStore } from "./audit";
import { agentsStore } from "./agents";
import { type OwnerLookup, apiKeysStore } from "./apiKeys";
import { conversationsStore } from "./conversations";
import { eventsStore } from "./events";
import { messagesStore } from "./messages";
import { notificationsStore } from "./notifications";
import { sessionsStore } from "./sessions";
import { usageStore } from "./usage";
import { usersStore } from "./users";
import { workspacesStore } from "./workspaces";

/** Engine-specific shortcuts for the hot path; the SQL stays the portable Kysely query's. */
export interface FastPaths {
  ownerByHash?: OwnerLookup;
  /** PostgreSQL: due events are read `FOR UPDATE SKIP LOCKED`, so relays sharing the database never claim the same one. */
  rowLocks?: boolean;
}

/**
 * A Store over any Kysely connection; the SQL is portable between SQLite and PostgreSQL. Each member is its own file
 * here, named as the member is (the webhook outbox, with its claims and leases, is `events.ts`).
 */
export function createKyselyStore(db: Db, close: () => Promise<void>, fast?: FastPaths, exclusive = true): Store {
  const apiKeys = apiKeysStore(db, fast?.ownerByHash);
  const store: Store = {
    exclusive,
    workspaces: workspacesStore(db),
    users: usersStore(db, { rowLocks: fast?.rowLocks === true }),
    agents: agentsStore(db),
    conversations: conversationsStore(db),
    messages: messagesStore(db),
    events: eventsStore(db, { rowLocks: fast?.rowLocks === true }),
    notifications: notificationsStore(db),
    agentSockets: agentSocketsStore(db),
    sessions: sessionsStore(db, apiKeys),
    apiKeys,
    audit: auditStore(db),
    usage: usageStore(db),
    async transaction(fn) {
      if (db.isTransaction) return fn(store);
      return db
        .transaction()
        .execute((trx) =>
          fn(createKyselyStore(trx, async () => undefined, { rowLocks: fast?.rowLocks === true }, exclusive)),
        );
    },
    close,
  };
  return store;
}
