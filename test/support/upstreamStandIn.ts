import { EventEmitter } from "node:events";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * A real HTTP server that speaks the OpenAI wire format (`/v1/completions`, `/v1/chat/completions`,
 * `/v1/models`), standing in for llama.cpp, vLLM, Ollama or OpenAI in tests and the benchmark.
 * Each request is answered by a scripted behaviour; every request is recorded, including whether the
 * client went away before the answer was complete.
 */

export type StandInBehaviour =
  /**
   * Answer normally. `text` is split into `chunks` pieces (default 3), or sent as given when it is an array.
   * `headersDelayMs` holds back the response headers, `firstChunkDelayMs` the first body byte after them,
   * `chunkDelayMs` each later chunk. `omitDone` ends the stream without `data: [DONE]`.
   */
  | {
      kind: "reply";
      text: string | readonly string[];
      chunks?: number;
      headersDelayMs?: number;
      firstChunkDelayMs?: number;
      chunkDelayMs?: number;
      finishReason?: "stop" | "length";
      omitDone?: boolean;
    }
  /** Answer with this status and body (an object is sent as JSON). */
  | { kind: "error"; status: number; body?: string | object; headersDelayMs?: number }
  /** Never answer; the request stays open until the client goes away or the server closes. */
  | { kind: "hang" }
  /** Send the headers and `sent` as chunks, then destroy the socket (after `delayMs`); with `sent: []` nothing is answered. */
  | { kind: "disconnect"; sent: readonly string[]; delayMs?: number }
  /** Answer 200 with exactly these bytes, for malformed or unusual streams. */
  | { kind: "raw"; body: string; contentType?: string; status?: number };

export type BehaviourSource = StandInBehaviour | ((request: RecordedRequest) => StandInBehaviour);

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or undefined when there was none. */
  body: unknown;
  /** True once the client closed the connection before the answer was complete. */
  clientAborted: boolean;
  /** Resolves when the client closes the connection before the answer was complete; never otherwise. */
  clientGone: Promise<void>;
}

