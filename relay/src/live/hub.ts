import type { WebSocket } from "ws";
import { presentMessage } from "../conversations/present";
import type { Links } from "../links";
import type { Logger } from "../logger";
import type { Conversation, Message, Store, User } from "../store/types";

interface Client {
  socket: WebSocket;
  workspaceId: string;
  user: User;
  /** Checks the session still stands (not signed out, key not revoked, user not removed). */
  stillValid(): Promise<boolean>;
}

/** How often live connections are checked: a ping for liveness and a look at the session behind them. */
const CHECK_MS = 15_000;

/**
 * Live updates for the console: every signed-in browser holds a WebSocket, and each new message goes to the
 * connections of the people who may see its conversation (its members; for a public channel, every member of the
 * workspace but guests). Nothing else about a conversation leaves the relay this way.
 */
export function createLiveHub(deps: { store: Store; links: Links; logger: Logger }) {
  const clients = new Set<Client>();

  const check = setInterval(() => {
    for (const client of clients) {
      const alive = client.socket as WebSocket & { alive?: boolean };
      if (alive.alive === false) {
        client.socket.terminate();
        continue;
      }
      alive.alive = false;
      client.socket.ping();
      void client.stillValid().then(
        (valid) => {
          if (!valid) client.socket.close(4001, "session ended");
        },
        () => undefined,
      );
    }
  }, CHECK_MS);
  check.unref();

  function send(client: Client, frame: unknown): void {
    if (client.socket.readyState === client.socket.OPEN) client.socket.send(JSON.stringify(frame));
  }

  return {
    /** Whether anyone in the workspace is listening here (so a message need not be read back for nobody). */
    listening(workspaceId: string): boolean {
      for (const client of clients) if (client.workspaceId === workspaceId) return true;
      return false;
    },

    add(client: Client): void {
      clients.add(client);
      (client.socket as WebSocket & { alive?: boolean }).alive = true;
      client.socket.on("pong", () => ((client.socket as WebSocket & { alive?: boolean }).alive = true));
      client.socket.on("close", () => clients.delete(client));
      // The console only listens; anything it sends is ignored.
      client.socket.on("message", () => undefined);
      send(client, { type: "hello", user: { id: client.user.id, name: client.user.name, role: client.user.role } });
    },

    async messagePosted(conversation: Conversation, message: Message): Promise<void> {
      const audience = [...clients].filter((client) => client.workspaceId === conversation.workspace_id);
      if (audience.length === 0) return;
      const members = new Set((await deps.store.conversations.members(conversation.id)).map((member) => member.id));
      const open = conversation.type === "channel" && conversation.visibility === "public";
      const frame = {
        type: "message.created",
        conversation: { type: conversation.type, id: conversation.id },
        message: presentMessage(message, conversation, deps.links, { kind: "person" }),
      };
      for (const client of audience) {
        if (members.has(client.user.id) || (open && client.user.role !== "guest")) send(client, frame);
      }
    },

    agentUpdated(workspaceId: string, agentId: string): void {
      for (const client of clients) if (client.workspaceId === workspaceId) send(client, { type: "agent.updated", agent_id: agentId });
    },

    close(): void {
      clearInterval(check);
      for (const client of clients) client.socket.close(1001, "relay shutting down");
      deps.logger.debug("live connections closed");
    },
  };
}

export type LiveHub = ReturnType<typeof createLiveHub>;
