import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { gzipSync } from "node:zlib";

/**
 * A model server that misbehaves the ways issue 19 found (a real HTTP server on 127.0.0.1 port 0): each fault answers
 * every POST the same way, and the server records how many answers the client broke off (the relay closing the
 * connection) before the server had finished them. Answers that never end stop writing once their client is gone.
 */
export type UpstreamFault =
  /** One JSON answer of `bytes` (a completion whose text is that long), written in 64 KiB chunks. */
  | { kind: "huge-json"; bytes: number }
  /**
   * Valid JSON of about `bytes`, within the size limits, that is costly to parse: a usable completion beside an array
   * nested `bytes / 2` deep. Whole (`application/json`), or with `stream`, as the same event over and over.
   */
  | { kind: "nested-json"; bytes: number; stream?: boolean }
  /** An SSE line that never ends: `data: xxxx…` with no newline, 64 KiB at a time. */
  | { kind: "endless-line" }
  /** Well-formed chunks whose delta is `text` (empty, or spaces), one every `everyMs`, forever; `pad` adds that many bytes. */
  | { kind: "deltas-forever"; text: string; everyMs: number; pad?: number }
  /** A gzip answer that decompresses to `bytes` of JSON from a few hundred KiB. */
  | { kind: "gzip-bomb"; bytes: number }
  /** A stream whose connection is cut in the middle of an event's line. */
  | { kind: "cut-mid-line" }
  /** A stream whose events hold bytes that are not UTF-8. */
  | { kind: "invalid-utf8" };

export interface MisbehavingUpstream {
  /** Base URL with `/v1`. */
  url: string;
  fault: UpstreamFault;
  /** Answers the client closed before the server had written all of them. */
  brokenOff(): number;
  /** Requests received. */
  requests(): number;
  close(): Promise<void>;
}

const CHUNK = 64 * 1024;

function chunkEvent(text: string, pad = 0): string {
  const choice = {
    index: 0,
    delta: { content: text },
    finish_reason: null,
    ...(pad > 0 ? { logprobs: "x".repeat(pad) } : {}),
  };
  return `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [choice] })}\n\n`;
}

/** A gzip body that decompresses to `bytes` of JSON, made once per size (compressing 50 MB takes a while). */
const bombs = new Map<number, Buffer>();
function bomb(bytes: number): Buffer {
  let body = bombs.get(bytes);
  if (!body) {
    body = gzipSync(`{"choices":[{"index":0,"message":{"role":"assistant","content":"${"a".repeat(bytes)}"}}]}`);
    bombs.set(bytes, body);
  }
  return body;
}

/** Writes `next()` whenever the socket drains, until it returns undefined or the client goes away. */
function pump(res: ServerResponse, next: () => Buffer | string | undefined, onEnd: () => void): void {
  const write = () => {
    for (;;) {
      if (res.destroyed) return;
      const piece = next();
      if (piece === undefined) {
        res.end(onEnd);
        return;
      }
      if (!res.write(piece)) {
        res.once("drain", write);
        return;
      }
    }
  };
  write();
}

export async function startMisbehavingUpstream(initial: UpstreamFault): Promise<MisbehavingUpstream> {
  let brokenOff = 0;
  let requests = 0;
  const sockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setInterval>>();
  if (initial.kind === "gzip-bomb") bomb(initial.bytes);
  const state = { fault: initial };
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      requests++;
      let done = false;
      res.on("close", () => {
        if (!done) brokenOff++;
      });
      const finished = () => (done = true);
      const fault = state.fault;
      switch (fault.kind) {
        case "huge-json": {
          res.writeHead(200, { "content-type": "application/json" });
          const head =
            '{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"';
          let left = fault.bytes;
          let started = false;
          pump(
            res,
            () => {
              if (!started) return ((started = true), head);
              if (left <= 0) return left === 0 ? ((left = -1), '"},"finish_reason":"stop"}]}') : undefined;
              const size = Math.min(CHUNK, left);
              left -= size;
              return "a".repeat(size);
            },
            finished,
          );
          return;
        }
        case "nested-json": {
          const depth = Math.floor(fault.bytes / 2);
          const nested = `${"[".repeat(depth)}${"]".repeat(depth)}`;
          if (!fault.stream) {
            res.writeHead(200, { "content-type": "application/json" });
            const answer =
              '{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}],"pad":';
            res.end(`${answer}${nested}}`, finished);
            return;
          }
          res.writeHead(200, { "content-type": "text/event-stream" });
          const event = `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"pad":${nested}}\n\n`;
          pump(res, () => event, finished);
          return;
        }
        case "endless-line": {
          res.writeHead(200, { "content-type": "text/event-stream" });
          let started = false;
          const piece = "x".repeat(CHUNK);
          pump(res, () => (started ? piece : ((started = true), "data: ")), finished);
          return;
        }
        case "deltas-forever": {
          res.writeHead(200, { "content-type": "text/event-stream" });
          const timer = setInterval(() => {
            if (res.destroyed) {
              clearInterval(timer);
              timers.delete(timer);
              return;
            }
            res.write(chunkEvent(fault.text, fault.pad));
          }, fault.everyMs);
          timers.add(timer);
          return;
        }
        case "gzip-bomb": {
          const body = bomb(fault.bytes);
          res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
          res.end(body, finished);
          return;
        }
        case "cut-mid-line": {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write(chunkEvent("a + "));
          res.write('data: {"choices":[{"delta":{"content":"b');
          setTimeout(() => {
            finished();
            res.socket?.destroy();
          }, 20);
          return;
        }
        case "invalid-utf8": {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write(Buffer.from(chunkEvent("a \u00ff").replace("\u00ff", "#"), "utf8"));
          const bad = Buffer.from(chunkEvent("XX"), "utf8");
          const at = bad.indexOf("XX");
          bad[at] = 0xc3;
          bad[at + 1] = 0x28;
          res.write(bad);
          res.end("data: [DONE]\n\n", finished);
          return;
        }
      }
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get fault() {
      return state.fault;
    },
    set fault(next: UpstreamFault) {
      if (next.kind === "gzip-bomb") bomb(next.bytes);
      state.fault = next;
    },
    brokenOff: () => brokenOff,
    requests: () => requests,
    async close() {
      for (const timer of timers) clearInterval(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
