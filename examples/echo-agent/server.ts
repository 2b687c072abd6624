/**
 * A complete outside agent in one file: verifies Standard Webhooks deliveries, acknowledges at once,
 * then answers `message.created` through the Agent API. Imported relatively so it runs without a build.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { MessageCreatedEvent, WebhookEvent } from "../../shared/src/webhooks/index";
import {
  AgentApiError,
  WebhookVerificationError,
  createWebhookReceiver,
  replyTo,
} from "../../shared/src/webhooks/index";

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

class BodyTooLarge extends Error {}

async function readRawBody(req: IncomingMessage): Promise<string> {
  const declared = Number(req.headers["content-length"]);
  if (declared > MAX_BODY_BYTES) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function answer(res: ServerResponse, status: number, body?: Record<string, unknown>): void {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
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
  return async function work(event, webhookId) {
    switch (event.type) {
      case "ping":
        log({ kind: "ping", webhook_id: webhookId, event_id: event.id, workspace: event.workspace.slug });
        return;
      case "message.created": {
        const text = echoText(event);
        try {
          const posted = await replyTo(event, text, { token: options.token, fetch: options.fetch });
          const postedId =
            typeof posted === "object" && posted !== null && "id" in posted
              ? (posted as { id: unknown }).id
              : undefined;
          log({
            kind: "replied",
            webhook_id: webhookId,
            event_id: event.id,
            conversation: event.conversation.id,
            reply_message_id: postedId,
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
  // Thrown for a bad secret before the port is opened; the agent builds its own receiver below.
  createWebhookReceiver({ signingSecret });
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
  const pending = new Set<Promise<void>>();
  let ready:
    { receiver: ReturnType<typeof createWebhookReceiver>; work: ReturnType<typeof createEchoWork> } | undefined;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== "POST") {
      res.setHeader("allow", "POST");
      answer(res, 405, { error: "method_not_allowed" });
      return;
    }
    if (ready === undefined) {
      log({ kind: "rejected", reason: "not_ready" });
      res.setHeader("retry-after", "1");
      answer(res, 503, { error: "not_ready" });
      return;
    }
    const { receiver, work } = ready;
    let raw: string;
    try {
      raw = await readRawBody(req);
    } catch (error) {
      if (!(error instanceof BodyTooLarge)) throw error;
      log({ kind: "rejected", reason: "payload_too_large" });
      res.setHeader("connection", "close");
      answer(res, 413, { error: "payload_too_large" });
      return;
    }
    let received;
    try {
      // Verification needs the raw bytes; parsing first and re-serializing would break the signature.
      received = await receiver.receive(req.headers, raw);
    } catch (error) {
      if (error instanceof WebhookVerificationError) {
        log({ kind: "rejected", reason: error.reason });
        answer(res, 400, { error: error.reason });
        return;
      }
      if (error instanceof SyntaxError) {
        log({ kind: "rejected", reason: "invalid_json" });
        answer(res, 400, { error: "invalid_json" });
        return;
      }
      throw error;
    }
    const { event, webhookId, duplicate } = received;
    log({ kind: "received", webhook_id: webhookId, event_id: event.id, type: event.type, duplicate });
    if (duplicate) {
      answer(res, 200, { duplicate: true });
      return;
    }
    events.push(event);
    // Acknowledge before working: the relay retries anything slow, and a retry would be a duplicate anyway.
    answer(res, 204);
    const job = work(event, webhookId).finally(() => pending.delete(job));
    pending.add(job);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      log({ kind: "error", error: error instanceof Error ? error.message : String(error) });
      if (!res.headersSent) answer(res, 500, { error: "internal_error" });
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
    while (pending.size > 0) await Promise.all([...pending]);
  }

  return {
    url,
    events,
    idle,
    useCredentials({ signingSecret, token }) {
      ready = {
        receiver: createWebhookReceiver({ signingSecret, now: options.now }),
        work: createEchoWork({ token, log, fetch: options.fetch }),
      };
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
