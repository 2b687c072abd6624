/**
 * What relays tell each other. With one relay it stays in the process; several relays on one PostgreSQL pass it
 * through LISTEN/NOTIFY, so a message posted through one relay reaches consoles on every relay, an agent paused
 * on one loses its sockets on all, and new events wake every idle delivery worker at once.
 */
export type BusMessage =
  | { topic: "events" }
  | { topic: "message"; workspaceId: string; conversationId: string; messageId: string }
  | { topic: "agent"; workspaceId: string; agentId: string; change: "updated" | "paused" | "token" | "removed" }
  | { topic: "attempt"; workspaceId: string; agentId: string };

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
