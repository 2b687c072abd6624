/**
 * Receiving events: verify each delivery over its raw body, drop repeats of a webhook-id, answer 2xx at once and do
 * the work afterwards. No dependencies beyond WebCrypto, so it runs in Node 20, Deno, Bun and workers alike.
 */
import { systemClock } from "@tab-relay/shared/clock";
import {
  WEBHOOK_HEADERS,
  type WebhookEvent,
  type WebhookHeaders,
  WebhookVerificationError,
  type WebhookVerificationFailure,
  decodeSigningSecret,
  getWebhookHeader,
  verifyWebhook,
} from "@tab-relay/shared/webhooks";

export const DEFAULT_REMEMBERED_WEBHOOK_IDS = 10_000;
/**
 * Events are small (Standard Webhooks recommends under 20 kB, spec/standard-webhooks.md "Payload size"); a body far
 * beyond that is not the relay's, and is refused before it is read whole.
 */
export const DEFAULT_MAX_WEBHOOK_BODY_BYTES = 1024 * 1024;

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

/** Why a request to the handler was refused: a verification failure, or one of the HTTP-level reasons. */
export type WebhookRejection =
  WebhookVerificationFailure | "invalid_json" | "method_not_allowed" | "payload_too_large" | "body_already_read";

export interface WebhookHandlerOptions extends WebhookReceiverOptions {
  /**
   * Runs once per verified, new event, after the relay was answered 2xx; events are handled concurrently. A repeat of a
   * webhook-id already received is answered 200 and does not run it again.
   */
  onEvent(event: WebhookEvent, context: { webhookId: string }): Promise<void> | void;
  /** A verified repeat of a webhook-id already received (a retry whose first attempt got through): answered 200, not run. */
  onDuplicate?: ((event: WebhookEvent, context: { webhookId: string }) => void) | undefined;
  /** onEvent threw or rejected; the delivery was already answered, so the relay will not send it again. */
  onError?: ((error: unknown, event: WebhookEvent) => void) | undefined;
  /** A request was refused (answered 4xx), with the reason; never called with secrets. */
  onRejected?: ((reason: WebhookRejection, message: string) => void) | undefined;
  /** Bodies beyond this many bytes are refused with 413. Default 1 MiB. */
  maxBodyBytes?: number | undefined;
  /**
   * Keeps a serverless runtime alive for the work after the answer (a worker's `ctx.waitUntil`); in a long-running
   * server the work simply goes on.
   */
  waitUntil?: ((work: Promise<unknown>) => void) | undefined;
}

/** The parts of Node's `IncomingMessage` the handler reads: an async iterable of body chunks, the method and headers. */
export interface NodeRequestLike extends AsyncIterable<Uint8Array | string> {
  readonly method?: string | undefined;
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** True when something (a body parser mounted before the handler) already read the body. */
  readonly readableEnded?: boolean | undefined;
}

/** The parts of Node's `ServerResponse` the handler writes. */
export interface NodeResponseLike {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body?: string): unknown;
}

export interface WebhookHandler {
  /** For runtimes that speak the Fetch API: `Deno.serve`, `Bun.serve`, workers, Hono. */
  fetch(request: Request): Promise<Response>;
  /**
   * For `node:http` and express: `createServer(handler.node)` or `app.post("/webhook", handler.node)`. It reads the raw
   * body itself, so mount it before any body parser (express.json() would consume the body the signature covers).
   */
  node(req: NodeRequestLike, res: NodeResponseLike): Promise<void>;
  /** Resolves when every onEvent started so far has finished (for a graceful shutdown, or a test). */
  idle(): Promise<void>;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string | undefined;
}

class Refused extends Error {
  constructor(
    readonly status: number,
    readonly reason: WebhookRejection,
    message: string,
  ) {
    super(message);
  }
}

const JSON_HEADERS = { "content-type": "application/json" };

function refusal(error: Refused): Answer {
  return {
    status: error.status,
    headers: error.status === 405 ? { ...JSON_HEADERS, allow: "POST" } : JSON_HEADERS,
    body: JSON.stringify({ error: { code: error.reason, message: error.message } }),
  };
}

/**
 * An HTTP endpoint for the relay's webhooks: verifies each POST over its raw body, answers at once (204 for a new
 * event, 200 for a repeat, 400 for a bad signature or a stale timestamp, 405 for other methods, 413 for an oversize
 * body) and then runs `onEvent`, so slow work never makes the relay count the delivery as failed.
 */
export function createWebhookHandler(options: WebhookHandlerOptions): WebhookHandler {
  const receiver = createWebhookReceiver(options);
  const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_WEBHOOK_BODY_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) throw new RangeError("maxBodyBytes must be a positive integer");
  const running = new Set<Promise<void>>();

  function tooLarge(): Refused {
    return new Refused(413, "payload_too_large", `The body is larger than ${maxBytes} bytes`);
  }

  function start(event: WebhookEvent, webhookId: string): void {
    const work = (async () => {
      try {
        await options.onEvent(event, { webhookId });
      } catch (error) {
        options.onError?.(error, event);
      }
    })();
    running.add(work);
    void work.finally(() => running.delete(work));
    options.waitUntil?.(work);
  }

  async function handle(method: string | undefined, headers: WebhookHeaders, body: () => Promise<string>) {
    try {
      if (method !== "POST") throw new Refused(405, "method_not_allowed", "Webhooks are delivered with POST");
      const declared = Number(getWebhookHeader(headers, "content-length") ?? 0);
      if (declared > maxBytes) throw tooLarge();
      let received: ReceivedWebhook;
      try {
        received = await receiver.receive(headers, await body());
      } catch (error) {
        if (error instanceof WebhookVerificationError) throw new Refused(400, error.reason, error.message);
        if (error instanceof SyntaxError) throw new Refused(400, "invalid_json", "The body is not JSON");
        throw error;
      }
      if (received.duplicate) {
        options.onDuplicate?.(received.event, { webhookId: received.webhookId });
        return { status: 200, headers: JSON_HEADERS, body: JSON.stringify({ duplicate: true }) };
      }
      start(received.event, received.webhookId);
      return { status: 204, headers: {}, body: undefined };
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
      options.onRejected?.(error.reason, error.message);
      return refusal(error);
    }
  }

  return {
    async fetch(request) {
      const answer = await handle(request.method, request.headers, async () => {
        const reader = request.body?.getReader();
        if (reader === undefined) return "";
        const chunks: Uint8Array[] = [];
        let size = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          size += value.byteLength;
          if (size > maxBytes) {
            await reader.cancel();
            throw tooLarge();
          }
          chunks.push(value);
        }
        return decode(chunks, size);
      });
      return new Response(answer.body ?? null, { status: answer.status, headers: answer.headers });
    },
    async node(req, res) {
      const answer = await handle(req.method, req.headers, async () => {
        if (req.readableEnded === true)
          throw new Refused(
            500,
            "body_already_read",
            "The request body was read before the webhook handler: mount it before express.json() or any body parser",
          );
        const chunks: Uint8Array[] = [];
        let size = 0;
        for await (const chunk of req) {
          const bytes = typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk;
          size += bytes.byteLength;
          if (size > maxBytes) throw tooLarge();
          chunks.push(bytes);
        }
        return decode(chunks, size);
      });
      res.statusCode = answer.status;
      for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
      res.end(answer.body);
    },
    async idle() {
      while (running.size > 0) await Promise.all([...running]);
    },
  };
}

function decode(chunks: readonly Uint8Array[], size: number): string {
  const whole = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    whole.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(whole);
}
