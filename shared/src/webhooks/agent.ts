/**
 * What an agent author needs: verify and de-duplicate deliveries, and answer through the Agent API.
 * No dependencies beyond WebCrypto and fetch, so it runs in Node 20, Deno, Bun and workers alike.
 */
import { systemClock } from "../clock";
import { codeForStatus } from "../errors";
import { parseRetryAfterMs } from "../retryAfter";
import type { MessageCreatedEvent, WebhookEvent } from "./events";
import { WEBHOOK_HEADERS } from "./events";
import type { WebhookHeaders } from "./signing";
import { decodeSigningSecret, getWebhookHeader, verifyWebhook } from "./signing";

export const DEFAULT_REMEMBERED_WEBHOOK_IDS = 10_000;

export interface WebhookReceiverOptions {
  /** The agent's `whsec_` secret. Checked at creation, so a pasted-wrong secret fails at startup. */
  signingSecret: string;
  /** Allowed clock distance in seconds, both directions. Default 300. */
  toleranceSeconds?: number | undefined;
  /** How many webhook-ids to remember for duplicate detection (least recently seen forgotten first). Default 10 000; 0 disables. */
  rememberIds?: number | undefined;
  /** Current time in milliseconds; defaults to the system clock. */
  now?: (() => number) | undefined;
}

export interface ReceivedWebhook {
  event: WebhookEvent;
  /** The `webhook-id` header: stable across retries of one delivery. */
  webhookId: string;
  /** True when this webhook-id was already received and verified: a retry whose earlier attempt got through. */
  duplicate: boolean;
}

export interface WebhookReceiver {
  /**
   * Verifies a delivery against the raw body (never a re-serialized object) and reports whether it is a repeat.
   * Throws WebhookVerificationError when the delivery must be rejected (answer 400).
   * Events of types this version does not know may arrive later; switch on `event.type` and ignore the rest.
   */
  receive(headers: WebhookHeaders, rawBody: string): Promise<ReceivedWebhook>;
  /** Forgets a webhook-id, so that a retry is processed again (for work that failed before it was acknowledged). */
  forget(webhookId: string): void;
}

/**
 * A receiver that remembers seen webhook-ids in memory.
 * Retries of one delivery span about a day and the memory is lost on restart, so production agents should
 * also keep processed ids in a persistent store (for at least a day); the in-memory set is a sensible default.
 * Ids are remembered only after successful verification, so forged requests cannot suppress real deliveries.
 */
export function createWebhookReceiver(options: WebhookReceiverOptions): WebhookReceiver {
  decodeSigningSecret(options.signingSecret);
  const limit = options.rememberIds ?? DEFAULT_REMEMBERED_WEBHOOK_IDS;
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError("rememberIds must be a non-negative integer");
  const now = options.now ?? (() => systemClock.now());
  // Insertion order doubles as recency order.
  const seen = new Set<string>();

  return {
    async receive(headers, rawBody) {
      const parsed = await verifyWebhook(options.signingSecret, headers, rawBody, {
        nowSeconds: Math.floor(now() / 1000),
        toleranceSeconds: options.toleranceSeconds,
      });
      const webhookId = getWebhookHeader(headers, WEBHOOK_HEADERS.id) ?? "";
      const duplicate = seen.has(webhookId);
      if (duplicate) seen.delete(webhookId);
      if (limit > 0) {
        seen.add(webhookId);
        if (seen.size > limit) {
          const oldest = seen.values().next();
          if (oldest.done !== true) seen.delete(oldest.value);
        }
      }
      return { event: parsed as WebhookEvent, webhookId, duplicate };
    },
    forget(webhookId) {
      seen.delete(webhookId);
    },
  };
}

/** A non-2xx answer from the Agent API, with the code from its error envelope. */
export class AgentApiError extends Error {
  readonly status: number;
  /** From the `{ error: { code } }` envelope, or derived from the status when the body has none. */
  readonly code: string;
  /** Present only when the answer carried a usable `Retry-After` header (429, 503); `declare` keeps it off otherwise. */
  declare readonly retryAfterSeconds?: number;

  constructor(status: number, code: string, message: string, retryAfterSeconds?: number) {
    super(message);
    this.name = "AgentApiError";
    this.status = status;
    this.code = code;
    if (retryAfterSeconds !== undefined) this.retryAfterSeconds = retryAfterSeconds;
  }
}

export interface ReplyOptions {
  /** The agent token (`svc_agent_…`). */
  token: string;
  fetch?: typeof fetch | undefined;
  signal?: AbortSignal | undefined;
  /** Current time in milliseconds, for a Retry-After given as a date; defaults to the system clock. */
  now?: (() => number) | undefined;
}

/**
 * Posts `text` into the event's conversation, in the thread the event names (`reply.thread_id`), and returns
 * the posted message (`data` of the answer). Throws AgentApiError for a non-2xx answer; network failures
 * surface as thrown by fetch.
 */
export async function replyTo(event: MessageCreatedEvent, text: string, options: ReplyOptions): Promise<unknown> {
  const doFetch = options.fetch ?? fetch;
  const body: { text: string; thread_id?: string } = { text };
  if (event.reply.thread_id !== null) body.thread_id = event.reply.thread_id;
  const init: RequestInit = {
    method: "POST",
    headers: {
      authorization: `Bearer ${options.token}`,
      "content-type": "application/json",
      accept: "application/json",
    },
    body: JSON.stringify(body),
  };
  if (options.signal !== undefined) init.signal = options.signal;
  const response = await doFetch(event.reply.url, init);
  const payload = parseJson(await response.text());
  if (!response.ok) throw toAgentApiError(response, payload, (options.now ?? systemClock.now)());
  return isRecord(payload) ? payload.data : undefined;
}

function toAgentApiError(response: Response, payload: unknown, now: number): AgentApiError {
  const error = isRecord(payload) && isRecord(payload.error) ? payload.error : undefined;
  const code = typeof error?.code === "string" ? error.code : codeForStatus(response.status);
  const message = typeof error?.message === "string" ? error.message : `Agent API answered HTTP ${response.status}`;
  const retryAfterMs = parseRetryAfterMs(response.headers.get("retry-after"), now);
  // Whole seconds, rounded up: waiting a fraction less than asked would be answered with another 429.
  return new AgentApiError(
    response.status,
    code,
    message,
    retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000),
  );
}

function parseJson(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
