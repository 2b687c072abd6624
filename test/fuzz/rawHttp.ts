import { connect } from "node:net";

/**
 * HTTP/1.1 over a bare TCP socket. `fetch` and `node:http` refuse to send most of what the fuzzer needs (broken
 * %-escapes, control characters in headers, a Content-Length that lies, two Authorization headers), so requests
 * are written byte for byte and the first response is parsed here.
 */
export interface RawRequest {
  method: string;
  /** The request target exactly as sent (UTF-8 when it holds non-ASCII). */
  target: string;
  /** Sent in this order; a name may repeat. A Buffer value is sent as is (invalid UTF-8, control bytes). */
  headers: [string, string | Buffer][];
  body?: Buffer | undefined;
  /** Replaces the whole request with these bytes (a garbage request line, a wrong HTTP version). */
  raw?: Buffer | undefined;
  /**
   * For a request that never completes (a Content-Length longer than the body): after this many ms the client
   * closes its side, as a client that gave up would.
   */
  halfCloseAfterMs?: number | undefined;
}

export interface RawResponse {
  status: number;
  /** Lower-case names; every value of a repeated header. */
  headers: Map<string, string[]>;
  body: Buffer;
  /** The status line and headers as received. */
  head: string;
}

export type RawOutcome =
  | { kind: "response"; response: RawResponse; ms: number }
  /** The server closed the connection without a response, or in the middle of one. */
  | { kind: "closed"; ms: number; received: number }
  | { kind: "timeout"; ms: number }
  | { kind: "error"; ms: number; message: string };

export function header(response: RawResponse, name: string): string | undefined {
  return response.headers.get(name.toLowerCase())?.[0];
}

export function serialize(request: RawRequest): Buffer {
  if (request.raw) return request.raw;
  const parts: Buffer[] = [Buffer.from(`${request.method} ${request.target} HTTP/1.1\r\n`, "utf8")];
  for (const [name, value] of request.headers) {
    parts.push(
      Buffer.from(`${name}: `, "utf8"),
      typeof value === "string" ? Buffer.from(value, "utf8") : value,
      Buffer.from("\r\n"),
    );
  }
  parts.push(Buffer.from("\r\n"));
  if (request.body) parts.push(request.body);
  return Buffer.concat(parts);
}

/** Incremental parser for one response; answers undefined until the response is complete. */
function createParser(method: string) {
  let buffer: Buffer = Buffer.alloc(0);
  return {
    push(chunk: Buffer): void {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    },
    get received(): number {
      return buffer.length;
    },
    /** The response, if it is complete; `ended` says the server closed the connection. */
    parse(ended: boolean): RawResponse | undefined {
      let offset = 0;
      for (;;) {
        const end = buffer.indexOf("\r\n\r\n", offset);
        if (end === -1) return undefined;
        const head = buffer.subarray(offset, end).toString("latin1");
        const [statusLine = "", ...lines] = head.split("\r\n");
        const status = Number(/^HTTP\/\d\.\d (\d{3})/.exec(statusLine)?.[1] ?? NaN);
        if (!Number.isInteger(status)) return undefined;
        const headers = new Map<string, string[]>();
        for (const line of lines) {
          const colon = line.indexOf(":");
          if (colon === -1) continue;
          const name = line.slice(0, colon).trim().toLowerCase();
          headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
        }
        const bodyStart = end + 4;
        // An interim response (100 Continue) is followed by the real one.
        if (status >= 100 && status < 200 && status !== 101) {
          offset = bodyStart;
          continue;
        }
        const finish = (body: Buffer): RawResponse => ({ status, headers, body, head });
        if (status === 101 || method === "HEAD" || status === 204 || status === 304) return finish(Buffer.alloc(0));
        const rest = buffer.subarray(bodyStart);
        const encoding = headers.get("transfer-encoding")?.join(",").toLowerCase() ?? "";
        // A body cut short by the connection closing is no response: the caller sees the connection closed.
        if (encoding.includes("chunked")) {
          const decoded = decodeChunked(rest);
          return decoded ? finish(decoded) : undefined;
        }
        const length = headers.get("content-length")?.[0];
        if (length !== undefined) {
          const size = Number(length);
          return rest.length >= size ? finish(rest.subarray(0, size)) : undefined;
        }
        return ended ? finish(rest) : undefined;
      }
    },
  };
}

/** The body of a complete chunked message, or undefined while the last chunk has not arrived. */
function decodeChunked(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = data.indexOf("\r\n", offset);
    if (lineEnd === -1) return undefined;
    const size = parseInt(data.subarray(offset, lineEnd).toString("latin1"), 16);
    if (!Number.isFinite(size)) return undefined;
    const start = lineEnd + 2;
    if (size === 0) return Buffer.concat(parts);
    if (data.length < start + size + 2) return undefined;
    parts.push(data.subarray(start, start + size));
    offset = start + size + 2;
  }
}

/** Sends one request on a fresh connection and resolves with the first response, or with why there was none. */
export function sendRaw(
  address: { host: string; port: number },
  request: RawRequest,
  timeoutMs: number,
): Promise<RawOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round((performance.now() - started) * 10) / 10;
  return new Promise((resolve) => {
    const parser = createParser(request.method);
    const socket = connect({ host: address.host, port: address.port, noDelay: true });
    let settled = false;
    const settle = (outcome: RawOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(halfClose);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => settle({ kind: "timeout", ms: elapsed() }), timeoutMs);
    let halfClose: NodeJS.Timeout | undefined;
    socket.on("connect", () => {
      socket.write(serialize(request));
      if (request.halfCloseAfterMs !== undefined) halfClose = setTimeout(() => socket.end(), request.halfCloseAfterMs);
    });
    socket.on("data", (chunk: Buffer) => {
      parser.push(chunk);
      const response = parser.parse(false);
      if (response) settle({ kind: "response", response, ms: elapsed() });
    });
    const ended = () => {
      const response = parser.parse(true);
      settle(
        response
          ? { kind: "response", response, ms: elapsed() }
          : { kind: "closed", ms: elapsed(), received: parser.received },
      );
    };
    socket.on("end", ended);
    socket.on("close", ended);
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // A reset after a complete response still counts as that response.
      const response = parser.parse(true);
      if (response) settle({ kind: "response", response, ms: elapsed() });
      else if (error.code === "ECONNRESET" || error.code === "EPIPE")
        settle({ kind: "closed", ms: elapsed(), received: parser.received });
      else settle({ kind: "error", ms: elapsed(), message: error.message });
    });
  });
}
