/**
 * A complete outside agent in one file, built on @tab-relay/agent as an agent developer outside this repository
 * would: its webhook handler verifies each Standard Webhooks delivery over the raw body, answers at once and drops
 * repeats; the Agent API client answers `message.created` in the event's thread.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  AgentApiError,
  type MessageCreatedEvent,
  type WebhookEvent,
  type WebhookHandler,
  createAgentClient,
  createWebhookHandler,
  isValidSigningSecret,
} from "@tab-relay/agent";

/** Not 8788: that is where a second relay beside one on 8787 would go. */
export const DEFAULT_PORT = 18788;
export const DEFAULT_HOST = "127.0.0.1";
/** Events are small (Standard Webhooks recommends under 20 kB, spec/standard-webhooks.md "Payload size"); anything far bigger is not ours. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface EchoAgentOptions {
  /** The agent's `whsec_` webhook signing secret. */
  signingSecret: string;
  /** The agent token (`svc_agent_…`) used to reply. */
  token: string;
  /** Default 18788; 0 picks a free port. */
  port?: number | undefined;
  host?: string | undefined;
  /** Receives one record per delivery and per reply; defaults to one JSON line on stdout. */
  log?: ((entry: Record<string, unknown>) => void) | undefined;
  fetch?: typeof fetch | undefined;
  /** Clock in milliseconds for timestamp checks. */
  now?: (() => number) | undefined;
}

export interface EchoAgent {
  /** Where it listens, without a trailing slash. */
  url: string;
  /** Every verified, non-duplicate event, in arrival order. */
  events: WebhookEvent[];
  /** Resolves when the work started for every delivery so far (replies) has finished. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export function logLine(entry: Record<string, unknown>): void {
  console.log(JSON.stringify({ at: new Date().toISOString(), ...entry }));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The reply for a message: its text with the agent's own @mention (and a comma or colon right after it) removed. */
export function echoText(event: MessageCreatedEvent): string {
  const mention = new RegExp(
    `@(?:${escapeRegExp(event.agent.name)}|${escapeRegExp(event.agent.id)})(?![\\p{L}\\p{N}_])[,:]?`,
    "giu",
  );
  const text = event.message.text.replace(mention, " ").replace(/\s+/g, " ").trim();
  return text === "" ? "Echo: (nothing to echo)" : `Echo: ${text}`;
}

/**
 * What the echo agent does with a verified, new event, however it arrived (webhook or Socket Mode): answers
 * `message.created` through the Agent API and logs pings. Never throws; failures are logged.
 */
export function createEchoWork(options: {
  token: string;
  log: (entry: Record<string, unknown>) => void;
  fetch?: typeof fetch | undefined;
}): (event: WebhookEvent, webhookId: string) => Promise<void> {
  const { log } = options;
  // A reply refused for the rate limit is sent again once its Retry-After has passed (up to a minute); a longer wait
  // fails, and is logged.
  const client = createAgentClient({ token: options.token, fetch: options.fetch });
  return async function work(event, webhookId) {
    switch (event.type) {
      case "ping":
        log({ kind: "ping", webhook_id: webhookId, event_id: event.id, workspace: event.workspace.slug });
        return;
      case "message.created": {
        const text = echoText(event);
        try {
          const posted = await client.reply(event, text);
          log({
            kind: "replied",
            webhook_id: webhookId,
            event_id: event.id,
            conversation: event.conversation.id,
            reply_message_id: posted.id,
          });
        } catch (error) {
          if (error instanceof AgentApiError) {
            log({
              kind: "reply_failed",
              webhook_id: webhookId,
              event_id: event.id,
              status: error.status,
              code: error.code,
              retry_after_seconds: error.retryAfterSeconds,
            });
          } else {
            log({
              kind: "reply_failed",
              webhook_id: webhookId,
              event_id: event.id,
              error: error instanceof Error ? error.message : String(error),
            });
          }
        }
        return;
      }
      default:
        // Event types added after this example was written are acknowledged and skipped.
        log({ kind: "ignored", webhook_id: webhookId, type: (event as { type?: unknown }).type });
    }
  };
}

/** An echo agent that listens before it knows its secrets, as when it still has to register its own URL. */
export interface OpenEchoAgent extends EchoAgent {
  /** Starts verifying and answering deliveries with these; until then each one is answered `503`, which the relay retries. */
  useCredentials(credentials: { signingSecret: string; token: string }): void;
}

export async function startEchoAgent(options: EchoAgentOptions): Promise<EchoAgent> {
  const { signingSecret, token, ...listening } = options;
  // Refused before the port is opened.
  if (!isValidSigningSecret(signingSecret))
    throw new TypeError("signingSecret: not a whsec_ secret of 24 bytes or more");
  const agent = await openEchoAgent(listening);
  agent.useCredentials({ signingSecret, token });
  return agent;
}

/** Opens the port first, so an agent registered with this URL never points at a port someone else holds. */
export async function openEchoAgent(
  options: Omit<EchoAgentOptions, "signingSecret" | "token">,
): Promise<OpenEchoAgent> {
  const log = options.log ?? logLine;
  const events: WebhookEvent[] = [];
  let handler: WebhookHandler | undefined;

  const server = createServer((req, res) => {
    if (handler === undefined) {
      // Listening before the agent is registered: the relay retries a 503, by then with the secrets in place.
      log({ kind: "rejected", reason: "not_ready" });
      res.writeHead(503, { "retry-after": "1", "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "not_ready", message: "The agent is starting" } }));
      return;
    }
    handler.node(req, res).catch((error: unknown) => {
      log({ kind: "error", error: error instanceof Error ? error.message : String(error) });
      if (!res.headersSent) res.writeHead(500).end();
      else res.end();
    });
  });

  const host = options.host ?? DEFAULT_HOST;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? DEFAULT_PORT, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;

  async function idle(): Promise<void> {
    await handler?.idle();
  }

  return {
    url,
    events,
    idle,
    useCredentials({ signingSecret, token }) {
      const work = createEchoWork({ token, log, fetch: options.fetch });
      handler = createWebhookHandler({
        signingSecret,
        now: options.now,
        maxBodyBytes: MAX_BODY_BYTES,
        // Runs after the 204 went out: the relay retries anything slow, and a retry would be a duplicate anyway.
        async onEvent(event, { webhookId }) {
          log({ kind: "received", webhook_id: webhookId, event_id: event.id, type: event.type, duplicate: false });
          events.push(event);
          await work(event, webhookId);
        },
        onDuplicate(event, { webhookId }) {
          log({ kind: "received", webhook_id: webhookId, event_id: event.id, type: event.type, duplicate: true });
        },
        onRejected: (reason) => log({ kind: "rejected", reason }),
      });
    },
    async close() {
      const closed = new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
      server.closeIdleConnections();
      await closed;
      await idle();
    },
  };
}
