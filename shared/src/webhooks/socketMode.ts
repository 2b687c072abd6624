/**
 * Socket Mode's protocol, for both ends: the path agents connect to, and the close codes the relay ends a connection
 * with. The client is in @tab-relay/agent (agent/src/socketMode.ts); the relay's end is relay/src/live/.
 */

export const AGENT_SOCKET_PATH = "/api/v1/agent-api/socket";

/** How the relay ends a Socket Mode connection, and whether the client may come back. */
export interface SocketModeClose {
  readonly code: number;
  readonly reason: string;
  /** Reconnecting cannot succeed (the token is replaced, the agent paused or removed): the client stops for good. */
  readonly final: boolean;
}

/**
 * The close codes of Socket Mode, for both ends: the relay closes with these, the client stops on the final ones.
 * 4000-4999 are the application's (RFC 6455 §7.4.2); 1001 is the standard "going away".
 */
export const SOCKET_MODE_CLOSE_CODES = {
  tokenReplaced: { code: 4001, reason: "token replaced", final: true },
  paused: { code: 4003, reason: "agent paused", final: true },
  removed: { code: 4004, reason: "agent removed", final: true },
  shutdown: { code: 1001, reason: "relay shutting down", final: false },
} as const satisfies Record<string, SocketModeClose>;
