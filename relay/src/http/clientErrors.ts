import { type RequestListener, type Server, type ServerResponse, STATUS_CODES, maxHeaderSize } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { RelayError } from "@tab-relay/shared";
import type { Logger } from "../logger";

/**
 * Requests that never reach the app: Node's HTTP parser (llhttp) refuses a malformed one before there is a request
 * object, and answers it itself with a bare `400`, `431` or `408` and no body (lib/_http_server.js `socketOnError`,
 * Node 20). Here those answers carry the API's error envelope instead, with a message naming what is wrong.
 */

/**
 * How long the relay waits for a request's headers, and for the whole request, headers and body, from its first
 * byte. Node's parser measures both from the start of a message until it is complete and forgets a request once its
 * body is in (src/node_http_parser.cc: `on_message_complete` pops the parser from the active connections that
 * `ConnectionsList::Expired` checks), so neither limits a response: a completion streams for as long as it takes.
 * A connection that sends nothing at all counts against `headersTimeoutMs` from when it opened.
 */
export interface HttpTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** How often Node looks for requests past those limits (its default, 30 s, would let one run 30 s late). */
  checkIntervalMs: number;
}

/**
 * 10 s for the headers (a client sends them in one write; Node's default, 60 s, lets a slow-headers client hold a
 * connection a minute at a time), 30 s for the whole request (the default body limit, 512 KiB, needs 17 KiB/s;
 * Node's default is 300 s).
 */
export const HTTP_TIMEOUTS: Readonly<HttpTimeouts> = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  checkIntervalMs: 1_000,
});

/**
 * After answering on a connection it is about to close, the relay reads and discards what the client still sends
 * for this long before closing: closing with unread bytes makes the kernel send a reset, which can destroy the answer
 * before the client reads it (RFC 9112 §9.6, "tear-down").
 */
export const LINGER_MS = 2_000;

interface ParseError extends Error {
  code?: string;
  /** llhttp's own words for what it refused ("Invalid header value char"). */
  reason?: string;
}

