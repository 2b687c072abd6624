import type pg from "pg";
import { lazyRequire } from "../lazyRequire";
import type { Logger } from "../logger";
import type { Bus, BusMessage } from "./types";

const loadPg = lazyRequire<typeof pg>("pg");
const CHANNEL = "tab_relay";
/** The listening connection is retried after this, doubling up to RECONNECT_MAX_MS while the server stays away. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5_000;
/** A new connection that neither opens nor fails within this is given up and tried again. */
const CONNECT_TIMEOUT_MS = 5_000;

export interface PostgresBusOptions {
  /** The first and the longest wait between attempts to listen again. */
  reconnectMs?: { first: number; max: number };
}

/**
 * A bus over PostgreSQL's LISTEN/NOTIFY: one listening connection per relay, notifications sent through a small
 * pool. Messages carry ids only (NOTIFY payloads are limited to 8,000 bytes), so a receiver reads what it needs.
 * The sender hears its own notifications too, so every relay, itself included, reacts in one place.
 *
 * A lost listening connection (a restart, a network cut) is retried with backoff for as long as it takes. What was
 * sent meanwhile is gone (NOTIFY does not queue for absent listeners), so once listening again the relay wakes its
 * delivery worker to read the outbox, where every event waits; and a message this relay publishes while it cannot
 * hear itself is handed to its own handlers directly.
 */
export async function createPostgresBus(url: string, logger: Logger, options: PostgresBusOptions = {}): Promise<Bus> {
  const { first, max } = options.reconnectMs ?? { first: RECONNECT_FIRST_MS, max: RECONNECT_MAX_MS };
  const handlers: ((message: BusMessage) => void)[] = [];
  const pool = new (loadPg().Pool)({ connectionString: url, max: 2, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  pool.on("error", (error) => logger.warn("bus pool error", { error }));
  // pg-pool listens for errors only on idle connections (see store/postgres.ts); one that breaks while lent must not end the process.
  pool.on("connect", (client) => client.on("error", () => undefined));
  /** The connection that is listening now; undefined while there is none. */
  let listener: pg.Client | undefined;
  let connecting = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let delayMs = first;
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
    const client = new (loadPg().Client)({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    client.on("notification", (notification) => deliver(notification.payload));
    client.on("error", (error) => {
      // pg may report one loss twice (the server's 57P01, then the socket's end), and a connection still being set
      // up fails through listen() instead: only the loss of the listening connection starts a reconnection.
      if (listener !== client) return;
      listener = undefined;
      client.end().catch(() => undefined);
      if (closed) return;
      logger.warn("bus connection lost; reconnecting", { error });
      reconnectLater();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      client.end().catch(() => undefined);
      throw error;
    }
    if (closed) {
      await client.end().catch(() => undefined);
      return;
    }
    listener = client;
    delayMs = first;
    // Anything published while the connection was down is lost, so wake every worker to look at the outbox.
    deliver(JSON.stringify({ topic: "events" }));
  }

  function reconnectLater(): void {
    if (closed || connecting || retryTimer !== undefined) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connecting = true;
      listen().then(
        () => {
          connecting = false;
          if (!closed) logger.info("bus listening again");
        },
        (error: unknown) => {
          connecting = false;
          logger.warn("bus could not listen yet; retrying", { error, retry_in_ms: delayMs });
          reconnectLater();
        },
      );
    }, delayMs);
    retryTimer.unref();
    delayMs = Math.min(delayMs * 2, max);
  }

  await listen();

  return {
    publish(message) {
      const payload = JSON.stringify(message);
      // Not listening, this relay would not hear its own notification, so it reacts at once instead. Should the
      // connection come back before the notification is sent, it reacts twice, which is harmless: a second wake of
      // the worker, a message the console already shows (it keeps one per id).
      const heardHere = listener === undefined;
      if (heardHere) deliver(payload);
      pool.query("SELECT pg_notify($1, $2)", [CHANNEL, payload]).catch((error: unknown) => {
        logger.warn("bus publish failed", { topic: message.topic, error });
        if (!heardHere) deliver(payload);
      });
    },
    subscribe(handler) {
      handlers.push(handler);
    },
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      handlers.length = 0;
      await listener?.end().catch(() => undefined);
      listener = undefined;
      await pool.end();
    },
  };
}
