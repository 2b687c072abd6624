import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import { lazyRequire } from "../lazyRequire";
import type { Logger } from "../logger";
import type { RateLimitResult, RateLimitStore } from "./types";

const loadRedis = lazyRequire<{ Redis: typeof Redis }>("ioredis");

export interface RedisRateLimitStore extends RateLimitStore {
  hit(bucket: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult>;
  /** Closes the connection; later hits answer from the fallback. */
  close(): Promise<void>;
  /** True once connected to Redis, false if it does not answer within about a second. */
  ready(): Promise<boolean>;
}

export interface RedisRateLimitStoreOptions {
  url: string;
  logger: Logger;
  /** Answers while Redis cannot: an in-memory store, so limits become per relay rather than disappearing. */
  fallback: RateLimitStore;
  /** The longest a request waits for Redis before the fallback answers. */
  commandTimeoutMs?: number;
  keyPrefix?: string;
}

/**
 * Keys outlive their window by this much, so a relay whose clock runs a little behind still finds the
 * window's counter instead of starting a fresh one.
 */
export const WINDOW_EXPIRY_MARGIN_MS = 1_000;

const DEFAULT_COMMAND_TIMEOUT_MS = 100;
const DEFAULT_KEY_PREFIX = "tab-relay:rl:";
const READY_WAIT_MS = 1_000;
const WARN_INTERVAL_MS = 10_000;
/** A command that has not answered for this long means a dead connection, which TCP may take hours to notice. */
const STALL_RECONNECT_MS = 2_000;

// INCR and PEXPIRE in one script, so a counter never exists without its expiry, even if the relay dies between them.
const HIT_SCRIPT = `local count = redis.call("INCR", KEYS[1])
if count == 1 then redis.call("PEXPIRE", KEYS[1], ARGV[1]) end
return count`;
const HIT_SCRIPT_SHA = createHash("sha1").update(HIT_SCRIPT).digest("hex");

/** Ends a connection: QUIT when it is up, so pending replies arrive first, else dropped at once. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === "ready") {
    try {
      await client.quit();
      return;
    } catch {
      // Falls through to dropping the connection.
    }
  }
  client.disconnect();
}

/**
 * A connection for counters that are worth nothing late (rate limits, socket places): commands fail at once while it
 * is down, and it reconnects in the background. The socket places (live/socketSlots.ts) use it too.
 */
export function connectRedis(url: string): Redis {
  return new (loadRedis().Redis)(url, {
    // Commands fail at once while disconnected rather than waiting in a queue that grows with the outage.
    enableOfflineQueue: false,
    // Commands in flight when the connection drops are rejected, not replayed: a late hit is worth nothing.
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: READY_WAIT_MS,
    keepAlive: 10_000,
    retryStrategy: (attempt) => Math.min(100 * 2 ** (attempt - 1), 5_000),
  });
}

class RedisTimeoutError extends Error {
  constructor(ms: number) {
    super(`Redis did not answer within ${ms} ms`);
    this.name = "RedisTimeoutError";
  }
}

/**
 * Fixed-window counters shared by every relay on one Redis, with the same windows as the memory store
 * (aligned to multiples of `windowMs` since the epoch). When Redis is down, slow or failing, each hit is
 * answered by `fallback` instead: limits then hold per relay, a request never waits longer than
 * `commandTimeoutMs`, and nothing throws.
 */
export function createRedisRateLimitStore(options: RedisRateLimitStoreOptions): RedisRateLimitStore {
  const { logger, fallback } = options;
  const commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
  const keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  const client = connectRedis(options.url);
  let lastConnectionError: unknown;
  // ioredis writes unhandled "error" events to the console; the hits that fall back report them instead.
  client.on("error", (error: unknown) => {
    lastConnectionError = error;
  });
  client.on("ready", () => {
    lastConnectionError = undefined;
  });

  let closed = false;
  let failing = false;
  let warnedAt = 0;
  let fallbackHits = 0;
  let overdue = 0;
  let overdueSince = 0;

  const unavailable = (bucket: string, limit: number, windowMs: number, now: number, error: unknown) => {
    fallbackHits++;
    if (!failing || now - warnedAt >= WARN_INTERVAL_MS || now < warnedAt) {
      logger.warn("Redis rate limit store unavailable; rate limits hold per relay until it answers", {
        error,
        fallbackHits,
      });
      warnedAt = now;
    }
    failing = true;
    return fallback.hit(bucket, limit, windowMs, now);
  };

  const count = async (key: string, ttlMs: number): Promise<unknown> => {
    try {
      return await client.evalsha(HIT_SCRIPT_SHA, 1, key, ttlMs);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return await client.eval(HIT_SCRIPT, 1, key, ttlMs);
    }
  };

  const withTimeout = (pending: Promise<unknown>, now: number): Promise<unknown> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        // The command stays in ioredis's queue; while it is outstanding the next hits skip Redis.
        if (overdue++ === 0) overdueSince = now;
        pending.then(settleOverdue, settleOverdue);
        reject(new RedisTimeoutError(commandTimeoutMs));
      }, commandTimeoutMs);
    });
    return Promise.race([pending, timeout]).finally(() => clearTimeout(timer));
  };
  const settleOverdue = () => {
    overdue--;
  };

  return {
    async hit(bucket, limit, windowMs, now) {
      if (closed) return fallback.hit(bucket, limit, windowMs, now);
      if (client.status !== "ready") {
        return unavailable(
          bucket,
          limit,
          windowMs,
          now,
          lastConnectionError ?? new Error(`Redis connection is ${client.status}`),
        );
      }
      if (overdue > 0) {
        if (now - overdueSince >= STALL_RECONNECT_MS) {
          overdueSince = now;
          // Rejects the stuck commands and reconnects through the retry strategy.
          client.disconnect(true);
        }
        return unavailable(bucket, limit, windowMs, now, new RedisTimeoutError(commandTimeoutMs));
      }
      const windowIndex = Math.floor(now / windowMs);
      const resetAt = (windowIndex + 1) * windowMs;
      const key = `${keyPrefix}${bucket}:${windowIndex}`;
      let reply: unknown;
      try {
        reply = await withTimeout(count(key, resetAt - now + WINDOW_EXPIRY_MARGIN_MS), now);
        if (typeof reply !== "number") throw new Error(`unexpected reply from the rate limit script: ${String(reply)}`);
      } catch (error) {
        return unavailable(bucket, limit, windowMs, now, error);
      }
      if (failing) {
        failing = false;
        logger.info("Redis rate limit store answers again; rate limits are shared across relays", { fallbackHits });
        fallbackHits = 0;
      }
      return { allowed: reply <= limit, limit, remaining: Math.max(0, limit - reply), resetAt };
    },

    async close() {
      if (closed) return;
      closed = true;
      await closeRedis(client);
    },

    ready() {
      if (closed || client.status === "end") return Promise.resolve(false);
      if (client.status === "ready") return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const done = (connected: boolean) => {
          clearTimeout(timer);
          client.off("ready", onReady);
          client.off("end", onEnd);
          resolve(connected);
        };
        const onReady = () => done(true);
        const onEnd = () => done(false);
        const timer = setTimeout(() => done(false), READY_WAIT_MS);
        client.once("ready", onReady);
        client.once("end", onEnd);
      });
    },
  };
}
