import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { splitText } from "../upstreamStandIn";

/**
 * The plumbing the strict model-server stand-ins share: a real HTTP server on 127.0.0.1 port 0 that records each
 * request (raw bytes and parsed JSON) and answers with what the "model" is scripted to write. Each stand-in
 * (vllm.ts, llamaCpp.ts, ollama.ts, mistral.ts, tgi.ts) mirrors its server's documented routes, checks and
 * shapes, as described in notes-internal/model-servers.md and cited there.
 */

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received. */
  raw: string;
  /** The parsed JSON body; undefined when there was none or it was not JSON. */
  body: unknown;
}

/** What the model writes: split into `chunks` pieces (default 3), or sent as the pieces given. */
export interface Reply {
  text: string | readonly string[];
  chunks?: number;
  /** Answer one JSON object even if a stream was asked for, as some servers and proxies do. */
  json?: boolean;
}

export interface StandIn {
  /** The server's root, e.g. `http://127.0.0.1:40123`; OpenAI-style routes are under `${origin}/v1`. */
  origin: string;
  requests: RecordedRequest[];
  /** Replies for the next generations, in order; after them the default reply. */
  enqueue(...replies: (string | Reply)[]): void;
  close(): Promise<void>;
}

export interface StandInBase {
  /** What the model writes when nothing is queued. */
  reply?: string | Reply;
  /** Keep no requests (benchmarks). */
  record?: boolean;
  /** Answer one JSON object even when `stream: true` was asked, as some servers and proxies do. */
  ignoreStream?: boolean;
}

export interface Handler {
  (request: RecordedRequest, res: ServerResponse, generation: Generation): void;
}

/** Draws the next scripted reply: its pieces, and whether to answer one JSON object whatever was asked. */
export interface Generation {
  next(): { pieces: string[]; json: boolean };
}

export async function startStandInServer(base: StandInBase, handle: Handler): Promise<StandIn> {
  const queue: Reply[] = [];
  const fallback = toReply(base.reply ?? "Hello from the stand-in");
  const requests: RecordedRequest[] = [];
  const generation: Generation = {
    next() {
      const reply = queue.shift() ?? fallback;
      const pieces = typeof reply.text === "string" ? splitText(reply.text, reply.chunks ?? 3) : [...reply.text];
      return { pieces, json: reply.json === true || base.ignoreStream === true };
    },
  };
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const raw = Buffer.concat(parts).toString("utf8");
      let body: unknown;
      try {
        body = raw === "" ? undefined : JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const recorded: RecordedRequest = {
        method: req.method ?? "GET",
        path: (req.url ?? "/").split("?")[0] ?? "/",
        headers: req.headers,
        raw,
        body,
      };
      if (base.record !== false) requests.push(recorded);
      handle(recorded, res, generation);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    enqueue(...replies) {
      queue.push(...replies.map(toReply));
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function toReply(reply: string | Reply): Reply {
  return typeof reply === "string" ? { text: reply } : reply;
}

/** Compact JSON, as Python's starlette, Go's encoding/json and nlohmann::json all write it. */
export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  options: { contentType?: string; trailingNewline?: boolean } = {},
): void {
  const text = `${JSON.stringify(value)}${options.trailingNewline ? "\n" : ""}`;
  res.writeHead(status, {
    "content-type": options.contentType ?? "application/json",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  contentType = "text/plain; charset=utf-8",
): void {
  res.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Starts a server-sent event stream; each event is `data: <compact json>\n\n`. */
export function startEvents(res: ServerResponse, contentType = "text/event-stream"): (data: unknown) => void {
  res.writeHead(200, { "content-type": contentType, "cache-control": "no-cache", connection: "keep-alive" });
  return (data) => res.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
}

/**
 * What a server does with `stop`: the text ends before the first stop string (which is not returned), and the
 * generation ends. The pieces keep their boundaries up to the cut.
 */
export function applyStops(
  pieces: readonly string[],
  stops: readonly string[],
): { pieces: string[]; stoppedAt: string | undefined } {
  const whole = pieces.join("");
  let cut = -1;
  let stoppedAt: string | undefined;
  for (const stop of stops) {
    const at = stop === "" ? -1 : whole.indexOf(stop);
    if (at >= 0 && (cut < 0 || at < cut)) {
      cut = at;
      stoppedAt = stop;
    }
  }
  if (cut < 0) return { pieces: [...pieces], stoppedAt: undefined };
  const out: string[] = [];
  let used = 0;
  for (const piece of pieces) {
    if (used >= cut) break;
    out.push(piece.slice(0, cut - used));
    used += piece.length;
  }
  return { pieces: out.filter((piece) => piece !== ""), stoppedAt };
}

export type JsonType =
  "null" | "string" | "integer" | "number" | "boolean" | "array" | "object" | "string[]" | "integer[]";

export function jsonType(value: unknown): Exclude<JsonType, "string[]" | "integer[]"> {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  if (typeof value === "string" || typeof value === "boolean") return typeof value as "string" | "boolean";
  return "object";
}

function matches(value: unknown, type: JsonType): boolean {
  const actual = jsonType(value);
  if (type === "number") return actual === "number" || actual === "integer";
  if (type === "string[]") return Array.isArray(value) && value.every((item) => typeof item === "string");
  if (type === "integer[]") return Array.isArray(value) && value.every((item) => Number.isInteger(item));
  return actual === type;
}

export interface FieldProblem {
  field: string;
  expected: readonly JsonType[];
  received: string;
}

/** The first field of `body` whose value is not of one of its allowed types (absent fields are not checked). */
export function typeProblem(
  body: Record<string, unknown>,
  spec: Readonly<Record<string, readonly JsonType[]>>,
): FieldProblem | undefined {
  for (const [field, types] of Object.entries(spec)) {
    if (!(field in body)) continue;
    const value = body[field];
    if (!types.some((type) => matches(value, type))) return { field, expected: types, received: jsonType(value) };
  }
  return undefined;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A crude token count for `usage` and `n_predict`: whitespace-separated words and punctuation runs. */
export function roughTokens(text: string): number {
  return text.match(/\w+|[^\w\s]+/g)?.length ?? 0;
}
