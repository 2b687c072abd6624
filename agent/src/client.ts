/**
 * The Agent API (`/api/v1/agent-api`, docs/api.md#agent-api) with the agent's token: who the agent is, the
 * conversations it is in, their messages, and posting. Answers are typed as the relay sends them; an error answer
 * becomes an AgentApiError carrying the code of the relay's `{ error: { code, message } }` envelope. A request the
 * relay refused for the rate limit (429) is sent again once its Retry-After has passed; so is a read answered 503.
 */
import type * as Api from "@tab-relay/shared/api";
import { type Clock, systemClock } from "@tab-relay/shared/clock";
import { type ErrorCode, codeForStatus } from "@tab-relay/shared/errors";
import { parseRetryAfterMs } from "@tab-relay/shared/retryAfter";
import type { MessageCreatedEvent } from "@tab-relay/shared/webhooks";

/** Where the Agent API is under a relay's address. */
export const AGENT_API_PATH = "/api/v1/agent-api";
export const DEFAULT_MAX_RETRIES = 2;
/** A Retry-After longer than this is not waited out: the call fails with it, for the agent to decide. */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;
/** The wait before trying again when a 429 or 503 carries no usable Retry-After; doubled each time. */
const FALLBACK_RETRY_MS = 1000;

/** A non-2xx answer from the Agent API, with the code from its error envelope. */
export class AgentApiError extends Error {
  readonly status: number;
  /** From the `{ error: { code } }` envelope, or derived from the status when the body has none. */
  readonly code: ErrorCode | (string & {});
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

export interface AgentClientOptions {
  /** The agent token (`svc_agent_…`). */
  token: string;
  /**
   * The relay's address (`https://relay.example.com`); the Agent API is under /api/v1/agent-api. Every call but
   * reply() needs it: replies go to the URL the event names.
   */
  url?: string | undefined;
  fetch?: typeof fetch | undefined;
  /** Time and waits (Retry-After dates, the waits before trying again); defaults to the system clock. */
  clock?: Clock | undefined;
  /** How many times a request refused with 429 (or a read answered 503) is sent again. Default 2; 0 never. */
  maxRetries?: number | undefined;
  /** The longest Retry-After waited out; beyond it the call fails at once with the AgentApiError. Default 60 s. */
  maxRetryAfterMs?: number | undefined;
}

export interface CallOptions {
  signal?: AbortSignal | undefined;
}

export interface MessagesQuery extends CallOptions {
  /** A thread's replies instead of the conversation's top-level messages. */
  thread_id?: string | undefined;
  /** Messages older than this message id (paging back). */
  before?: string | undefined;
  /** 1 to 100; default 30. */
  limit?: number | undefined;
}

export interface NewMessage {
  text: string;
  /** The message to reply under; null or absent posts into the conversation itself. */
  thread_id?: string | null | undefined;
}

export interface AgentClient {
  /** `GET /me`: the agent and its workspace. */
  me(options?: CallOptions): Promise<Api.AgentApiMe>;
  /** `GET /conversations`: the channels and DMs the agent is in. */
  conversations(options?: CallOptions): Promise<Api.AgentApiConversation[]>;
  /** `GET /conversations/{type}/{id}/messages`: newest first. */
  messages(conversation: Api.ConversationRef, query?: MessagesQuery): Promise<Api.AgentApiMessage[]>;
  /** `POST /conversations/{type}/{id}/messages`: the message as posted. */
  post(conversation: Api.ConversationRef, message: NewMessage, options?: CallOptions): Promise<Api.AgentApiMessage>;
  /** Answers a `message.created` event where the person will see it: its conversation, in the thread it names. */
  reply(event: MessageCreatedEvent, text: string, options?: CallOptions): Promise<Api.AgentApiMessage>;
}

export function createAgentClient(options: AgentClientOptions): AgentClient {
  const doFetch = options.fetch ?? ((input: string, init?: RequestInit) => fetch(input, init));
  const clock = options.clock ?? systemClock;
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) throw new RangeError("maxRetries must be a whole number");
  if (options.token === "") throw new TypeError("token: give the agent token (svc_agent_…)");
  const base = options.url === undefined ? undefined : new URL(AGENT_API_PATH, withSlash(options.url)).toString();

