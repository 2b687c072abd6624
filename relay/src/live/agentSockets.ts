import { SOCKET_MODE_CLOSE_CODES } from "@tab-relay/shared";
import type { WebSocket } from "ws";
import type { Clock } from "../clock";
import type { Logger } from "../logger";
import type { WebhookOutcome } from "../delivery/webhookClient";

/** How long an agent has to acknowledge an envelope before the attempt counts as failed. */
export const ACK_TIMEOUT_MS = 10_000;
/** Ping interval; a socket that has not answered the previous ping by the next one is dead. */
export const HEARTBEAT_MS = 15_000;
/** Open Socket Mode connections per agent, on all relays sharing Redis; more is a runaway reconnect loop or an abuse of the token. */
export const MAX_SOCKETS_PER_AGENT = 10;

/** Why the relay closes an agent's sockets, by the change that closes them; the codes are the protocol's one table. */
export const CLOSE = {
  paused: SOCKET_MODE_CLOSE_CODES.paused,
  token: SOCKET_MODE_CLOSE_CODES.tokenReplaced,
  removed: SOCKET_MODE_CLOSE_CODES.removed,
  shutdown: SOCKET_MODE_CLOSE_CODES.shutdown,
} as const;

export interface AgentRef {
  id: string;
  workspace_id: string;
}

export interface Envelope {
  id: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * Socket Mode: agents without a public URL hold a WebSocket open and receive each event as an envelope with the
 * same body and Standard Webhooks headers a POST would carry; they acknowledge it by id. An envelope that is not
 * acknowledged in time is a failed attempt, retried on the normal schedule (and at once on the next connection).
 */
export interface AgentSockets {
  add(agent: AgentRef, socket: WebSocket): void;
  connected(agentId: string): boolean;
  /** How many sockets the agent has open on this relay. */
  count(agentId: string): number;
  connectedIds(): ReadonlySet<string>;
  deliver(agentId: string, envelope: Envelope): Promise<WebhookOutcome>;
  closeAgent(agentId: string, why: (typeof CLOSE)[keyof typeof CLOSE]): void;
  close(): void;
}

interface Pending {
  resolve(outcome: WebhookOutcome): void;
  started: number;
  /** The socket the envelope went out on: only an ack arriving there counts. */
  socket: WebSocket;
}

/**
 * The envelope id of an acknowledgement (`{"type":"ack","envelope_id":"..."}`), or undefined for anything else. A
 * frame is any JSON text an agent cares to send: `null`, a number, a string, an array, an object without these
 * fields or with fields of other types.
 */
export function ackedEnvelope(text: string): string | undefined {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof frame !== "object" || frame === null || Array.isArray(frame)) return undefined;
  const { type, envelope_id: envelopeId } = frame as { type?: unknown; envelope_id?: unknown };
  return type === "ack" && typeof envelopeId === "string" ? envelopeId : undefined;
}

