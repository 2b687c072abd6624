/**
 * What relays tell each other. With one relay it stays in the process; several relays on one PostgreSQL pass it
 * through LISTEN/NOTIFY, so a message posted through one relay reaches consoles on every relay, an agent paused
 * on one loses its sockets on all, a session signed out on one closes its live sockets on all, and new events wake every idle delivery worker at once.
 */
export type BusMessage =
  /**
   * New events in the outbox. `agentIds`, when given, are the only agents they are for: a worker reads just those
   * agents' events instead of the whole outbox. Without it (a redelivery, a resumed agent, a reconnected bus)
   * every worker looks at everything.
   */
  | { topic: "events"; agentIds?: readonly string[] }
  | { topic: "message"; workspaceId: string; conversationId: string; messageId: string }
  | { topic: "agent"; workspaceId: string; agentId: string; change: "updated" | "paused" | "token" | "removed" }
  | { topic: "attempt"; workspaceId: string; agentId: string }
  /**
   * Console sessions of a key or of a person may have ended or changed (signed out, ended by a newer sign-in, the
   * key revoked, the person removed or given another role): every relay rechecks its live sockets of theirs at once.
   */
  | { topic: "sessions"; workspaceId: string; of: SessionsOf };

/** Whose console sessions a `sessions` message is about: the sessions made from one key, or all of one person's. */
export type SessionsOf = { keyId: string } | { userId: string };

export interface Bus {
  publish(message: BusMessage): void;
  subscribe(handler: (message: BusMessage) => void): void;
  close(): Promise<void>;
}

/** The bus of a relay that runs alone: every message goes straight to this process's handlers. */
export function createLocalBus(): Bus {
  const handlers: ((message: BusMessage) => void)[] = [];
  return {
    publish(message) {
      for (const handler of handlers) handler(message);
    },
    subscribe(handler) {
      handlers.push(handler);
    },
    async close() {
      handlers.length = 0;
    },
  };
}
