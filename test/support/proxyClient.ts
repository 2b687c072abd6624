// Clients that reach a relay through a TLS-terminating proxy as browsers, editors and agents do: https (HTTP/1.1 and
// HTTP/2) and wss, trusting only the test's own certificate, from a chosen loopback address.
import { connect as http2Connect, type ClientHttp2Session } from "node:http2";
import { Agent, request as httpsRequest } from "node:https";
import { type Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import type { TLSSocket } from "node:tls";
import WebSocket from "ws";
import { SITE, resolveToLoopback } from "./reverseProxy";

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface TlsAnswer extends Answer {
  /** The negotiated TLS version and the certificate's common name, as the client saw them. */
  tls: { protocol: string | null; subject: string | undefined };
}

export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  json?: unknown;
}

/**
 * One client of the proxy: its own connection pool, trusting only `ca`, connecting from `localAddress` (all of
 * 127.0.0.0/8 is this machine on Linux, so two clients on 127.0.0.2 and 127.0.0.3 are two addresses to nginx).
 */
export class ProxyClient {
  readonly agent: Agent;

  constructor(
    readonly origin: string,
    readonly ca: string,
    readonly localAddress = "127.0.0.1",
  ) {
    this.agent = new Agent({ ca, keepAlive: true, lookup: resolveToLoopback });
  }

  request(path: string, options: CallOptions = {}): Promise<TlsAnswer> {
    const headers: Record<string, string> = { ...options.headers };
    let body = options.body;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers["content-type"] = "application/json";
    }
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        `${this.origin}${path}`,
        { method: options.method ?? "GET", headers, agent: this.agent, localAddress: this.localAddress },
        (res) => {
          const socket = res.socket as TLSSocket;
          const cn = socket.getPeerCertificate().subject?.CN;
          const tls = { protocol: socket.getProtocol(), subject: Array.isArray(cn) ? cn.join(",") : cn };
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString("utf8"),
              tls,
            }),
          );
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  /** Posts a streamed completion and times every content chunk as it arrives. */
  stream(path: string, headers: Record<string, string>, json: unknown): Promise<StreamTiming> {
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        `${this.origin}${path}`,
        {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          agent: this.agent,
          localAddress: this.localAddress,
        },
        (res) => void timeStream(res, res.statusCode ?? 0, started).then(resolve, reject),
      );
      req.on("error", reject);
      req.end(JSON.stringify(json));
    });
  }

  /** A WebSocket to `path` on the proxy; resolves with the first frame (the relay's hello). */
  async socket(path: string, headers: Record<string, string>): Promise<OpenSocket> {
    const ws = new WebSocket(`${this.origin.replace(/^https/, "wss")}${path}`, {
      agent: this.agent,
      localAddress: this.localAddress,
      headers,
    });
    return openSocket(ws);
  }

  /** The answer to a WebSocket handshake that is refused; fails if it is accepted. */
  refusedSocket(path: string, headers: Record<string, string>): Promise<Answer> {
    const ws = new WebSocket(`${this.origin.replace(/^https/, "wss")}${path}`, {
      agent: this.agent,
      localAddress: this.localAddress,
      headers,
    });
    ws.on("error", () => undefined);
    return new Promise((resolve, reject) => {
      ws.on("open", () => {
        ws.terminate();
        reject(new Error(`the upgrade to ${path} was accepted`));
      });
      ws.on("unexpected-response", (_req, res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          ws.terminate();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") });
        });
      });
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** A plain-http request to the proxy's port 80 (as a browser typing the bare name would make). */
export function plainHttp(port: number, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers: { host: SITE } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

/** A streamed completion straight from the relay (plain http, no proxy), timed like `ProxyClient.stream`. */
export function directStream(
  url: string,
  headers: Record<string, string>,
  json: unknown,
  agent?: HttpAgent,
): Promise<StreamTiming> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: "POST", headers: { ...headers, "content-type": "application/json" }, ...(agent ? { agent } : {}) },
      (res) => void timeStream(res, res.statusCode ?? 0, started).then(resolve, reject),
    );
    req.on("error", reject);
    req.end(JSON.stringify(json));
  });
}

