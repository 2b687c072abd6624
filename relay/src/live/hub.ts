import type { Api } from "@tab-relay/shared";
import type { WebSocket } from "ws";
import type { Scope } from "../auth/scopes";
import type { Clock } from "../clock";
import { presentMessage } from "../conversations/present";
import type { SessionsOf } from "../bus/types";
import type { Links } from "../links";
import type { Logger } from "../logger";
import type { Conversation, Message, Store, User } from "../store/types";

/** Who a live connection belongs to, as its session stands now. */
export interface LiveViewer {
  user: User;
  /** The session key's scopes within the user's role. */
  scopes: ReadonlySet<Scope>;
}

export interface LiveClient extends LiveViewer {
  socket: WebSocket;
  workspaceId: string;
  /** The key the session acts with: a key has a cap on open live connections. */
  keyId: string;
  /** The session worked out again (the user's role may have changed), or undefined once it has ended. */
  refresh(): Promise<LiveViewer | undefined>;
}

/** How often live connections are checked: a ping for liveness and a look at the session behind them. */
export const LIVE_CHECK_MS = 15_000;
/** Open live connections per API key, on all relays sharing Redis (a console tab holds one). */
export const MAX_LIVE_SOCKETS_PER_KEY = 10;

/** Close codes the console sees (4000-4999 are the application's). */
export const LIVE_CLOSE = {
  /** Signed out, the key revoked, the user removed, or the session ended by a newer sign-in past the cap. */
  ended: { code: 4001, reason: "session ended" },
  /** The session's key no longer holds `messages.read` or `agents.read` within the user's role. */
  scopes: { code: 4003, reason: "live updates need messages.read or agents.read" },
  shutdown: { code: 1001, reason: "relay shutting down" },
} as const;

/** Whether a session may hold a live connection: it carries messages and agent changes, so it needs one of those. */
export function mayListen(scopes: ReadonlySet<Scope>): boolean {
  return scopes.has("messages.read") || scopes.has("agents.read");
}

interface Held {
  client: LiveClient;
  /** Answered the last ping. */
  alive: boolean;
}

/**
 * Live updates for the console: every signed-in browser holds a WebSocket, and each new message goes to the
 * connections of the people who may see its conversation (its members; for a public channel, every member of the
 * workspace but guests) whose session holds `messages.read`; agent changes go to those holding `agents.read`.
 * Nothing else about a conversation leaves the relay this way.
 */
export function createLiveHub(deps: { store: Store; links: Links; logger: Logger; clock: Clock; checkMs?: number }) {
  const held = new Set<Held>();
  const checkMs = deps.checkMs ?? LIVE_CHECK_MS;

  /** Asks the session behind a socket again and follows it: new frames for a changed role, a close once it ended. */
  function recheck(client: LiveClient): void {
    client.refresh().then(
      (viewer) => {
        if (client.socket.readyState !== client.socket.OPEN) return;
        if (!viewer) return client.socket.close(LIVE_CLOSE.ended.code, LIVE_CLOSE.ended.reason);
        // Frames from now on follow the session as it is, not as it was when the socket opened.
        client.user = viewer.user;
        client.scopes = viewer.scopes;
        if (!mayListen(viewer.scopes)) client.socket.close(LIVE_CLOSE.scopes.code, LIVE_CLOSE.scopes.reason);
      },
      // A database hiccup is no reason to drop people; the next check asks again.
      (error: unknown) => deps.logger.warn("could not recheck a live session", { error }),
    );
  }

  let check = deps.clock.setTimeout(function recheckAll() {
    for (const entry of held) {
      const { client } = entry;
      if (!entry.alive) {
        client.socket.terminate();
        continue;
      }
      entry.alive = false;
      client.socket.ping();
      recheck(client);
    }
    check = deps.clock.setTimeout(recheckAll, checkMs);
  }, checkMs);

  function send(client: LiveClient, frame: Api.LiveEvent): void {
    if (client.socket.readyState === client.socket.OPEN) client.socket.send(JSON.stringify(frame));
  }

  return {
    /** Whether anyone in the workspace reads messages here (so a message need not be read back for nobody). */
    listening(workspaceId: string): boolean {
      for (const { client } of held)
        if (client.workspaceId === workspaceId && client.scopes.has("messages.read")) return true;
      return false;
    },

    add(client: LiveClient): void {
      const entry: Held = { client, alive: true };
      held.add(entry);
      client.socket.on("pong", () => (entry.alive = true));
      client.socket.on("close", () => held.delete(entry));
      // The console only listens; anything it sends is ignored.
      client.socket.on("message", () => undefined);
      send(client, { type: "hello", user: { id: client.user.id, name: client.user.name, role: client.user.role } });
    },

    async messagePosted(conversation: Conversation, message: Message): Promise<void> {
      const audience = [...held]
        .map((entry) => entry.client)
        .filter((client) => client.workspaceId === conversation.workspace_id && client.scopes.has("messages.read"));
      if (audience.length === 0) return;
      const members = new Set((await deps.store.conversations.members(conversation.id)).map((member) => member.id));
      const open = conversation.type === "channel" && conversation.visibility === "public";
      const frame: Api.LiveEvent = {
        type: "message.created",
        conversation: { type: conversation.type, id: conversation.id },
        message: presentMessage(message, conversation, deps.links, { kind: "person" }),
      };
      for (const client of audience) {
        // Asked again after the await: a check meanwhile may have taken the scope away or changed the role.
        if (!client.scopes.has("messages.read")) continue;
        if (members.has(client.user.id) || (open && client.user.role !== "guest")) send(client, frame);
      }
    },

    /**
     * Sessions of a key or a person ended or changed, here or on another relay: their sockets here are rechecked now
     * rather than at the next periodic check, so a signed-out console stops receiving at once.
     */
    sessionsChanged(workspaceId: string, of: SessionsOf): void {
      for (const { client } of held) {
        if (client.workspaceId !== workspaceId) continue;
        if ("keyId" in of ? client.keyId === of.keyId : client.user.id === of.userId) recheck(client);
      }
    },

    agentUpdated(workspaceId: string, agentId: string): void {
      for (const { client } of held) {
        if (client.workspaceId === workspaceId && client.scopes.has("agents.read"))
          send(client, { type: "agent.updated", agent_id: agentId });
      }
    },

    /** Console sockets open now. */
    connections(): number {
      return held.size;
    },

    close(): void {
      deps.clock.clearTimeout(check);
      for (const { client } of held) client.socket.close(LIVE_CLOSE.shutdown.code, LIVE_CLOSE.shutdown.reason);
      deps.logger.debug("live connections closed");
    },
  };
}

export type LiveHub = ReturnType<typeof createLiveHub>;
