/**
 * Socket Mode for agents without a public URL: hold a WebSocket to the relay and receive each event as an
 * envelope carrying the same body and Standard Webhooks headers a webhook POST would. Dependency-free like the
 * rest of the package: the WebSocket implementation is passed in (the `ws` package in Node 20, or any constructor
 * that accepts `(url, { headers })`, such as undici's, since the token travels in the Authorization header).
 */
import { type Clock, systemClock } from "@tab-relay/shared/clock";
import {
  AGENT_SOCKET_PATH,
  SOCKET_MODE_CLOSE_CODES,
  type SocketModeClose,
  WEBHOOK_HEADERS,
  type WebhookEvent,
  WebhookVerificationError,
  getWebhookHeader,
} from "@tab-relay/shared/webhooks";
import { createWebhookReceiver } from "./receiver";

// Marked pure, so bundles that never use Socket Mode drop them.
const FINAL_CLOSE_CODES: ReadonlySet<number> = /* @__PURE__ */ (() =>
  new Set(
    Object.values(SOCKET_MODE_CLOSE_CODES as Record<string, SocketModeClose>)
      .filter((close) => close.final)
      .map((close) => close.code),
  ))();
/** Refused reconnects that retrying cannot fix: the token is unknown, replaced or removed (401), the agent is paused (403). */
const FINAL_HTTP_STATUSES: ReadonlySet<number> = /* @__PURE__ */ new Set([401, 403]);
const OPEN = 1;
const NORMAL_CLOSURE = 1000;
/** How long close() waits for the relay's closing handshake before giving up on it. */
const CLOSE_WAIT_MS = 5000;

/** The parts of a WebSocket (`ws`, undici, or a browser-like one) the client uses. */
export interface SocketModeSocket {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
  addEventListener(type: "error", listener: (event: { message?: unknown; error?: unknown }) => void): void;
}

/** Compatible with the `ws` package's `WebSocket` and undici's (Node 22 global) `WebSocket`. */
export type SocketModeWebSocketConstructor = new (
  url: string,
  options: { headers: Record<string, string> },
) => SocketModeSocket;

export interface SocketModeLogEntry {
  kind: string;
  [field: string]: unknown;
}

export interface SocketModeClientOptions {
  /** `ws(s)://…/api/v1/agent-api/socket`; an `http(s)://` relay address without a path gets that path added. */
  url: string;
  /** The agent token (`svc_agent_…`). */
  token: string;
  /** The agent's `whsec_` secret: envelopes are verified exactly like webhook deliveries. */
  signingSecret: string;
  WebSocket: SocketModeWebSocketConstructor;
  /**
   * Runs once per verified, new envelope, after it was acknowledged; envelopes are handled concurrently.
   * A handler that throws is logged; the envelope is not delivered again (it was acknowledged).
   */
  onEvent(event: WebhookEvent, envelopeId: string): Promise<void> | void;
  /**
   * The started client stopped for good: `code` is the relay's close code (one of SOCKET_MODE_CLOSE_CODES marked
   * final), or the HTTP status (401, 403) with which the relay refused a reconnect.
   */
  onClosed?: ((code: number, reason: string) => void) | undefined;
  /** Connections, rejected envelopes, handler failures, reconnects; never secrets. */
  log?: ((entry: SocketModeLogEntry) => void) | undefined;
  /** Delay before reconnecting: doubles from `minMs` up to `maxMs` (default 1 s and 30 s), randomized down to half. */
  reconnect?: { minMs: number; maxMs: number } | undefined;
  /** Allowed clock distance for `webhook-timestamp`, in seconds. Default 300. */
  toleranceSeconds?: number | undefined;
  /** How many envelope ids to remember for duplicate detection. Default 10 000. */
  rememberIds?: number | undefined;
  /** Time and timers: timestamp checks, reconnect delays, the wait for the relay's closing handshake. Defaults to the system clock. */
  clock?: Clock | undefined;
  /** In [0, 1); spreads reconnects of many agents after a relay restart. Defaults to Math.random. */
  random?: (() => number) | undefined;
}

export interface SocketModeClient {
  /**
   * Connects and resolves when the relay says hello. Rejects with SocketModeError when that first connection
   * fails (refused token, paused agent, relay unreachable); after it, lost connections are reopened by themselves.
   */
  start(): Promise<void>;
  /** Closes the connection, stops reconnecting and waits for running handlers. */
  close(): Promise<void>;
  /** True while a connection is open and the relay has said hello. */
  readonly connected: boolean;
}

/** The first connection failed; `status` is the HTTP status of a refused upgrade, `closeCode` a close before hello. */
export class SocketModeError extends Error {
  declare readonly status?: number;
  declare readonly closeCode?: number;

  constructor(message: string, details: { status?: number | undefined; closeCode?: number | undefined } = {}) {
    super(message);
    this.name = "SocketModeError";
    if (details.status !== undefined) this.status = details.status;
    if (details.closeCode !== undefined) this.closeCode = details.closeCode;
  }
}

