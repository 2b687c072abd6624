import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { performance } from "node:perf_hooks";
import { parseRetryAfterMs } from "@tab-relay/shared";
import { ALLOW_PRIVATE_VARIABLE, isBlockedAddress } from "./addresses";

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface WebhookOutcome {
  /** true only for a 2xx answer */
  ok: boolean;
  /** HTTP status if one was received (3xx included: redirects are NOT followed and count as failure) */
  status?: number;
  /** network/timeout/blocked-address error text when no status was received */
  error?: string;
  durationMs: number;
  /** first ~1 KiB of the response body as text (UTF-8, trimmed); "" if none */
  excerpt: string;
  /** parsed Retry-After (seconds or HTTP-date, relative to the injected clock) in ms, if the answer had one */
  retryAfterMs?: number;
}

export interface WebhookClient {
  /** POSTs one delivery attempt. Never rejects: every failure is described in the outcome. */
  send(request: WebhookRequest): Promise<WebhookOutcome>;
  /** Drops pooled and in-flight connections; later sends fail without connecting. */
  close(): void;
}

export interface WebhookClientOptions {
  /** Lifts the https and public-address rules, for agents on a private network and for tests. */
  allowPrivate: boolean;
  /** Budget for one attempt: connect, response headers and the body excerpt. Default 15000. */
  timeoutMs?: number;
  /** Wall clock in ms, for Retry-After HTTP-dates. */
  now: () => number;
  /** Default "tab-relay-webhooks/1". */
  userAgent?: string;
}

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_USER_AGENT = "tab-relay-webhooks/1";
const EXCERPT_BYTES = 1024;
/** Reading a small answer to the end keeps the socket for reuse; past this it is cheaper to drop the connection. */
const DRAIN_LIMIT_BYTES = 64 * 1024;
const MAX_SOCKETS_PER_ORIGIN = 64;
/**
 * Idle pooled sockets are closed before Node's default server keep-alive timeout (5 s), so a delivery rarely picks a
 * socket the agent's server is closing at that very moment.
 */
const IDLE_SOCKET_MS = 4_000;

export class BlockedAddressError extends Error {
  readonly code = "EBLOCKED";
  constructor(addresses: readonly string[]) {
    super(
      `blocked address ${addresses.join(", ")} (private/loopback/link-local; allowed only when the relay runs with ${ALLOW_PRIVATE_VARIABLE}=true)`,
    );
    this.name = "BlockedAddressError";
  }
}

/** Resolves every address of a host name, as `dns.lookup` with `all: true` does. */
export type ResolveAll = (
  hostname: string,
  options: LookupOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const resolveWithDns: ResolveAll = (hostname, options, callback) =>
  dnsLookup(hostname, { ...options, all: true }, callback);

/**
 * A `lookup` for sockets that only ever hands out allowed addresses, so the address checked is the address connected
 * to: a name that resolves to a public address when the URL is saved and to 127.0.0.1 at delivery time gets nowhere.
 */
export function createGuardedLookup(allowPrivate: boolean, resolveAll: ResolveAll = resolveWithDns): LookupFunction {
  return (hostname, options, callback) => {
    resolveAll(hostname, options, (error, addresses) => {
      if (error) {
        callback(error, "");
        return;
      }
      const allowed = allowPrivate ? addresses : addresses.filter((entry) => !isBlockedAddress(entry.address));
      const first = allowed[0];
      if (first === undefined) {
        callback(
          addresses.length === 0
            ? Object.assign(new Error(`no addresses found for ${hostname}`), { code: "ENOTFOUND" })
            : new BlockedAddressError(addresses.map((entry) => entry.address)),
          "",
        );
        return;
      }
      if (options.all) callback(null, allowed);
      else callback(null, first.address, first.family);
    });
  };
}

function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.message === "") {
    // Happy-eyeballs connects report one error per address tried, and an empty message of their own.
    return error.errors.map(describeError).join("; ") || "connection failed";
  }
  if (error instanceof Error) return error.message || String((error as NodeJS.ErrnoException).code ?? error.name);
  return String(error);
}

/** A pooled socket the server closed while it sat idle; the request never reached the server's application. */
function isStaleSocketError(request: ClientRequest, error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return request.reusedSocket && (code === "ECONNRESET" || code === "EPIPE");
}

function decodeExcerpt(chunks: Buffer[]): string {
  // `stream: true` holds back a multi-byte character cut at the byte limit instead of turning it into U+FFFD.
  return new TextDecoder().decode(Buffer.concat(chunks), { stream: true }).trim();
}

