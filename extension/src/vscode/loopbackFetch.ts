import * as http from "node:http";
import type { FetchLike } from "../core/types";

/**
 * Host names that are this machine. VS Code's proxy resolver sends exactly these direct, whatever the proxy settings
 * (`@vscode/proxy-agent` 0.32.0 `useProxySettings`, out/index.js line 125 as shipped in code-server 4.100.3), so
 * reaching them without VS Code's `fetch` loses no proxy support. `URL.hostname` keeps IPv6 brackets.
 */
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Statuses whose response has no body (Fetch standard, "null body status"): `Response` refuses a body for them. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** Connections kept to a relay on this machine: a pause's completion, its next edit and a usage batch at once, and some room. */
const MAX_SOCKETS = 8;
const MAX_FREE_SOCKETS = 4;

export interface LoopbackFetch {
  readonly fetch: FetchLike;
  /** Closes the kept connections (on deactivate). */
  dispose(): void;
}

/**
 * The extension's transport: a relay on this machine over `http:` is reached through one kept-alive Node `http` agent;
 * every other relay through `fallback` (VS Code's `fetch`, which applies the proxy settings and the system's
 * certificates).
 *
 * Why: VS Code 1.100's `fetch` wrapper gives every request a new undici `Agent` when it adds certificates, which it
 * does by default (`createFetchPatch`, out/index.js lines 504 to 536, the same package), so each pause opened a new
 * connection and went through undici's `fetch`; measured outside VS Code, that took the request 1.4 ms to reach a
 * loopback server at the median against 0.4 ms on a kept connection (docs/benchmarks.md, "Next edits").
 * VS Code's `http` patch keeps the caller's agent for `localhost` and `127.0.0.1` (`createHttpPatch`, line 348:
 * `originalAgent` is kept when `isLocalhost`), so the connection is reused; for `[::1]`, which that check leaves out,
 * VS Code swaps in its own agent, which reaches it direct but keeps no connection.
 */
export function createLoopbackFetch(fallback: FetchLike): LoopbackFetch {
  const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, maxFreeSockets: MAX_FREE_SOCKETS });
  const fetch: FetchLike = (url, init) => {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" || !LOOPBACK_HOSTS.has(parsed.hostname)) return fallback(url, init);
    return send(agent, parsed, init, true);
  };
  return { fetch, dispose: () => agent.destroy() };
}

function send(agent: http.Agent, url: URL, init: Parameters<FetchLike>[1], mayRetry: boolean): Promise<Response> {
  const { signal } = init;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<Response>((resolve, reject) => {
    const body = init.body === undefined ? undefined : Buffer.from(init.body, "utf8");
    const headers: http.OutgoingHttpHeaders = { ...init.headers };
    if (body !== undefined) headers["content-length"] = body.byteLength;
    const request = http.request(url, { method: init.method, headers, agent });
    let answered = false;
    const onAbort = () => request.destroy(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    const settle = () => signal.removeEventListener("abort", onAbort);
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (answered) return; // The body's stream carries it (below).
      settle();
      if (signal.aborted) return reject(abortReason(signal));
      // A kept connection the relay closed while it was idle fails the next request written to it before the relay
      // reads a byte of it; Node's documentation gives this retry for exactly that case (http, `request.reusedSocket`).
      if (mayRetry && request.reusedSocket && (error.code === "ECONNRESET" || error.code === "EPIPE"))
        return resolve(send(agent, url, init, false));
      // As `fetch` does: a TypeError whose cause says what went wrong, which the callers' messages read.
      reject(new TypeError("fetch failed", { cause: error }));
    });
    request.on("response", (response) => {
      answered = true;
      const head = { status: response.statusCode ?? 0, statusText: response.statusMessage ?? "" };
      response.on("close", settle);
      // Node's parser takes any three digits; `Response` only 200 to 599 (a final status), and throws otherwise.
      if (head.status < 200 || head.status > 599) {
        response.destroy();
        return reject(new TypeError("fetch failed", { cause: new Error(`HTTP status ${head.status} from the relay`) }));
      }
      const responseHeaders = new Headers();
      const raw = response.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) responseHeaders.append(raw[i] as string, raw[i + 1] as string);
      if (NULL_BODY_STATUSES.has(head.status)) {
        response.resume();
        return resolve(new Response(null, { ...head, headers: responseHeaders }));
      }
      resolve(new Response(bodyStream(response, signal), { ...head, headers: responseHeaders }));
    });
    request.end(body);
  });
}

/** The answer's bytes as a web stream, read as the reader asks (the socket pauses while the stream is full). */
function bodyStream(response: http.IncomingMessage, signal: AbortSignal): ReadableStream<Uint8Array> {
  let done = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      response.on("data", (chunk: Buffer) => {
        if (done) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) response.pause();
      });
      response.on("end", () => {
        if (!done) controller.close();
        done = true;
      });
      // A connection cut before the answer's end, or the request destroyed by the signal, errors the reader as
      // `fetch`'s body would ("terminated").
      response.on("close", () => {
        if (done) return;
        done = true;
        controller.error(signal.aborted ? abortReason(signal) : new TypeError("terminated"));
      });
      response.on("error", () => undefined); // Said by "close" above; an unheard "error" would throw.
    },
    pull() {
      response.resume();
    },
    cancel() {
      done = true;
      response.destroy();
    },
  });
}

/** What `fetch` rejects with when its signal aborts: the signal's reason (an `AbortError` unless one was given). */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException("This operation was aborted", "AbortError");
}
