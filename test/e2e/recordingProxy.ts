// A pass-through HTTP proxy in front of the relay that keeps every exchange, so an end-to-end test can see exactly
// what the extension sent and what came back (including that a request for a given text has finished), without
// the extension or the relay knowing about it.
import { request as httpRequest, createServer, type ClientRequest, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { StringDecoder } from "node:string_decoder";

export interface RecordedExchange {
  readonly method: string;
  readonly path: string;
  requestBody: string;
  status: number | undefined;
  responseBody: string;
  /** The response reached its end (a client that hung up first leaves it false, with `aborted` set). */
  finished: boolean;
  aborted: boolean;
}

export interface RecordingProxy {
  /** Point the client here instead of at the target. */
  readonly url: string;
  /** Every exchange so far, oldest first; entries fill in as their responses stream. */
  readonly exchanges: readonly RecordedExchange[];
  close(): Promise<void>;
}

// Hop-by-hop headers belong to each connection, not to the message (RFC 9110 §7.6.1).
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
]);

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase())));
}

/** Listens on a free port of 127.0.0.1 and forwards every request to `target` (an http:// origin), streaming. */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const origin = new URL(target);
  const exchanges: RecordedExchange[] = [];
  const server = createServer((req, res) => {
    // Kept from the moment the request arrives, so that a request the client gives up on early is still counted.
    const exchange: RecordedExchange = {
      method: req.method ?? "GET",
      path: req.url ?? "/",
      requestBody: "",
      status: undefined,
      responseBody: "",
      finished: false,
      aborted: false,
    };
    exchanges.push(exchange);
    let upstream: ClientRequest | undefined;
    // The extension aborts a request when typing goes on; the relay must see that too.
    res.on("close", () => {
      if (exchange.finished) return;
      exchange.aborted = true;
      upstream?.destroy();
    });
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (exchange.aborted) return;
      const body = Buffer.concat(chunks);
      exchange.requestBody = body.toString("utf8");
      upstream = httpRequest(
        {
          host: origin.hostname,
          port: origin.port,
          method: exchange.method,
          path: exchange.path,
          headers: { ...endToEnd(req.headers), host: origin.host },
        },
        (answer) => {
          // A character split across two chunks must not turn into two replacement characters.
          const decoder = new StringDecoder("utf8");
          exchange.status = answer.statusCode;
          res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
          answer.on("data", (chunk: Buffer) => {
            exchange.responseBody += decoder.write(chunk);
            res.write(chunk);
          });
          answer.on("end", () => {
            exchange.responseBody += decoder.end();
            exchange.finished = true;
            res.end();
          });
        },
      );
      upstream.on("error", (error) => {
        exchange.aborted = true;
        if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
        res.end(`recording proxy: ${error.message}`);
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