export interface UpstreamStandIn {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:40123/v1`. */
  url: string;
  requests: RecordedRequest[];
  /** Sets the behaviour for every later request that has no scripted one. */
  setBehaviour(behaviour: BehaviourSource): void;
  /** Queues one-shot behaviours, used in order before the default one. */
  enqueue(...behaviours: StandInBehaviour[]): void;
  /** How many clients went away before their answer was complete. */
  clientDisconnects(): number;
  /** TCP connections from clients open right now (kept-alive ones included). */
  openSockets(): number;
  /** Resolves when the request at `index` (default: the latest) is abandoned by its client; rejects after `timeoutMs`. */
  waitForClientDisconnect(index?: number, timeoutMs?: number): Promise<void>;
  /**
   * Resolves once `condition()` holds, checked now and again after each request the stand-in records and each client
   * that goes away; rejects after `timeoutMs`.
   */
  until(condition: () => boolean, what?: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface StandInOptions {
  behaviour?: BehaviourSource;
  /** Model name reported by `/v1/models` and in answers that don't echo one. */
  model?: string;
  /** Set false in benchmarks so thousands of requests don't accumulate in memory. */
  record?: boolean;
}

const DEFAULT_BEHAVIOUR: StandInBehaviour = { kind: "reply", text: "Hello from the stand-in" };

export async function startUpstreamStandIn(options: StandInOptions = {}): Promise<UpstreamStandIn> {
  let behaviour: BehaviourSource = options.behaviour ?? DEFAULT_BEHAVIOUR;
  const queue: StandInBehaviour[] = [];
  const requests: RecordedRequest[] = [];
  const record = options.record ?? true;
  const defaultModel = options.model ?? "stand-in-model";
  let disconnects = 0;
  let sequence = 0;
  let closing = false;
  const changed = new EventEmitter();
  changed.setMaxListeners(0);

  const server = createServer((req, res) => {
    const bodyParts: Buffer[] = [];
    req.on("data", (part: Buffer) => bodyParts.push(part));
    req.on("end", () => {
      let body: unknown;
      const raw = Buffer.concat(bodyParts).toString("utf8");
      let resolveGone: () => void = () => undefined;
      const recorded: RecordedRequest = {
        method: req.method ?? "GET",
        path: (req.url ?? "/").split("?")[0] ?? "/",
        headers: req.headers,
        body: undefined,
        clientAborted: false,
        clientGone: new Promise<void>((resolve) => (resolveGone = resolve)),
      };
      const exchange: Exchange = { res, serverDestroyed: false, timers: [] };
      res.on("close", () => {
        for (const timer of exchange.timers) clearTimeout(timer);
        if (res.writableFinished || exchange.serverDestroyed || closing) return;
        recorded.clientAborted = true;
        disconnects++;
        resolveGone();
        changed.emit("change");
      });
      if (record) requests.push(recorded);
      try {
        body = raw === "" ? undefined : JSON.parse(raw);
      } catch {
        sendJson(res, 400, { error: { message: "Request body is not valid JSON", type: "invalid_request_error" } });
        changed.emit("change");
        return;
      }
      recorded.body = body;
      route(recorded, exchange);
      changed.emit("change");
    });
  });

  function route(request: RecordedRequest, exchange: Exchange): void {
    const { res } = exchange;
    if (request.method === "GET" && request.path === "/v1/models") {
      sendJson(res, 200, {
        object: "list",
        data: [{ id: defaultModel, object: "model", created: 0, owned_by: "stand-in" }],
      });
      return;
    }
    const api =
      request.path === "/v1/completions" ? "completions" : request.path === "/v1/chat/completions" ? "chat" : undefined;
    if (request.method !== "POST" || api === undefined) {
      sendJson(res, 404, {
        error: { message: `No route for ${request.method} ${request.path}`, type: "invalid_request_error" },
      });
      return;
    }
    const next = queue.shift() ?? (typeof behaviour === "function" ? behaviour(request) : behaviour);
    const fields = isRecord(request.body) ? request.body : {};
    const wire: Wire = {
      api,
      stream: fields["stream"] === true,
      model: typeof fields["model"] === "string" ? fields["model"] : defaultModel,
      includeUsage: isRecord(fields["stream_options"]) && fields["stream_options"]["include_usage"] === true,
      id: `${api === "chat" ? "chatcmpl" : "cmpl"}-standin-${++sequence}`,
    };
    respond(next, wire, exchange);
  }

  function respond(b: StandInBehaviour, wire: Wire, exchange: Exchange): void {
    const { res } = exchange;
    switch (b.kind) {
      case "hang":
        return;
      case "raw":
        res.writeHead(b.status ?? 200, { "content-type": b.contentType ?? "text/event-stream" });
        res.end(b.body);
        return;
      case "error":
        later(exchange, b.headersDelayMs, () => {
          if (typeof b.body === "string") {
            res.writeHead(b.status, { "content-type": "text/plain; charset=utf-8" });
            res.end(b.body);
          } else {
            sendJson(
              res,
              b.status,
              b.body ?? { error: { message: "The stand-in was told to fail", type: "server_error" } },
            );
          }
        });
        return;
      case "disconnect": {
        const destroy = () => {
          exchange.serverDestroyed = true;
          res.socket?.destroy();
        };
        if (b.sent.length === 0) {
          later(exchange, b.delayMs, destroy);
          return;
        }
        startStream(res);
        // Destroying at once would discard writes still buffered in the socket; wait until they are flushed.
        res.write(b.sent.map((fragment) => encodeChunk(wire, fragment, null)).join(""), () =>
          later(exchange, b.delayMs, destroy),
        );
        return;
      }
      case "reply":
        later(exchange, b.headersDelayMs, () => reply(b, wire, exchange));
        return;
    }
  }

  function reply(b: Extract<StandInBehaviour, { kind: "reply" }>, wire: Wire, exchange: Exchange): void {
    const { res } = exchange;
    const fragments = typeof b.text === "string" ? splitText(b.text, b.chunks ?? 3) : [...b.text];
    const finishReason = b.finishReason ?? "stop";
    if (!wire.stream) {
      sendJson(res, 200, wholeAnswer(wire, fragments.join(""), finishReason));
      return;
    }
    startStream(res);
    const tail = () => {
      let out = encodeChunk(wire, "", finishReason);
      if (wire.includeUsage)
        out += `data: ${JSON.stringify({ ...envelope(wire), choices: [], usage: usage(fragments.join("")) })}\n\n`;
      if (!b.omitDone) out += "data: [DONE]\n\n";
      res.end(out);
    };
    if (wire.api === "chat") res.write(encodeChunk(wire, "", null, true));
    const chunkDelay = b.chunkDelayMs ?? 0;
    if (chunkDelay === 0 && (b.firstChunkDelayMs ?? 0) === 0) {
      // The fast path of the benchmark: no timers, one write per fragment.
      for (const fragment of fragments) res.write(encodeChunk(wire, fragment, null));
      tail();
      return;
    }
    let index = 0;
    const step = () => {
      if (res.destroyed) return;
      const fragment = fragments[index++];
      if (fragment === undefined) {
        tail();
        return;
      }
      res.write(encodeChunk(wire, fragment, null));
      later(exchange, chunkDelay, step);
    };
    later(exchange, b.firstChunkDelayMs, step);
  }

  const sockets = new Set<Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    setBehaviour(next) {
      behaviour = next;
    },
    enqueue(...behaviours) {
      queue.push(...behaviours);
    },
    clientDisconnects: () => disconnects,
    openSockets: () => sockets.size,
    waitForClientDisconnect(index = requests.length - 1, timeoutMs = 2000) {
      const request = requests[index];
      if (!request) return Promise.reject(new Error(`upstream stand-in: no request #${index} recorded`));
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new Error(`upstream stand-in: client of request #${index} still connected after ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
      return Promise.race([request.clientGone, timeout]).finally(() => clearTimeout(timer));
    },
    until(condition, what = "the condition", timeoutMs = 2000) {
      if (condition()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!condition()) return;
          changed.off("change", check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          changed.off("change", check);
          reject(new Error(`upstream stand-in: timed out after ${timeoutMs} ms waiting for ${what}`));
        }, timeoutMs);
        changed.on("change", check);
      });
    },
    close() {
      closing = true;
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

interface Exchange {
  res: ServerResponse<IncomingMessage>;
  serverDestroyed: boolean;
  timers: NodeJS.Timeout[];
}

interface Wire {
  api: "chat" | "completions";
  stream: boolean;
  model: string;
  includeUsage: boolean;
  id: string;
}

function later(exchange: Exchange, delayMs: number | undefined, run: () => void): void {
  if (!delayMs) {
    run();
    return;
  }
  exchange.timers.push(
    setTimeout(() => {
      if (!exchange.res.destroyed) run();
    }, delayMs),
  );
}

function startStream(res: ServerResponse): void {
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  res.flushHeaders();
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function envelope(wire: Wire) {
  return {
    id: wire.id,
    object: wire.api === "chat" ? "chat.completion.chunk" : "text_completion",
    created: 1_700_000_000,
    model: wire.model,
  };
}

function encodeChunk(wire: Wire, text: string, finishReason: string | null, roleOnly = false): string {
  const choice =
    wire.api === "chat"
      ? {
          index: 0,
          delta: roleOnly ? { role: "assistant", content: "" } : finishReason ? {} : { content: text },
          logprobs: null,
          finish_reason: finishReason,
        }
      : { index: 0, text, logprobs: null, finish_reason: finishReason };
  return `data: ${JSON.stringify({ ...envelope(wire), choices: [choice] })}\n\n`;
}

function wholeAnswer(wire: Wire, text: string, finishReason: string) {
  const base = { id: wire.id, created: 1_700_000_000, model: wire.model, usage: usage(text) };
  return wire.api === "chat"
    ? {
        ...base,
        object: "chat.completion",
        choices: [
          { index: 0, message: { role: "assistant", content: text }, logprobs: null, finish_reason: finishReason },
        ],
      }
    : {
        ...base,
        object: "text_completion",
        choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason }],
      };
}

function usage(text: string) {
  const completion = Math.max(1, Math.ceil(text.length / 4));
  return { prompt_tokens: 10, completion_tokens: completion, total_tokens: 10 + completion };
}

/** Splits into `count` pieces of similar length without cutting a surrogate pair. */
export function splitText(text: string, count: number): string[] {
  const chars = Array.from(text);
  const pieces = Math.max(1, Math.min(count, chars.length));
  const out: string[] = [];
  for (let i = 0; i < pieces; i++) {
    out.push(
      chars.slice(Math.floor((i * chars.length) / pieces), Math.floor(((i + 1) * chars.length) / pieces)).join(""),
    );
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
