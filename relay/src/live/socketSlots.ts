import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "../logger";
import { closeRedis, connectRedis } from "../rateLimit/redisStore";

/** A place under a socket cap, held while the socket is open. Releasing it twice is harmless. */
export interface SocketSlot {
  release(): void;
}

/**
 * The places under the socket caps: an API key's live connections, an agent's Socket Mode connections. A relay alone
 * counts its own sockets; relays sharing Redis count everyone's there, so a cap holds however a load balancer spreads
 * the connections.
 */
export interface SocketSlots {
  /** One of the `cap` places of `subject`, or undefined when all are taken. */
  take(subject: string, cap: number): Promise<SocketSlot | undefined>;
  /** Gives back every place this relay holds (at shutdown). */
  close(): Promise<void>;
}

/** The places of one relay, in memory. */
export function createMemorySocketSlots(): SocketSlots {
  const taken = new Map<string, number>();
  return {
    async take(subject, cap) {
      const count = taken.get(subject) ?? 0;
      if (count >= cap) return undefined;
      taken.set(subject, count + 1);
      let held = true;
      return {
        release() {
          if (!held) return;
          held = false;
          const left = (taken.get(subject) ?? 1) - 1;
          if (left <= 0) taken.delete(subject);
          else taken.set(subject, left);
        },
      };
    },
    async close() {
      taken.clear();
    },
  };
}

/** How long a place lasts in Redis unless its relay renews it: a relay that dies holds its places no longer than this. */
export const SLOT_TTL_MS = 60_000;
const DEFAULT_COMMAND_TIMEOUT_MS = 200;
const DEFAULT_KEY_PREFIX = "tab-relay:sockets:";

/**
 * One sorted set per subject, a member per open socket scored by when its place lapses, on Redis's own clock (so
 * relays whose clocks differ agree). Lapsed members are dropped before counting, all in one script: two relays
 * taking the last place at once cannot both get it.
 */
const TAKE_SCRIPT = `local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
if redis.call("ZCARD", KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call("ZADD", KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return 1`;
/** Pushes the lapse of this relay's places forward; a place that lapsed meanwhile (Redis was out of reach) counts again. */
const RENEW_SCRIPT = `local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, #KEYS do
  redis.call("ZADD", KEYS[i], now + tonumber(ARGV[1]), ARGV[i + 1])
  redis.call("PEXPIRE", KEYS[i], ARGV[1])
end
return #KEYS`;
const sha = (script: string) => createHash("sha1").update(script).digest("hex");

export interface RedisSocketSlotsOptions {
  url: string;
  logger: Logger;
  /** This relay, so its members are its own. */
  relayId: string;
  /** Counts while Redis does not answer: the caps then hold per relay, as without Redis. */
  fallback: SocketSlots;
  ttlMs?: number;
  commandTimeoutMs?: number;
  keyPrefix?: string;
}

/**
 * Places counted in Redis across relays. Each relay renews its own places every third of their lifetime and gives
 * them back as its sockets close; a relay that dies without giving them back loses them when they lapse. When Redis
 * does not answer in time, a place is taken from `fallback` instead, so a socket is never refused for want of Redis.
 */
export function createRedisSocketSlots(options: RedisSocketSlotsOptions): SocketSlots {
  const { logger, fallback } = options;
  const ttlMs = options.ttlMs ?? SLOT_TTL_MS;
  const commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
  const keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  const client: Redis = connectRedis(options.url);
  // Reported by the takes that fall back, not by ioredis on the console.
  client.on("error", () => undefined);
  /** This relay's places in Redis: member → key. */
  const held = new Map<string, string>();
  let next = 0;
  let closed = false;

  const run = async (script: string, keys: string[], args: (string | number)[]): Promise<unknown> => {
    try {
      return await client.evalsha(sha(script), keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return await client.eval(script, keys.length, ...keys, ...args);
    }
  };
  const withTimeout = <T>(pending: Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Redis did not answer within ${commandTimeoutMs} ms`)),
        commandTimeoutMs,
      );
    });
    // The command may still answer after the timeout: its place is then in Redis without a socket, and lapses.
    pending.catch(() => undefined);
    return Promise.race([pending, late]).finally(() => clearTimeout(timer));
  };

  const renewal = setInterval(() => {
    if (held.size === 0 || client.status !== "ready") return;
    const members = [...held.keys()];
    run(
      RENEW_SCRIPT,
      members.map((member) => held.get(member) as string),
      [ttlMs, ...members],
    ).catch((error: unknown) => logger.warn("could not renew socket places in Redis", { error }));
  }, ttlMs / 3);
  renewal.unref();

  const forget = (member: string) => {
    const key = held.get(member);
    if (key === undefined) return;
    held.delete(member);
    if (client.status !== "ready") return;
    // Not given back now, it lapses within the lifetime of a place.
    client.zrem(key, member).catch((error: unknown) => logger.warn("could not give back a socket place", { error }));
  };

  return {
    async take(subject, cap) {
      // Before the connection is up (the first moments after start) or while it is down, this relay counts alone.
      if (closed || client.status !== "ready") return fallback.take(subject, cap);
      const key = `${keyPrefix}${subject}`;
      const member = `${options.relayId}:${next++}`;
      let reply: unknown;
      try {
        reply = await withTimeout(run(TAKE_SCRIPT, [key], [cap, ttlMs, member]));
      } catch (error) {
        logger.warn("Redis did not count a socket; socket caps hold per relay until it does", { error });
        return fallback.take(subject, cap);
      }
      if (reply !== 1) return undefined;
      held.set(member, key);
      return { release: () => forget(member) };
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(renewal);
      for (const member of [...held.keys()]) forget(member);
      await closeRedis(client);
    },
  };
}
