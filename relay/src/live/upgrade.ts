import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { API_PREFIX, RelayError } from "@tab-relay/shared";
import type { ServerOptions, WebSocket, WebSocketServer } from "ws";
import { effectiveScopes } from "../auth/apiKeys";
import { endWithError } from "../http/clientErrors";
import { lazyRequire } from "../lazyRequire";
import { hostFields } from "../http/requestContext";
import { resolveAgentToken } from "../http/authenticateAgent";
import { type RatePolicy, countRequest, rateLimitHeaders } from "../http/rateLimit";
import { rateLimitAddress } from "../http/clientAddress";
import { readCookie, resolveSession, sessionBucket, sessionCookieName } from "../auth/sessions";
import type { Clock } from "../clock";
import type { RateLimits } from "../config";
import type { Links } from "../links";
import type { LogFields, Logger } from "../logger";
import type { Metrics } from "../metrics";
import type { RateLimitStore } from "../rateLimit/types";
import type { Store } from "../store/types";
import { type AgentSockets, MAX_SOCKETS_PER_AGENT } from "./agentSockets";
import { type LiveHub, MAX_LIVE_SOCKETS_PER_KEY, mayListen } from "./hub";
import type { SocketSlots } from "./socketSlots";

export const LIVE_PATHS = new Set([`${API_PREFIX}/live`, "/v1/live"]);
export const AGENT_SOCKET_PATHS = new Set([`${API_PREFIX}/agent-api/socket`, "/v1/agent-api/socket"]);

/** The console never sends anything on its live socket; a few KiB covers any stray frame a browser might. */
export const LIVE_MAX_FRAME_BYTES = 4 * 1024;
/** Socket Mode clients send acknowledgements (about 100 bytes of JSON); a frame this large is no ack. */
export const AGENT_MAX_FRAME_BYTES = 64 * 1024;

/**
 * ws is loaded with the first upgrade let through, not at start: a relay nobody opens a console or Socket Mode
 * connection to never needs it (about 1.2 MB of heap once loaded, more resident; docs/benchmarks.md, issue 23).
 */
const loadWs = lazyRequire<{ WebSocketServer: typeof WebSocketServer }>("ws");

/** ws 8.23's options that @types/ws 8.18 does not know yet (both read in node_modules/ws/lib/websocket.js). */
interface NewerServerOptions extends ServerOptions {
  closeTimeout: number;
  maxPendingAutoPongs: number;
}

/**
 * Every option of ws's server side, set on purpose (read in node_modules/ws/lib/websocket-server.js, websocket.js
 * and receiver.js of ws 8.23.0). A frame that breaks one of these limits makes ws emit `error` on the socket, which
 * `guard` below turns into closing that one socket.
 */
function socketServer(limits: {
  maxPayload: number;
  maxFragments: number;
  maxBufferedChunks: number;
}): WebSocketServer {
  const options: NewerServerOptions = {
    // Upgrades are routed, authenticated and counted here first, so a refusal can carry the API's error envelope
    // (a verifyClient hook cannot); ws only completes the handshakes let through. So: no port, server or path.
    noServer: true,
    // The largest message accepted, after reassembling fragments; beyond it ws closes with 1009.
    maxPayload: limits.maxPayload,
    // One message is one frame from every client we serve; a message split into many tiny fragments costs a buffer
    // each and is cut off (1008) instead.
    maxFragments: limits.maxFragments,
    // A frame is buffered chunk by chunk until it is whole: a client dribbling it a few bytes per TCP segment would
    // pin thousands of small buffers per socket. Ordinary clients send a frame in a handful of segments.
    maxBufferedChunks: limits.maxBufferedChunks,
    // Off: inflating costs CPU and memory per socket, and a small compressed frame can inflate to a bomb; the
    // frames here are small JSON. A client's RSV1 bit then is a protocol error (1002).
    perMessageDeflate: false,
    // Text frames must be valid UTF-8 (RFC 6455 §8.1): bad bytes close the socket with 1007 instead of reaching JSON.parse.
    skipUTF8Validation: false,
    // The live hub and the Socket Mode registry hold every socket they serve; a second set inside ws would only
    // duplicate them (and keep closed sockets' bookkeeping in two places).
    clientTracking: false,
    // A ping must be answered (RFC 6455 §5.5.2) and some clients use it as their own liveness check...
    autoPong: true,
    // ...but a client that pings while never reading the pongs would grow our send buffer: past this many pongs not
    // yet written out, ws terminates the socket.
    maxPendingAutoPongs: 8,
    // One message per turn of the event loop: a burst of frames in one TCP read cannot hold the loop away from
    // every other socket and HTTP request. Acks are rare, so the deferral costs nothing.
    allowSynchronousEvents: false,
    // After the relay closes a socket, a client that never answers the close frame is cut off after this (ws's
    // default is 30 s); a real client answers within milliseconds.
    closeTimeout: 5_000,
    // Neither endpoint speaks a subprotocol; ws's default would echo the first one offered, claiming one we do not.
    handleProtocols: () => false,
  };
  return new (loadWs().WebSocketServer)(options);
}