export function createWebhookClient(options: WebhookClientOptions): WebhookClient {
  const { allowPrivate, now } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
  const agentOptions = { keepAlive: true, maxSockets: MAX_SOCKETS_PER_ORIGIN, timeout: IDLE_SOCKET_MS };
  const agents = { http: new HttpAgent(agentOptions), https: new HttpsAgent(agentOptions) };
  const lookup = createGuardedLookup(allowPrivate);
  let closed = false;
  /** Ends each send under way; closing the client (shutdown) must not leave attempts running past it. */
  const inFlight = new Set<() => void>();

  function send(request: WebhookRequest): Promise<WebhookOutcome> {
    const started = performance.now();
    const failure = (error: string): WebhookOutcome => ({
      ok: false,
      error,
      durationMs: performance.now() - started,
      excerpt: "",
    });
    if (closed) return Promise.resolve(failure("webhook client is closed"));

    let target: URL;
    try {
      target = new URL(request.url);
    } catch {
      return Promise.resolve(failure("invalid URL"));
    }
    const secure = target.protocol === "https:";
    if (!secure && target.protocol !== "http:")
      return Promise.resolve(failure(`unsupported URL scheme ${target.protocol}`));
    if (!secure && !allowPrivate)
      return Promise.resolve(
        failure(`refused http: URL (https is required unless the relay runs with ${ALLOW_PRIVATE_VARIABLE}=true)`),
      );
    const hostname = target.hostname.replace(/^\[(.*)\]$/, "$1");
    // Sockets skip `lookup` for IP literals, so those are checked here.
    if (!allowPrivate && isIP(hostname) !== 0 && isBlockedAddress(hostname)) {
      return Promise.resolve(failure(new BlockedAddressError([hostname]).message));
    }

    const payload = Buffer.from(request.body);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
    headers["content-type"] = "application/json";
    headers["user-agent"] = userAgent;
    headers["content-length"] = String(payload.byteLength);

    return new Promise<WebhookOutcome>((resolve) => {
      let done = false;
      let current: ClientRequest | undefined;
      let response: IncomingMessage | undefined;
      const excerptChunks: Buffer[] = [];
      let excerptBytes = 0;
      let bodyBytes = 0;

      const finish = (outcome: WebhookOutcome) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        inFlight.delete(abort);
        resolve(outcome);
      };
      const abort = () => {
        finish(failure("webhook client closed"));
        current?.destroy();
      };
      inFlight.add(abort);
      // An answer whose headers arrived counts by its status, even if its body is cut short by the timeout or the cap.
      const finishWithResponse = (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        const retryAfterMs = parseRetryAfterMs(res.headers["retry-after"], now());
        finish({
          ok: status >= 200 && status < 300,
          status,
          durationMs: performance.now() - started,
          excerpt: decodeExcerpt(excerptChunks),
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        });
      };
      const timer = setTimeout(() => {
        if (response) {
          finishWithResponse(response);
          response.destroy();
        } else {
          finish(failure(`timed out after ${timeoutMs} ms`));
          current?.destroy();
        }
      }, timeoutMs);

      const attempt = (mayRetryStaleSocket: boolean) => {
        const req = (secure ? httpsRequest : httpRequest)({
          protocol: target.protocol,
          hostname,
          port: target.port,
          path: `${target.pathname}${target.search}`,
          method: "POST",
          headers,
          agent: secure ? agents.https : agents.http,
          lookup,
        });
        current = req;
        req.on("error", (error) => {
          if (done || response || req !== current) return;
          // A socket reset by our own shutdown is not a stale keep-alive socket: nothing is sent again.
          if (mayRetryStaleSocket && !closed && isStaleSocketError(req, error)) attempt(false);
          else finish(failure(describeError(error)));
        });
        req.on("response", (res) => {
          response = res;
          const complete = () => finishWithResponse(res);
          res.on("data", (chunk: Buffer) => {
            bodyBytes += chunk.byteLength;
            if (excerptBytes < EXCERPT_BYTES) {
              const part = chunk.subarray(0, EXCERPT_BYTES - excerptBytes);
              excerptChunks.push(part);
              excerptBytes += part.byteLength;
            }
            if (bodyBytes > DRAIN_LIMIT_BYTES) {
              complete();
              res.destroy();
            }
          });
          res.on("end", complete);
          res.on("error", complete);
          res.on("close", complete);
        });
        req.end(payload);
      };

      try {
        attempt(true);
      } catch (error) {
        // request() throws synchronously for things like a header value with a line break.
        finish(failure(describeError(error)));
        current?.destroy();
      }
    });
  }

  return {
    send,
    close() {
      closed = true;
      for (const abort of [...inFlight]) abort();
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