export function createAgentSockets(deps: {
  logger: Logger;
  /** The ack timeout, the heartbeat and the attempts' durations run on it. */
  clock: Clock;
  /** An agent's first socket opened or its last one closed. */
  onChange(agent: AgentRef, connected: boolean): void;
  ackTimeoutMs?: number;
  heartbeatMs?: number;
}): AgentSockets {
  const { clock } = deps;
  const ackTimeoutMs = deps.ackTimeoutMs ?? ACK_TIMEOUT_MS;
  const heartbeatMs = deps.heartbeatMs ?? HEARTBEAT_MS;
  const sockets = new Map<string, Set<WebSocket>>();
  const pending = new Map<string, Pending>();
  const ids = new Set<string>();
  let turn = 0;

  let heartbeat = clock.setTimeout(function beat() {
    for (const set of sockets.values()) {
      for (const socket of set) {
        const alive = socket as WebSocket & { alive?: boolean };
        if (alive.alive === false) {
          socket.terminate();
          continue;
        }
        alive.alive = false;
        socket.ping();
      }
    }
    heartbeat = clock.setTimeout(beat, heartbeatMs);
  }, heartbeatMs);

  function settle(
    envelopeId: string,
    outcome: Omit<WebhookOutcome, "durationMs" | "excerpt"> & { excerpt?: string },
  ): void {
    const waiting = pending.get(envelopeId);
    if (!waiting) return;
    pending.delete(envelopeId);
    waiting.resolve({ excerpt: "", ...outcome, durationMs: clock.now() - waiting.started });
  }

  return {
    add(agent, socket) {
      const agentId = agent.id;
      let set = sockets.get(agentId);
      const first = set === undefined || set.size === 0;
      if (!set) sockets.set(agentId, (set = new Set()));
      set.add(socket);
      ids.add(agentId);
      (socket as WebSocket & { alive?: boolean }).alive = true;
      socket.on("pong", () => ((socket as WebSocket & { alive?: boolean }).alive = true));
      socket.on("message", (data, isBinary) => {
        // The relay's sockets keep ws's binaryType "nodebuffer", so a text message arrives as one Buffer.
        if (isBinary || !Buffer.isBuffer(data)) return;
        const envelopeId = ackedEnvelope(data.toString("utf8"));
        if (envelopeId === undefined) return;
        // Envelope ids are not secret (they are event ids, and another agent may learn one), so an ack counts only
        // on the socket its envelope was sent on; anywhere else it could mark another agent's event delivered.
        if (pending.get(envelopeId)?.socket === socket) settle(envelopeId, { ok: true });
        else deps.logger.debug("ignored an ack for an envelope not waiting on this socket", { agent_id: agentId });
      });
      socket.on("close", () => {
        set.delete(socket);
        if (set.size === 0) {
          sockets.delete(agentId);
          ids.delete(agentId);
          deps.onChange(agent, false);
        }
      });
      socket.send(JSON.stringify({ type: "hello", agent_id: agentId, ack_timeout_ms: ackTimeoutMs }));
      if (first) deps.onChange(agent, true);
    },
    connected: (agentId) => ids.has(agentId),
    count: (agentId) => sockets.get(agentId)?.size ?? 0,
    connectedIds: () => ids,
    deliver(agentId, envelope) {
      const set = [...(sockets.get(agentId) ?? [])];
      const socket = set[turn++ % Math.max(1, set.length)];
      if (!socket) return Promise.resolve({ ok: false, error: "no socket connected", durationMs: 0, excerpt: "" });
      return new Promise<WebhookOutcome>((resolve) => {
        // A repeat of an envelope still waiting (a redelivery) supersedes the earlier wait.
        settle(envelope.id, { ok: false, error: "superseded by a redelivery" });
        pending.set(envelope.id, { resolve, started: clock.now(), socket });
        const timer = clock.setTimeout(
          () => settle(envelope.id, { ok: false, error: `no acknowledgement within ${ackTimeoutMs} ms` }),
          ackTimeoutMs,
        );
        const onClose = () => settle(envelope.id, { ok: false, error: "socket closed before the acknowledgement" });
        socket.once("close", onClose);
        const done = pending.get(envelope.id) as Pending;
        done.resolve = (outcome) => {
          clock.clearTimeout(timer);
          socket.off("close", onClose);
          resolve(outcome);
        };
        socket.send(
          JSON.stringify({ type: "event", envelope_id: envelope.id, headers: envelope.headers, body: envelope.body }),
          (error) => {
            if (error) settle(envelope.id, { ok: false, error: `send failed: ${error.message}` });
          },
        );
      });
    },
    closeAgent(agentId, why) {
      for (const socket of sockets.get(agentId) ?? []) socket.close(why.code, why.reason);
    },
    close() {
      clock.clearTimeout(heartbeat);
      for (const set of sockets.values())
        for (const socket of set) socket.close(CLOSE.shutdown.code, CLOSE.shutdown.reason);
      for (const id of [...pending.keys()]) settle(id, { ok: false, error: "relay shutting down" });
      deps.logger.debug("agent sockets closed");
    },
  };
}
