import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import pg from "pg";

/**
 * The local PostgreSQL and Redis that scale-out tests and benchmarks run relays on: reachability checks that say
 * what is missing, and throwaway databases.
 */

export const POSTGRES_HOST = "127.0.0.1:5432";
export const ADMIN_URL = `postgres://postgres@${POSTGRES_HOST}/postgres`;
export const REDIS_HOST = "127.0.0.1";
export const REDIS_PORT = 6379;
export const REDIS_URL = `redis://${REDIS_HOST}:${REDIS_PORT}`;

export async function withAdmin<T>(fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3_000 });
  try {
    await admin.connect();
    return await fn(admin);
  } finally {
    await admin.end().catch(() => undefined);
  }
}

export async function postgresProblem(): Promise<string | undefined> {
  try {
    await withAdmin((admin) => admin.query("select 1"));
    return undefined;
  } catch (error) {
    return `PostgreSQL not reachable at ${POSTGRES_HOST} (${error instanceof Error ? error.message : String(error)})`;
  }
}

/** A PING over a plain socket, so the check needs no Redis client. */
export function redisProblem(): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect(REDIS_PORT, REDIS_HOST);
    const done = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(
      () => done(`Redis not reachable at ${REDIS_HOST}:${REDIS_PORT} (no answer within 1 s)`),
      1_000,
    );
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) =>
      done(
        String(data).startsWith("+PONG")
          ? undefined
          : `Redis at ${REDIS_HOST}:${REDIS_PORT} answered ${JSON.stringify(String(data))}`,
      ),
    );
    socket.once("error", (error) => done(`Redis not reachable at ${REDIS_HOST}:${REDIS_PORT} (${error.message})`));
  });
}

/** Why relays cannot run on PostgreSQL and Redis here, or undefined when both answer. */
export async function servicesProblem(): Promise<string | undefined> {
  return (await postgresProblem()) ?? (await redisProblem());
}

export interface ScratchDatabase {
  name: string;
  url: string;
}

/** A new, empty database named `<prefix>_<random>`. */
export async function createDatabase(prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  await withAdmin((admin) => admin.query(`create database ${name}`));
  return { name, url: `postgres://postgres@${POSTGRES_HOST}/${name}` };
}

/** Drops the databases, disconnecting whatever is still connected to them. */
export async function dropDatabases(names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  await withAdmin(async (admin) => {
    for (const name of names) await admin.query(`drop database if exists ${name} with (force)`);
  });
}