/** An HTTP/2 session with the proxy (as a browser's), trusting only `ca`. */
export function http2Session(origin: string, ca: string): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(origin, { ca, lookup: resolveToLoopback });
    session.once("connect", () => resolve(session));
    session.once("error", reject);
  });
}

/** A streamed completion over an HTTP/2 session, timed like `ProxyClient.stream`. */
export function http2Stream(
  session: ClientHttp2Session,
  path: string,
  headers: Record<string, string>,
  json: unknown,
): Promise<StreamTiming> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/json",
      ...headers,
    });
    stream.once(
      "response",
      (response) => void timeStream(stream, Number(response[":status"]), started).then(resolve, reject),
    );
    stream.once("error", reject);
    stream.end(JSON.stringify(json));
  });
}

export interface StreamTiming {
  status: number;
  /** Milliseconds from sending the request to each chunk carrying text. */
  contentAtMs: number[];
  /** Milliseconds from sending the request to the end of the stream. */
  endMs: number;
  /** The text of the content chunks, joined. */
  text: string;
  /** Every `data:` payload, in order (`[DONE]` included). */
  data: string[];
}

/** Reads a server-sent-events body, noting when each chunk with text arrives. */
function timeStream(body: Readable, status: number, started: number): Promise<StreamTiming> {
  const timing: StreamTiming = { status, contentAtMs: [], endMs: 0, text: "", data: [] };
  let pending = "";
  return new Promise((resolve, reject) => {
    body.on("data", (chunk: Buffer) => {
      const at = performance.now() - started;
      pending += chunk.toString("utf8");
      let end: number;
      while ((end = pending.indexOf("\n\n")) !== -1) {
        const event = pending.slice(0, end);
        pending = pending.slice(end + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data: ")) continue;
          const data = line.slice("data: ".length);
          timing.data.push(data);
          if (data === "[DONE]") continue;
          const parsed = JSON.parse(data) as { choices?: { delta?: { content?: string } }[] };
          const content = parsed.choices?.[0]?.delta?.content;
          if (content) {
            timing.contentAtMs.push(at);
            timing.text += content;
          }
        }
      }
    });
    body.on("end", () => {
      timing.endMs = performance.now() - started;
      resolve(timing);
    });
    body.on("error", reject);
  });
}

export interface OpenSocket {
  ws: WebSocket;
  hello: Record<string, unknown>;
  frames: Record<string, unknown>[];
  /** Resolves with the first frame (received so far or later) that `match` accepts; rejects after `timeoutMs`. */
  frame(match: (frame: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
}

function openSocket(ws: WebSocket): Promise<OpenSocket> {
  const frames: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  ws.on("message", (data) => {
    frames.push(JSON.parse(String(data)) as Record<string, unknown>);
    for (const wake of waiters) wake();
  });
  const frame: OpenSocket["frame"] = (match, timeoutMs = 5_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = frames.find(match);
        if (!found) return false;
        clearTimeout(timer);
        waiters.delete(wake);
        resolve(found);
        return true;
      };
      const wake = () => void check();
      const timer = setTimeout(() => {
        waiters.delete(wake);
        reject(new Error(`no matching frame within ${timeoutMs} ms; frames: ${JSON.stringify(frames)}`));
      }, timeoutMs);
      if (!check()) waiters.add(wake);
    });
  return new Promise((resolve, reject) => {
    ws.once("error", reject);
    ws.once("unexpected-response", (_req, res) =>
      reject(new Error(`the upgrade was refused with ${res.statusCode ?? "?"}`)),
    );
    void frame(() => true).then((hello) => resolve({ ws, hello, frames, frame }), reject);
  });
}
