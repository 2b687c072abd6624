/**
 * The echo agent in Socket Mode: instead of listening for webhooks it holds a WebSocket to the relay, so it works
 * behind NAT or a firewall. Verification, acknowledgement, de-duplication and reconnects are @tab-relay/agent's;
 * what it does with an event is the same as the webhook version's.
 */
import { WebSocket } from "ws";
import { type WebhookEvent, createSocketModeClient } from "@tab-relay/agent";
import { createEchoWork, logLine } from "./server";

export interface EchoSocketAgentOptions {
  /** The relay (`http://127.0.0.1:8787`) or its Socket Mode address (`ws://…/api/v1/agent-api/socket`). */
  relay: string;
  /** The agent's `whsec_` signing secret: envelopes are signed like webhook deliveries. */
  signingSecret: string;
  /** The agent token (`svc_agent_…`): it opens the socket and authorizes replies. */
  token: string;
  /** Receives one record per envelope, reply and connection change; defaults to one JSON line on stdout. */
  log?: ((entry: Record<string, unknown>) => void) | undefined;
  /** The relay ended the connection for good (4001 token replaced, 4003 paused, 4004 removed, or HTTP 401/403). */
  onClosed?: ((code: number, reason: string) => void) | undefined;
  /** Delay bounds for reconnecting after a lost connection (default 1 s to 30 s). */
  reconnect?: { minMs: number; maxMs: number } | undefined;
  fetch?: typeof fetch | undefined;
}

export interface EchoSocketAgent {
  /** Every verified, non-duplicate event, in arrival order. */
  events: WebhookEvent[];
  readonly connected: boolean;
  /** Resolves when the work started for every envelope so far (replies) has finished. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** Connects and resolves once the relay has said hello; rejects when that first connection is refused. */
export async function startEchoSocketAgent(options: EchoSocketAgentOptions): Promise<EchoSocketAgent> {
  const log = options.log ?? logLine;
  const events: WebhookEvent[] = [];
  const pending = new Set<Promise<void>>();
  const work = createEchoWork({ token: options.token, log, fetch: options.fetch });
  const client = createSocketModeClient({
    url: options.relay,
    token: options.token,
    signingSecret: options.signingSecret,
    WebSocket,
    reconnect: options.reconnect,
    log,
    onClosed: options.onClosed,
    onEvent(event, envelopeId) {
      events.push(event);
      const job = work(event, envelopeId).finally(() => pending.delete(job));
      pending.add(job);
      return job;
    },
  });
  await client.start();

  async function idle(): Promise<void> {
    while (pending.size > 0) await Promise.all([...pending]);
  }

  return {
    events,
    get connected() {
      return client.connected;
    },
    idle,
    async close() {
      await client.close();
      await idle();
    },
  };
}