/** Node's response in flight on a connection: the one the client reads next. Node itself checks it the same way. */
function inFlight(socket: Duplex): ServerResponse | undefined {
  return (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

/**
 * What to answer for an error Node's HTTP server reports on a connection: a refused request (llhttp's `HPE_*`
 * codes, listed in deps/llhttp/include/llhttp.h) or one that did not arrive in time. Undefined for a failure of the
 * connection itself (a reset, a broken pipe): nobody is left to answer.
 */
export function clientErrorAnswer(
  error: ParseError,
  context: { bodyStarted: boolean; timeouts: Readonly<HttpTimeouts> },
): RelayError | undefined {
  const invalid = (message: string) => new RelayError("VALIDATION_ERROR", message);
  const reason = error.reason ?? "";
  switch (error.code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return context.bodyStarted
        ? invalid(`body: not received completely within ${context.timeouts.requestTimeoutMs / 1000} s`)
        : invalid(`headers: not received completely within ${context.timeouts.headersTimeoutMs / 1000} s`);
    case "HPE_HEADER_OVERFLOW":
      // No 431 in the error table: a 400 that says which limit the request broke.
      return invalid(
        `headers: the request line and headers are larger than ${Math.round(maxHeaderSize / 1024)} KiB together`,
      );
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new RelayError("PAYLOAD_TOO_LARGE", "body: chunk extensions are larger than 16 KiB");
    case "HPE_INVALID_METHOD":
      return invalid(
        "method: not an HTTP method (a request starts with a method such as GET or POST; this relay speaks plain HTTP/1.1 here, not TLS)",
      );
    case "HPE_INVALID_URL":
      return invalid(
        "path: holds a character that must be percent-encoded (a space, a control character or a byte beyond ASCII)",
      );
    case "HPE_INVALID_CONSTANT":
    case "HPE_INVALID_VERSION":
      return invalid("request: the request line must be a method, a path and HTTP/1.1, separated by single spaces");
    case "HPE_PAUSED_H2_UPGRADE":
      return invalid("request: HTTP/2 without TLS is not spoken here; send HTTP/1.1");
    case "HPE_INVALID_HEADER_TOKEN":
    case "HPE_LF_EXPECTED":
    case "HPE_CR_EXPECTED":
      if (reason === "Invalid header value char") return invalid("headers: a value holds a control character");
      if (/whitespace/i.test(reason))
        return invalid("headers: a line folded onto the next (obs-fold) or a space before a colon is not accepted");
      return invalid(
        "headers: each line must be a name of token characters, a colon and a value (a name holds no spaces, colons or bytes beyond ASCII)",
      );
    case "HPE_INVALID_CONTENT_LENGTH":
      return invalid("Content-Length: must be a decimal number of bytes");
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return /transfer-encoding/i.test(reason)
        ? invalid("Content-Length: not allowed together with Transfer-Encoding (RFC 9112 §6.3)")
        : invalid("Content-Length: sent more than once");
    case "HPE_INVALID_TRANSFER_ENCODING":
      return /content-length/i.test(reason)
        ? invalid("Transfer-Encoding: not allowed together with Content-Length (RFC 9112 §6.3)")
        : invalid("Transfer-Encoding: must be chunked, the last coding of the list");
    case "HPE_INVALID_CHUNK_SIZE":
    case "HPE_STRICT":
      return invalid(
        "body: the chunked framing is broken (a chunk is a hexadecimal size, CRLF, that many bytes, CRLF)",
      );
    case "HPE_INVALID_EOF_STATE":
      return context.bodyStarted
        ? invalid("body: not received completely (the client closed its side first)")
        : invalid("request: ended before its headers did");
    default:
      return error.code?.startsWith("HPE_")
        ? invalid(`request: not valid HTTP/1.1 (${reason || error.code})`)
        : undefined;
  }
}

/**
 * Writes `error` as a whole HTTP/1.1 response in the API's envelope on a connection the relay then closes: its side
 * first, then, once the client has closed too or after LINGER_MS, the socket.
 */
export function endWithError(
  socket: Duplex,
  error: RelayError,
  options: { now: number; headers?: Readonly<Record<string, string>> },
): void {
  const body = JSON.stringify(error.toBody());
  const extra = Object.entries({ ...options.headers, ...error.headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  const head =
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? error.code}\r\n` +
    `Date: ${new Date(options.now).toUTCString()}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n`;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  socket.once("end", () => socket.destroy());
  socket.end(head + body);
  // A socket handed over by Node's parser (an upgrade, CONNECT) is paused; flowing without a listener discards.
  socket.resume();
}

/**
 * Takes over Node's own answers to requests the app never sees: malformed requests (`clientError`), `CONNECT`
 * (which Node would close without a word) and an `Expect` other than 100-continue (which Node would answer with a
 * bare 417). `app` serves the requests Node holds back for their expectation.
 */
export function attachClientErrors(
  server: Server,
  deps: { logger: Logger; now(): number; app: RequestListener; timeouts: Readonly<HttpTimeouts> },
): void {
  // Node reports every later parse error on a connection it has refused again (lib/_http_server.js calls
  // socketOnError for each chunk); one answer per connection.
  const answered = new WeakSet<Duplex>();

  /**
   * Answers once the client has read every response before this one: a response in flight for a complete earlier
   * request (pipelining) is let finish first, so the answer arrives in order. A response whose head is already out
   * for the very request that failed cannot be followed by another; that connection is cut, as Node does.
   */
  function answerInTurn(socket: Duplex, error: RelayError): void {
    const pending = inFlight(socket);
    // Node detaches a response from its socket on its 'finish' (lib/_http_server.js resOnFinish, which listens
    // first), so one still attached has not finished, even when all its bytes are written.
    if (pending !== undefined && pending.req.complete) {
      pending.once("finish", () => answerInTurn(socket, error));
      return;
    }
    if (!socket.writable || pending?.headersSent === true) {
      socket.destroy();
      return;
    }
    endWithError(socket, error, { now: deps.now() });
  }

  // Node's docs: the listener is responsible for closing or destroying the socket. It does, at once or (behind a
  // pipelined response) once that response is out. It runs inside Node's parser callback, where a throw would be
  // uncaught, so nothing escapes it.
  server.on("clientError", (error: ParseError, socket: Duplex) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    try {
      const pending = inFlight(socket);
      const answer = clientErrorAnswer(error, {
        bodyStarted: pending !== undefined && !pending.req.complete,
        timeouts: deps.timeouts,
      });
      // A connection that never sent a byte and timed out is closed without an answer: a browser's preconnected
      // socket must not read a 400 as the answer to a request it sends later.
      if (answer === undefined || (socket as Socket).bytesRead === 0 || socket.destroyed) {
        socket.destroy();
        return;
      }
      if (deps.logger.enabled("info")) {
        deps.logger.info("malformed request", {
          status: answer.status,
          code: error.code,
          message: answer.message,
          client: (socket as Socket).remoteAddress,
        });
      }
      answerInTurn(socket, answer);
    } catch (failure) {
      deps.logger.error("could not answer a malformed request", { error: failure });
      socket.destroy();
    }
  });

  server.on("connect", (req, socket: Duplex) => {
    socket.on("error", () => socket.destroy());
    endWithError(
      socket,
      new RelayError("NOT_FOUND", `No route for CONNECT ${req.url ?? ""}: this relay is not a proxy`),
      { now: deps.now() },
    );
  });

  // RFC 9110 §10.1.1: a server that does not meet an expectation other than 100-continue MAY answer 417; it may
  // also ignore it. The relay ignores it, so the request is served as if the header were absent.
  server.on("checkExpectation", deps.app);
}