  function endpoint(path: string): string {
    if (base === undefined) throw new TypeError("url: give the relay's address to createAgentClient for this call");
    return `${base}${path}`;
  }

  async function call<T>(method: "GET" | "POST", url: string, body: unknown, signal: AbortSignal | undefined) {
    for (let attempt = 0; ; attempt++) {
      const init: RequestInit = {
        method,
        headers: {
          authorization: `Bearer ${options.token}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
      };
      if (body !== undefined) init.body = JSON.stringify(body);
      if (signal !== undefined) init.signal = signal;
      const response = await doFetch(url, init);
      const payload = parseJson(await response.text());
      if (response.ok) return (isRecord(payload) ? payload["data"] : undefined) as T;
      const error = toAgentApiError(response, payload, clock.now());
      // A 429 was refused before anything happened, whatever the method; a post answered 503 (by the relay or a proxy
      // in front of it) may already be stored (shared/src/errors.ts), so only reads are sent again after one.
      const again = response.status === 429 || (response.status === 503 && method === "GET");
      if (!again || attempt >= maxRetries) throw error;
      const waitMs =
        error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : FALLBACK_RETRY_MS * 2 ** attempt;
      if (waitMs > maxRetryAfterMs) throw error;
      await sleep(clock, waitMs, signal);
    }
  }

  return {
    // async, so a missing url rejects like every other failure instead of throwing at the call.
    me: async (opts) => call<Api.AgentApiMe>("GET", endpoint("/me"), undefined, opts?.signal),
    conversations: async (opts) =>
      call<Api.AgentApiConversation[]>("GET", endpoint("/conversations"), undefined, opts?.signal),
    async messages(conversation, query = {}) {
      const params = new URLSearchParams();
      if (query.thread_id !== undefined) params.set("thread_id", query.thread_id);
      if (query.before !== undefined) params.set("before", query.before);
      if (query.limit !== undefined) params.set("limit", String(query.limit));
      const search = params.toString() === "" ? "" : `?${params.toString()}`;
      return call<Api.AgentApiMessage[]>(
        "GET",
        `${endpoint(conversationPath(conversation))}${search}`,
        undefined,
        query.signal,
      );
    },
    post: async (conversation, message, opts) =>
      call<Api.AgentApiMessage>("POST", endpoint(conversationPath(conversation)), newMessage(message), opts?.signal),
    reply: async (event, text, opts) =>
      call<Api.AgentApiMessage>(
        "POST",
        event.reply.url,
        newMessage({ text, thread_id: event.reply.thread_id }),
        opts?.signal,
      ),
  };
}

export interface ReplyOptions extends Omit<AgentClientOptions, "url"> {
  signal?: AbortSignal | undefined;
}

/**
 * Posts `text` into the event's conversation, in the thread the event names (`reply.thread_id`), and returns the
 * posted message: `createAgentClient({ token }).reply(event, text)` in one call.
 */
export function replyTo(event: MessageCreatedEvent, text: string, options: ReplyOptions): Promise<Api.AgentApiMessage> {
  return createAgentClient(options).reply(event, text, { signal: options.signal });
}

function conversationPath(conversation: Api.ConversationRef): string {
  return `/conversations/${encodeURIComponent(conversation.type)}/${encodeURIComponent(conversation.id)}/messages`;
}

function newMessage(message: NewMessage): { text: string; thread_id?: string } {
  return message.thread_id === undefined || message.thread_id === null
    ? { text: message.text }
    : { text: message.text, thread_id: message.thread_id };
}

function withSlash(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}

function toAgentApiError(response: Response, payload: unknown, now: number): AgentApiError {
  const error = isRecord(payload) && isRecord(payload["error"]) ? payload["error"] : undefined;
  const code = typeof error?.["code"] === "string" ? error["code"] : codeForStatus(response.status);
  const message =
    typeof error?.["message"] === "string" ? error["message"] : `Agent API answered HTTP ${response.status}`;
  const retryAfterMs = parseRetryAfterMs(response.headers.get("retry-after"), now);
  // Whole seconds, rounded up: waiting a fraction less than asked would be answered with another 429.
  return new AgentApiError(
    response.status,
    code,
    message,
    retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000),
  );
}

function sleep(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) return reject(signal.reason as Error);
    const onAbort = () => {
      clock.clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
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