/** The host of an Origin header; opaque origins ("null") have none. */
function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}

/** ws's own test of the key (websocket-server.js `keyRegex`): 16 bytes in base64. */
const HANDSHAKE_KEY = /^[+/0-9A-Za-z]{22}==$/;

/** RFC 9110 §5.6.2 `tchar`, the characters of a token: ws's `tokenChars` table (node_modules/ws/lib/validation.js). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * What ws's handleUpgrade would refuse in a Sec-WebSocket-Protocol header (RFC 6455 §4.1: a comma-separated list of
 * protocol names, each a token, none twice), by the rules of its parser (node_modules/ws/lib/subprotocol.js `parse`,
 * ws 8.23): blanks and tabs around a name, nothing else. Repeated headers arrive joined with ", " by Node, as ws sees them.
 */
function subprotocolProblem(header: string): string | undefined {
  const seen = new Set<string>();
  for (const entry of header.split(",")) {
    const name = entry.replace(/^[ \t]+|[ \t]+$/g, "");
    if (name === "")
      return header.trim() === "" ? "empty; send the header only to offer protocols" : "an empty entry in the list";
    if (!TOKEN.test(name))
      return `${JSON.stringify(name)} is not a protocol name (a token: letters, digits and !#$%&'*+-.^_\`|~)`;
    if (seen.has(name)) return `${JSON.stringify(name)} is offered twice`;
    seen.add(name);
  }
  return undefined;
}

/**
 * What is wrong with a handshake, named by its header, or undefined. Checked before anything touches the database;
 * ws checks the same again in handleUpgrade, but its refusals are bare text, not the API's error envelope.
 */
function handshakeProblem(req: IncomingMessage): RelayError | undefined {
  if (req.method !== "GET")
    return new RelayError(
      "VALIDATION_ERROR",
      `method: a WebSocket handshake is a GET request, not ${req.method ?? "none"}`,
    );
  // Node checks Host only for requests it hands to the app, not for upgrades (lib/_http_server.js parserOnIncoming).
  if (req.headers.host === undefined)
    return new RelayError("VALIDATION_ERROR", "Host: required in a WebSocket handshake (RFC 6455 §4.1)");
  if (hostFields(req.rawHeaders) > 1)
    return new RelayError("VALIDATION_ERROR", "Host: sent more than once; send one Host header (RFC 9112 §3.2)");
  if (req.headers.upgrade?.toLowerCase() !== "websocket")
    return new RelayError("VALIDATION_ERROR", "Upgrade: must be `websocket`");
  const key = req.headers["sec-websocket-key"];
  if (key === undefined || !HANDSHAKE_KEY.test(key)) {
    return new RelayError("VALIDATION_ERROR", "Sec-WebSocket-Key: missing, or not 16 bytes in base64");
  }
  if (req.headers["sec-websocket-version"] !== "13") {
    // RFC 6455 §4.2.2: the refusal names the versions the server speaks.
    return new RelayError("VALIDATION_ERROR", "Sec-WebSocket-Version: must be 13", {
      headers: { "Sec-WebSocket-Version": "13" },
    });
  }
  const protocols = req.headers["sec-websocket-protocol"];
  const protocolProblem = protocols === undefined ? undefined : subprotocolProblem(protocols);
  if (protocolProblem !== undefined)
    return new RelayError("VALIDATION_ERROR", `Sec-WebSocket-Protocol: ${protocolProblem}`);
  return undefined;
}

