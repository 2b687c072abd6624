import { once } from "node:events";
import { type IncomingHttpHeaders, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  /** The raw body, exactly as sent (what the signature covers). */
  body: string;
  /** performance.now() when the body had fully arrived. */
  at: number;
  path: string;
}

/** How the receiver answers one delivery; it may also leave the response hanging to simulate a slow agent. */
export type Answer = (delivery: ReceivedDelivery, res: ServerResponse, index: number) => void;

export const answerWith =
  (status: number, headers: Record<string, string> = {}, body = ""): Answer =>
  (_delivery, res) => {
    res.writeHead(status, headers).end(body);
  };

export interface WebhookReceiver {
  url: string;
  deliveries: ReceivedDelivery[];
  /** Replaces the answer for later deliveries (default 204). */
  answer(fn: Answer): void;
  /** Resolves once `count` deliveries have arrived, or rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 that records every webhook delivery it receives. */
export async function startWebhookReceiver(answer: Answer = answerWith(204)): Promise<WebhookReceiver> {
  const deliveries: ReceivedDelivery[] = [];
  const waiters: (() => void)[] = [];
  let current = answer;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const delivery = {
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: performance.now(),
        path: req.url ?? "/",
      };
      deliveries.push(delivery);
      current(delivery, res, deliveries.length - 1);
      for (const wake of waiters.splice(0)) wake();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhook`,
    deliveries,
    answer(fn) {
      current = fn;
    },
    async waitFor(count, timeoutMs = 5000) {
      const deadline = performance.now() + timeoutMs;
      while (deliveries.length < count) {
        const left = deadline - performance.now();
        if (left <= 0) throw new Error(`expected ${count} deliveries within ${timeoutMs} ms, got ${deliveries.length}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return deliveries.slice(0, count);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
