/**
 * The baseline the relay is measured against: the least a Node HTTP server can do between a client and
 * the upstream. It pipes each request to the target over keep-alive connections and pipes the answer
 * back, with no parsing, authentication or re-encoding.
 * With `express` as second argument the same handler runs as the only middleware of an express 5 app (the relay's
 * framework for the rest of its API), so what express itself costs per request is measured in the same run.
 * Usage: node --import tsx test/bench/passthroughProxy.ts http://127.0.0.1:PORT [express]
 * Prints one JSON line `{"url": "http://127.0.0.1:PORT"}` on stdout once it listens; stops on SIGTERM or when stdin closes.
 */
import {
  Agent,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
  createServer,
  request,
} from "node:http";
import type { AddressInfo } from "node:net";

const target = new URL(process.argv[2] ?? "http://127.0.0.1:1");
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
// Hop-by-hop headers describe one connection, not the message; Node sets its own on each side.
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "proxy-connection",
  "upgrade",
  "te",
  "trailer",
]);

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name)) out[name] = value;
  return out;
}

function passThrough(req: IncomingMessage, res: ServerResponse): void {
  const upstream = request(
    {
      agent,
      hostname: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: { ...endToEnd(req.headers), host: target.host },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
      answer.pipe(res);
    },
  );
  upstream.on("error", () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  res.on("close", () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

async function handler(): Promise<(req: IncomingMessage, res: ServerResponse) => void> {
  if (process.argv[3] !== "express") return passThrough;
  const { default: express } = await import("express");
  const app = express();
  app.disable("x-powered-by");
  app.use((req, res) => passThrough(req, res));
  return app;
}

const server = createServer(await handler());
server.keepAliveTimeout = 30_000;

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
});

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
// The benchmark holds our stdin open; when it closes, the benchmark is gone and so should we be.
process.stdin.once("close", stop);
process.stdin.resume();