/** The Socket Mode address of a relay: `http://relay:8787` → `ws://relay:8787/api/v1/agent-api/socket`. */
export function agentSocketUrl(relayUrl: string): string {
  const url = new URL(relayUrl);
  if (url.protocol === "http:") url.protocol = "ws:";
  else if (url.protocol === "https:") url.protocol = "wss:";
  if (url.protocol !== "ws:" && url.protocol !== "wss:")
    throw new TypeError(`Not an http(s) or ws(s) address: ${relayUrl}`);
  if (url.pathname === "/" || url.pathname === "") url.pathname = AGENT_SOCKET_PATH;
  return url.toString();
}

/**
 * ws and undici report a refused upgrade only as an error event; ws puts the status in its message
 * ("Unexpected server response: 401"), which is the one place it can be read without ws-specific listeners.
 */
function refusedStatus(event: { message?: unknown; error?: unknown }): number | undefined {
  const texts = [event.message, event.error instanceof Error ? event.error.message : undefined];
  for (const text of texts) {
    const match = typeof text === "string" ? /Unexpected server response: (\d{3})/.exec(text) : null;
    if (match) return Number(match[1]);
  }
  return undefined;
}

function errorText(event: { message?: unknown; error?: unknown }): string {
  if (typeof event.message === "string" && event.message !== "") return event.message;
  if (event.error instanceof Error) return event.error.message;
  return "WebSocket error";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function stringHeaders(value: unknown): Record<string, string> | undefined {
  if (!isRecord(value)) return undefined;
  const headers: Record<string, string> = {};
  for (const [name, header] of Object.entries(value)) {
    if (typeof header !== "string") return undefined;
    headers[name] = header;
  }
  return headers;
}

export function createSocketModeClient(options: SocketModeClientOptions): SocketModeClient {
  const clock = options.clock ?? systemClock;
  // Validates the secret now, so a pasted-wrong secret fails before any connection.
  const receiver = createWebhookReceiver({
    signingSecret: options.signingSecret,
    toleranceSeconds: options.toleranceSeconds,
    rememberIds: options.rememberIds,
    now: () => clock.now(),
  });
  const url = agentSocketUrl(options.url);
  const minMs = options.reconnect?.minMs ?? 1000;
  const maxMs = options.reconnect?.maxMs ?? 30_000;
  if (!(minMs >= 0 && maxMs >= minMs)) throw new RangeError("reconnect needs 0 <= minMs <= maxMs");
  const random = options.random ?? Math.random;
  const log = options.log ?? (() => undefined);

  let socket: SocketModeSocket | undefined;
  let isConnected = false;
  let stopped = false;
  let failures = 0;
  let reconnectTimer: unknown;
  let starting: Promise<void> | undefined;
  let firstHello: { resolve(): void; reject(error: Error): void } | undefined;
  const closeWaiters: (() => void)[] = [];
  const handlers = new Set<Promise<void>>();

  function stop(): void {
    stopped = true;
    isConnected = false;
    clock.clearTimeout(reconnectTimer);
    reconnectTimer = undefined;
  }

  function failStart(error: SocketModeError): void {
    const waiting = firstHello;
    firstHello = undefined;
    waiting?.reject(error);
  }

  function connect(): void {
    let ws: SocketModeSocket;
    try {
      ws = new options.WebSocket(url, { headers: { authorization: `Bearer ${options.token}` } });
    } catch (error) {
      log({ kind: "connect_failed", error: error instanceof Error ? error.message : String(error) });
      disconnected(undefined, 1006, "", undefined);
      return;
    }
    socket = ws;
    let status: number | undefined;
    ws.addEventListener("message", (event) => {
      if (socket === ws) onFrame(ws, event.data);
    });
    ws.addEventListener("error", (event) => {
      status ??= refusedStatus(event);
      log({ kind: "socket_error", error: errorText(event), ...(status !== undefined ? { status } : {}) });
    });
    ws.addEventListener("close", (event) => {
      if (socket !== ws) return;
      disconnected(ws, event.code, event.reason, status);
    });
  }

  function disconnected(
    ws: SocketModeSocket | undefined,
    code: number,
    reason: string,
    status: number | undefined,
  ): void {
    if (ws !== undefined) socket = undefined;
    const wasConnected = isConnected;
    isConnected = false;
    for (const wake of closeWaiters.splice(0)) wake();
    if (wasConnected || status === undefined) log({ kind: "disconnected", code, reason });
    if (stopped) {
      failStart(new SocketModeError("The client was closed before the relay said hello"));
      return;
    }
    if (FINAL_CLOSE_CODES.has(code) || (status !== undefined && FINAL_HTTP_STATUSES.has(status))) {
      stop();
      const finalCode = FINAL_CLOSE_CODES.has(code) ? code : (status as number);
      const finalReason = FINAL_CLOSE_CODES.has(code) ? reason : `the relay refused the connection (HTTP ${status})`;
      log({ kind: "stopped", code: finalCode, reason: finalReason });
      // Before the first hello the rejected start() is the report.
      if (firstHello !== undefined)
        failStart(
          new SocketModeError(
            `Socket Mode connection refused: ${finalReason}`,
            FINAL_CLOSE_CODES.has(code) ? { closeCode: code } : { status },
          ),
        );
      else options.onClosed?.(finalCode, finalReason);
      return;
    }
    if (firstHello !== undefined) {
      stop();
      const why =
        status !== undefined
          ? `the relay refused the connection (HTTP ${status})`
          : `closed with code ${code}${reason ? ` (${reason})` : ""}`;
      failStart(
        new SocketModeError(`Could not connect to ${url}: ${why}`, {
          status,
          closeCode: status === undefined ? code : undefined,
        }),
      );
      return;
    }
    const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(failures, 30));
    const delay = Math.round(ceiling / 2 + (random() * ceiling) / 2);
    failures++;
    log({ kind: "reconnecting", in_ms: delay, attempt: failures });
    reconnectTimer = clock.setTimeout(() => {
      reconnectTimer = undefined;
      if (!stopped) connect();
    }, delay);
  }

  function onFrame(ws: SocketModeSocket, data: unknown): void {
    if (typeof data !== "string") return;
    let frame: unknown;
    try {
      frame = JSON.parse(data);
    } catch {
      log({ kind: "invalid_frame" });
      return;
    }
    if (!isRecord(frame)) return;
    if (frame.type === "hello") {
      isConnected = true;
      failures = 0;
      log({ kind: "connected", agent_id: frame.agent_id });
      const waiting = firstHello;
      firstHello = undefined;
      waiting?.resolve();
      return;
    }
    // Frame types added later are ignored, like unknown event types.
    if (frame.type !== "event") return;
    const envelopeId = frame.envelope_id;
    const headers = stringHeaders(frame.headers);
    if (typeof envelopeId !== "string" || headers === undefined || typeof frame.body !== "string") {
      log({ kind: "rejected", reason: "malformed_envelope" });
      return;
    }
    const job = onEnvelope(ws, envelopeId, headers, frame.body).finally(() => handlers.delete(job));
    handlers.add(job);
  }

  async function onEnvelope(
    ws: SocketModeSocket,
    envelopeId: string,
    headers: Record<string, string>,
    body: string,
  ): Promise<void> {
    // The envelope id is what gets acknowledged, so it must be the id the signature covers.
    if (getWebhookHeader(headers, WEBHOOK_HEADERS.id) !== envelopeId) {
      log({ kind: "rejected", envelope_id: envelopeId, reason: "envelope_id_mismatch" });
      return;
    }
    let received;
    try {
      received = await receiver.receive(headers, body);
    } catch (error) {
      if (error instanceof WebhookVerificationError)
        log({ kind: "rejected", envelope_id: envelopeId, reason: error.reason });
      else if (error instanceof SyntaxError) log({ kind: "rejected", envelope_id: envelopeId, reason: "invalid_json" });
      else
        log({
          kind: "rejected",
          envelope_id: envelopeId,
          reason: "error",
          error: error instanceof Error ? error.message : String(error),
        });
      return;
    }
    // Acknowledge before working, as a webhook receiver answers 2xx first: slow work must not look like a lost envelope.
    // A repeat is acknowledged too, or the relay would keep redelivering it.
    if (ws.readyState === OPEN) ws.send(JSON.stringify({ type: "ack", envelope_id: envelopeId }));
    log({
      kind: "received",
      envelope_id: envelopeId,
      event_id: received.event.id,
      type: received.event.type,
      duplicate: received.duplicate,
    });
    if (received.duplicate) return;
    try {
      await options.onEvent(received.event, envelopeId);
    } catch (error) {
      log({
        kind: "handler_failed",
        envelope_id: envelopeId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  return {
    start() {
      if (stopped) return Promise.reject(new SocketModeError("The client was closed"));
      starting ??= new Promise<void>((resolve, reject) => {
        firstHello = { resolve, reject };
        connect();
      });
      return starting;
    },
    async close() {
      stop();
      const ws = socket;
      if (ws !== undefined) {
        const closed = new Promise<void>((resolve) => closeWaiters.push(resolve));
        ws.close(NORMAL_CLOSURE, "agent closing");
        let timer: unknown;
        await Promise.race([
          closed,
          new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, CLOSE_WAIT_MS))),
        ]);
        clock.clearTimeout(timer);
        socket = undefined;
      }
      failStart(new SocketModeError("The client was closed before the relay said hello"));
      while (handlers.size > 0) await Promise.all([...handlers]);
    },
    get connected() {
      return isConnected;
    },
  };
}
