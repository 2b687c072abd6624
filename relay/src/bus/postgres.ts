import pg from "pg";
import type { Logger } from "../logger";
import type { Bus, BusMessage } from "./types";

const CHANNEL = "tab_relay";

/**
 * A bus over PostgreSQL's LISTEN/NOTIFY: one listening connection per relay, notifications sent through a small
 * pool. Messages carry ids only (NOTIFY payloads are limited to 8,000 bytes), so a receiver reads what it needs.
 * The sender hears its own notifications too, so every relay, itself included, reacts in one place.
 */
export async function createPostgresBus(url: string, logger: Logger): Promise<Bus> {
  const handlers: ((message: BusMessage) => void)[] = [];
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  let listener: pg.Client | undefined;
  let closed = false;

  const deliver = (payload: string | undefined) => {
    if (payload === undefined) return;
    let message: BusMessage;
    try {
      message = JSON.parse(payload) as BusMessage;
    } catch {
      return;
    }
    for (const handler of handlers) handler(message);
  };

  async function listen(): Promise<void> {
    const client = new pg.Client({ connectionString: url });
    client.on("notification", (notification) => deliver(notification.payload));
    client.on("error", (error) => {
      logger.warn("bus connection lost; reconnecting", { error });
      client.end().catch(() => undefined);
      if (!closed) setTimeout(() => void listen().catch(() => undefined), 1000).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    listener = client;
    // Anything published while the connection was down is lost, so wake every worker to look at the outbox.
    deliver(JSON.stringify({ topic: "events" }));
  }

  await listen();
  pool.on("error", (error) => logger.warn("bus pool error", { error }));

  return {
    publish(message) {
      pool.query("SELECT pg_notify($1, $2)", [CHANNEL, JSON.stringify(message)]).catch((error: unknown) => {
        logger.warn("bus publish failed", { topic: message.topic, error });
      });
    },
    subscribe(handler) {
      handlers.push(handler);
    },
    async close() {
      closed = true;
      handlers.length = 0;
      await listener?.end().catch(() => undefined);
      await pool.end();
    },
  };
}
