import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { API_PREFIX, RelayError } from "@tab-relay/shared";
import { WebSocketServer } from "ws";
import { resolveAgentToken } from "../http/authenticateAgent";
import { SESSION_COOKIE, readCookie, resolveSession } from "../auth/sessions";
import type { Clock } from "../clock";
import type { Logger } from "../logger";
import type { Store } from "../store/types";
import type { AgentSockets } from "./agentSockets";
import type { LiveHub } from "./hub";

export const LIVE_PATHS = new Set([`${API_PREFIX}/live`, "/v1/live"]);
export const AGENT_SOCKET_PATHS = new Set([`${API_PREFIX}/agent-api/socket`, "/v1/agent-api/socket"]);
/** Envelopes are small JSON; a frame this large from a client is not an acknowledgement. */
const MAX_CLIENT_FRAME_BYTES = 64 * 1024;

/** The host of an Origin header; opaque origins ("null") have none. */
function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}

/** Answers a refused upgrade with the API's error envelope and closes the connection. */
function refuse(socket: Duplex, error: RelayError): void {
  const body = JSON.stringify(error.toBody());
  socket.end(
    `HTTP/1.1 ${error.status} ${error.code}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * Routes WebSocket upgrades: `/api/v1/live` for the console (its session cookie, from a page of this same origin)
 * and `/api/v1/agent-api/socket` for Socket Mode agents (their bearer token). Everything else is refused.
 */
export function attachUpgrades(server: Server, deps: { store: Store; clock: Clock; logger: Logger; live: LiveHub; agentSockets: AgentSockets }) {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_FRAME_BYTES });

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const path = new URL(req.url ?? "/", "http://relay").pathname;
    if (LIVE_PATHS.has(path)) {
      // Browsers send cookies on cross-site WebSocket handshakes too; only a page of this origin may listen.
      const origin = req.headers.origin;
      if (origin !== undefined && originHost(origin) !== req.headers.host) {
        return refuse(socket, new RelayError("FORBIDDEN", "Live updates are only for pages of this relay"));
      }
      const token = readCookie(req.headers.cookie, SESSION_COOKIE);
      if (token === undefined) return refuse(socket, new RelayError("UNAUTHORIZED", "Sign in to the console first"));
      const { resolved, error } = await resolveSession(deps.store, deps.clock, token);
      if (error || !resolved) return refuse(socket, error ?? new RelayError("UNAUTHORIZED", "Sign in again"));
      wss.handleUpgrade(req, socket, head, (ws) =>
        deps.live.add({
          socket: ws,
          workspaceId: resolved.owner.workspace.id,
          user: resolved.owner.user,
          stillValid: async () => !(await resolveSession(deps.store, deps.clock, token)).error,
        }),
      );
      return;
    }
    if (AGENT_SOCKET_PATHS.has(path)) {
      const { caller: found, error } = await resolveAgentToken(deps.store, req.headers.authorization);
      if (error || !found) return refuse(socket, error ?? new RelayError("INVALID_TOKEN", "Invalid agent token"));
      wss.handleUpgrade(req, socket, head, (ws) => {
        deps.logger.info("agent socket connected", { agent_id: found.agent.id });
        ws.on("close", (code) => deps.logger.info("agent socket closed", { agent_id: found.agent.id, code }));
        deps.agentSockets.add(found.agent, ws);
      });
      return;
    }
    refuse(socket, new RelayError("NOT_FOUND", `No WebSocket endpoint at ${path}`));
  }

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    upgrade(req, socket, head).catch((error: unknown) => {
      deps.logger.error("websocket upgrade failed", { error });
      refuse(socket, new RelayError("INTERNAL_ERROR", "Internal error"));
    });
  });
  return { close: () => wss.close() };
}