export interface UpgradeDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  links: Pick<Links, "base">;
  live: LiveHub;
  agentSockets: AgentSockets;
  /** The places under the per-key and per-agent socket caps (in Redis when relays share one). */
  socketSlots: SocketSlots;
  rateLimitStore: RateLimitStore;
  limits: Readonly<RateLimits>;
  windowMs: number;
  /** The client's address, as the HTTP API names it: upgrades whose credentials do not resolve count against it. */
  clientAddress(req: IncomingMessage): string;
}

/**
 * Routes WebSocket upgrades: `/api/v1/live` for the console (its session cookie, from a page of this same origin)
 * and `/api/v1/agent-api/socket` for Socket Mode agents (their bearer token). Everything else is refused. Each
 * upgrade counts as a read against the same limits as the HTTP requests of its credentials.
 */
export function attachUpgrades(server: Server, deps: UpgradeDeps) {
  // Each made with the first handshake it completes (see loadWs).
  let liveServer: WebSocketServer | undefined;
  let agentServer: WebSocketServer | undefined;
  const liveSockets = () =>
    (liveServer ??= socketServer({ maxPayload: LIVE_MAX_FRAME_BYTES, maxFragments: 4, maxBufferedChunks: 256 }));
  const agentSocketServer = () =>
    (agentServer ??= socketServer({ maxPayload: AGENT_MAX_FRAME_BYTES, maxFragments: 16, maxBufferedChunks: 1024 }));
  const rate = { store: deps.rateLimitStore, clock: deps.clock, metrics: deps.metrics, windowMs: deps.windowMs };
  /** Answers a refused upgrade with the API's error envelope and closes the connection once it is written. */
  const refuse = (socket: Duplex, error: RelayError, headers: Record<string, string> = {}) =>
    endWithError(socket, error, { now: deps.clock.now(), headers });

  /**
   * Without an `error` listener a bad frame (too large, invalid UTF-8, unmasked, a reserved opcode...) would be an
   * uncaught exception and stop the relay. ws has already sent the close frame with the reason when it emits.
   */
  function guard(ws: WebSocket, fields: LogFields): void {
    ws.on("error", (error: Error & { code?: string }) => {
      deps.logger.warn("websocket closed after a bad frame", {
        ...fields,
        code: error.code ?? "unknown",
        reason: error.message,
      });
      ws.terminate();
    });
  }

  /**
   * Takes a place under `subject`'s cap for this connection, held until the TCP connection closes (the WebSocket's
   * close, a handshake that never completes, a client gone meanwhile): true if one was free.
   */
  async function holdSlot(socket: Duplex, subject: string, cap: number): Promise<boolean> {
    const slot = await deps.socketSlots.take(subject, cap);
    if (!slot) return false;
    if (socket.destroyed) slot.release();
    else socket.once("close", () => slot.release());
    return true;
  }

  async function upgradeLive(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // Browsers send cookies on cross-site WebSocket handshakes too; only a page of this origin may listen.
    const origin = req.headers.origin;
    if (origin !== undefined && originHost(origin) !== req.headers.host) {
      return refuse(socket, new RelayError("FORBIDDEN", "Live updates are only for pages of this relay"));
    }
    const token = readCookie(req.headers.cookie, sessionCookieName(deps.links.base()));
    const found = token === undefined ? undefined : await resolveSession(deps.store, deps.clock, token);
    const resolved = found?.resolved;
    // Like an HTTP request: a session's key pays from its session reads, anything unresolved from its address.
    const policy: RatePolicy = resolved
      ? { bucket: sessionBucket(resolved.owner.key.id, "read"), limit: deps.limits.session_reads, label: "read" }
      : { bucket: `ip:${rateLimitAddress(deps.clientAddress(req))}:read`, limit: deps.limits.reads, label: "read" };
    const decision = await countRequest(rate, policy);
    const headers = rateLimitHeaders(decision);
    if (decision.refused) return refuse(socket, decision.refused, headers);
    if (token === undefined || found === undefined)
      return refuse(socket, new RelayError("UNAUTHORIZED", "Sign in to the console first"), headers);
    if (found.error || !resolved)
      return refuse(socket, found.error ?? new RelayError("UNAUTHORIZED", "Sign in again"), headers);
    const { key, user, workspace } = resolved.owner;
    const scopes = effectiveScopes(key, user);
    if (!mayListen(scopes)) {
      return refuse(
        socket,
        new RelayError(
          "FORBIDDEN",
          "This session's key holds neither messages.read nor agents.read; live updates need one of them",
        ),
        headers,
      );
    }
    if (!(await holdSlot(socket, `live:${key.id}`, MAX_LIVE_SOCKETS_PER_KEY))) {
      const message = `This API key already has ${MAX_LIVE_SOCKETS_PER_KEY} live connections open; close one (a console tab) and retry`;
      return refuse(socket, new RelayError("RATE_LIMIT_EXCEEDED", message), headers);
    }
    liveSockets().handleUpgrade(req, socket, head, (ws) => {
      guard(ws, { kind: "live", user_id: user.id, key_id: key.id });
      deps.live.add({
        socket: ws,
        workspaceId: workspace.id,
        keyId: key.id,
        user,
        scopes,
        async refresh() {
          const now = await resolveSession(deps.store, deps.clock, token);
          if (now.error || !now.resolved) return undefined;
          return {
            user: now.resolved.owner.user,
            scopes: effectiveScopes(now.resolved.owner.key, now.resolved.owner.user),
          };
        },
      });
    });
  }

  async function upgradeAgent(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const { caller: found, error } = await resolveAgentToken(deps.store, req.headers.authorization);
    // The Agent API's read counters (routes/agentApi.ts): the agent's own, or the address's when the token is unknown.
    const subject = found ? `agent:${found.agent.id}` : `agent-api:ip:${rateLimitAddress(deps.clientAddress(req))}`;
    const decision = await countRequest(rate, {
      bucket: `${subject}:read`,
      limit: deps.limits.agent_reads,
      label: "read",
    });
    const headers = rateLimitHeaders(decision);
    if (decision.refused) return refuse(socket, decision.refused, headers);
    if (error || !found)
      return refuse(socket, error ?? new RelayError("INVALID_TOKEN", "Invalid agent token"), headers);
    const { agent } = found;
    if (!(await holdSlot(socket, `agent:${agent.id}`, MAX_SOCKETS_PER_AGENT))) {
      const message = `This agent already has ${MAX_SOCKETS_PER_AGENT} Socket Mode connections open; close one and retry`;
      return refuse(socket, new RelayError("RATE_LIMIT_EXCEEDED", message), headers);
    }
    agentSocketServer().handleUpgrade(req, socket, head, (ws) => {
      guard(ws, { kind: "agent", agent_id: agent.id });
      deps.logger.info("agent socket connected", { agent_id: agent.id });
      ws.on("close", (code) => deps.logger.info("agent socket closed", { agent_id: agent.id, code }));
      deps.agentSockets.add(agent, ws);
    });
  }

  function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> | void {
    let path: string;
    try {
      path = new URL(req.url ?? "/", "http://relay").pathname;
    } catch {
      return refuse(socket, new RelayError("VALIDATION_ERROR", "path: not a valid request target"));
    }
    const live = LIVE_PATHS.has(path);
    if (!live && !AGENT_SOCKET_PATHS.has(path))
      return refuse(socket, new RelayError("NOT_FOUND", `No WebSocket endpoint at ${path}`));
    const problem = handshakeProblem(req);
    if (problem) return refuse(socket, problem);
    return live ? upgradeLive(req, socket, head) : upgradeAgent(req, socket, head);
  }

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    Promise.resolve()
      .then(() => upgrade(req, socket, head))
      .catch((error: unknown) => {
        // A RelayError is an answer (the database not answering is a 503 with Retry-After); anything else is a bug.
        if (error instanceof RelayError) return refuse(socket, error);
        deps.logger.error("websocket upgrade failed", { error });
        refuse(socket, new RelayError("INTERNAL_ERROR", "Internal error"));
      });
  });
  return {
    close: () => {
      liveServer?.close();
      agentServer?.close();
    },
  };
}
