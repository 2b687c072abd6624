import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { RelayError, type MessageCreatedEvent } from "@tab-relay/shared";
import { Redis } from "ioredis";
import pg from "pg";
import { createPostgresBus } from "../../relay/src/bus/postgres";
import type { BusMessage } from "../../relay/src/bus/types";
import type { LogFields, Logger } from "../../relay/src/logger";
import { openStore } from "../../relay/src/main";
import { initWorkspace } from "../../relay/src/workspace/init";
import { openPostgresStore } from "../../relay/src/store/postgres";
import { completionBody } from "../support/relayHarness";
import { type RelayProcess, spawnRelay, until } from "../support/relayProcess";
import {
  type ThrowawayPostgres,
  startThrowawayPostgres,
  startThrowawayRedis,
  throwawayPostgresProblem,
  throwawayRedisProblem,
} from "../support/throwawayServices";
import { startUpstreamStandIn, type StandInBehaviour } from "../support/upstreamStandIn";
import { startWebhookReceiver } from "../support/webhookReceiver";

/**
 * Faults under load. The relay runs as its own process (the CLI, from the TypeScript sources) while what it
 * depends on fails: its PostgreSQL is restarted, its Redis stopped and started, its model hangs or drops mid-stream.
 * The PostgreSQL cluster and the Redis server are this file's own, started in a temporary folder on free ports, so
 * they can be stopped without disturbing the shared ones other test files use at the same time. Each scenario
 * drives steady traffic, breaks something, and checks what callers and agents saw; its figures are printed as a
 * diagnostic line.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(ROOT, "relay/src/cli.ts");
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));
/** The limits are lifted far above the load, so a 429 never hides what the scenario is about. */
const READS_PER_MINUTE = 100_000;
const LIFTED_LIMITS = `reads=${READS_PER_MINUTE},writes=100000`;
/** No single request may take longer than this, outage or not: a request left hanging is a failure too. */
const REQUEST_TIMEOUT_MS = 10_000;
/** How long a restarted PostgreSQL stays down: longer than the bus's old single reconnection attempt (1 s). */
const POSTGRES_DOWN_MS = 2_000;
const REDIS_DOWN_MS = 1_500;
/** After the service is back, the relay must serve again within this, by itself. */
const RECOVERY_MS = 10_000;
/**
 * The model's silence the relay waits out (before the headers, and between chunks). Long enough that a busy machine
 * never mistakes a slow answer for a hung one, short enough that many hung requests take seconds.
 */
const UPSTREAM_TIMEOUT_MS = 1_000;

type Service = "postgres" | "redis";
const problems: Record<Service, string | undefined> = {
  postgres: throwawayPostgresProblem(),
  redis: throwawayRedisProblem(),
};
for (const [service, problem] of Object.entries(problems)) {
  if (problem !== undefined)
    console.error(
      `\n*** SKIPPED: ${problem}: the fault tests that restart ${service === "postgres" ? "PostgreSQL" : "Redis"} did not run ***\n`,
    );
}

/** A test that skips, saying why, when a server it stops and starts cannot be run here. */
function faultTest(name: string, needs: readonly Service[], fn: (t: TestContext) => Promise<void>): void {
  test(name, async (t) => {
    const missing = needs.map((service) => problems[service]).filter((problem) => problem !== undefined);
    if (missing.length > 0) return t.skip(`SKIPPED: ${missing.join("; ")}`);
    await fn(t);
  });
}

const children = new Set<ChildProcess>();
/** Loads still running when a test fails are stopped with it, so a failure never leaves requests looping. */
const loads = new Set<{ stop(): Promise<void> }>();
const cleanups: (() => Promise<unknown> | void)[] = [];

after(async () => {
  await Promise.all([...loads].map((running) => running.stop()));
  for (const child of children) child.kill("SIGKILL");
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** What `tab-relay init` does, in this process (one process start less per scenario): the owner's key. */
async function init(location: { databaseUrl: string } | { dataDir: string }): Promise<string> {
  const store = await openStore(
    "dataDir" in location
      ? { dataDir: location.dataDir, databaseUrl: undefined }
      : { dataDir: "", databaseUrl: location.databaseUrl },
  );
  try {
    return (await initWorkspace(store, { now: () => Date.now() }, { slug: "acme", ownerName: "Olive" })).apiKey;
  } finally {
    await store.close();
  }
}

function serve(name: string, args: readonly string[], env: Record<string, string> = {}): Promise<RelayProcess> {
  return spawnRelay({
    name,
    args: ["--import", "tsx", CLI, "serve", ...args, "--port", "0", "--host", "127.0.0.1"],
    cwd: ROOT,
    env: { ...baseEnv, TAB_RELAY_LOG_LEVEL: "warn", TAB_RELAY_RATE_LIMITS: LIFTED_LIMITS, ...env },
    tracked: children,
    // From the sources through tsx, several at once on a busy machine: seconds each, and never a minute.
    startTimeoutMs: 60_000,
    outputChars: 32_000,
  });
}

async function call<T>(relay: RelayProcess, key: string, path: string, method = "GET", json?: unknown): Promise<T> {
  const response = await fetch(`${relay.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { "content-type": "application/json" }) },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { data: T }).data;
}

/** A new, empty database on the throwaway cluster; its URL. */
async function createDatabase(postgres: ThrowawayPostgres, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  return postgres.url.replace(/\/postgres$/, `/${name}`);
}

/** What one request got back. */
interface Outcome {
  /** performance.now() when the answer (or the failure) came. */
  at: number;
  /** The HTTP status, or what went wrong without one. */
  status: number | "timeout" | "network";
  code?: string;
  retryAfter: string | null;
  headers?: Headers;
  body?: unknown;
  detail?: string;
}

async function attempt(url: string, init: RequestInit = {}): Promise<Outcome> {
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const code = (body as { error?: { code?: string } } | undefined)?.error?.code;
    return {
      at: performance.now(),
      status: response.status,
      retryAfter: response.headers.get("retry-after"),
      headers: response.headers,
      body,
      ...(code === undefined ? {} : { code }),
      ...(response.status >= 500 && response.status !== 503 ? { detail: text.slice(0, 300) } : {}),
    };
  } catch (error) {
    const timeout = error instanceof Error && error.name === "TimeoutError";
    return { at: performance.now(), status: timeout ? "timeout" : "network", retryAfter: null, detail: String(error) };
  }
}

/** Runs `step` over and over in `workers` loops, pausing `pauseMs` after each, until `stop()`; every outcome is kept. */
function load(workers: number, step: (n: number) => Promise<Outcome>, pauseMs: number) {
  const outcomes: Outcome[] = [];
  let running = true;
  let n = 0;
  const loops = Array.from({ length: workers }, async () => {
    while (running) {
      outcomes.push(await step(n++));
      await sleep(pauseMs);
    }
  });
  const handle = {
    outcomes,
    async stop() {
      running = false;
      loads.delete(handle);
      await Promise.all(loops);
    },
  };
  loads.add(handle);
  return handle;
}

const count = <T>(items: readonly T[], match: (item: T) => boolean) => items.filter(match).length;
const ms = (value: number) => `${Math.round(value)} ms`;
/** What a WebSocket handshake with an agent token is answered when it is refused (it must not be accepted here). */
function upgradeAnswer(
  url: string,
  token: string,
): Promise<{ status: number | undefined; retryAfter: string | undefined; code: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
        authorization: `Bearer ${token}`,
      },
      timeout: REQUEST_TIMEOUT_MS,
    });
    req.on("upgrade", (_res, socket) => {
      socket.destroy();
      reject(new Error("the handshake was accepted while the database was down"));
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        const code = (() => {
          try {
            return (JSON.parse(text) as { error?: { code?: string } }).error?.code;
          } catch {
            return undefined;
          }
        })();
        const retryAfter = res.headers["retry-after"];
        resolve({ status: res.statusCode, retryAfter: typeof retryAfter === "string" ? retryAfter : undefined, code });
      });
    });
    req.on("timeout", () => req.destroy(new Error("no answer to the handshake")));
    req.on("error", reject);
    req.end();
  });
}

const isServerError = (o: Outcome) => typeof o.status === "number" && o.status >= 500 && o.status !== 503;

function captureLogger(): Logger & { lines: { level: string; msg: string; fields: LogFields | undefined }[] } {
  const lines: { level: string; msg: string; fields: LogFields | undefined }[] = [];
  const at = (level: string) => (msg: string, fields?: LogFields) => void lines.push({ level, msg, fields });
  return { lines, enabled: () => true, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

// The model scenario needs neither server, so it runs beside the others, which take turns on one PostgreSQL.
describe("faults under load", { concurrency: true }, () => {
  describe("PostgreSQL and Redis stopped and started", { concurrency: 1 }, () => {
    let postgres: ThrowawayPostgres;

    before(async () => {
      if (problems.postgres !== undefined) return;
      postgres = await startThrowawayPostgres();
      cleanups.push(() => postgres.destroy());
    });

    faultTest(
      "a connection terminated while a transaction holds it between queries fails that transaction with 503, and the process lives on",
      ["postgres"],
      async () => {
        const url = await createDatabase(postgres, "terminated");
        const store = await openPostgresStore(url, { poolSize: 2 });
        cleanups.push(() => store.close());
        const failure = await store
          .transaction(async (tx) => {
            await tx.workspaces.count();
            // As a restart or an administrator does: the server ends every session of the database.
            const admin = new pg.Client({ connectionString: postgres.url });
            await admin.connect();
            await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = 'terminated'");
            await admin.end();
            // The server's 57P01 reaches the connection while the transaction holds it and no query runs on it.
            await sleep(300);
            return tx.workspaces.count();
          })
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        assert.ok(failure instanceof RelayError, `a RelayError, not ${String(failure)}`);
        assert.equal(failure.code, "SERVICE_UNAVAILABLE");
        assert.equal(failure.status, 503);
        assert.equal(failure.headers["Retry-After"], "2");
        assert.equal(await store.workspaces.count(), 0, "the next query gets a fresh connection");
        // A query the database refuses is not an outage: it stays the database's own error (a 500 if it reaches a caller).
        const at = new Date().toISOString();
        await store.workspaces.create({ id: "ws_1", slug: "one", name: "One", createdAt: at });
        const duplicate = await store.workspaces.create({ id: "ws_1", slug: "two", name: "Two", createdAt: at }).then(
          () => undefined,
          (error: unknown) => error,
        );
        assert.ok(
          duplicate instanceof Error && !(duplicate instanceof RelayError),
          `a duplicate key stays pg's error: ${String(duplicate)}`,
        );
        assert.equal((duplicate as { code?: string }).code, "23505");
      },
    );

    faultTest(
      "the bus listens again after PostgreSQL was down for seconds, wakes the delivery worker, and never hears a message twice",
      ["postgres"],
      async (t) => {
        const url = await createDatabase(postgres, "bus");
        const logger = captureLogger();
        const bus = await createPostgresBus(url, logger);
        cleanups.push(() => bus.close());
        const heard: BusMessage[] = [];
        bus.subscribe((message) => heard.push(message));
        const message = (id: string): BusMessage => ({
          topic: "message",
          workspaceId: "ws",
          conversationId: "c",
          messageId: id,
        });
        const heardOf = (id: string) => count(heard, (m) => m.topic === "message" && m.messageId === id);

        bus.publish(message("before"));
        await until("the bus to carry a message", 5_000, () => (heardOf("before") === 1 ? true : undefined));

        await postgres.stop("fast");
        await sleep(100);
        // While it cannot listen, the relay still hears what it says itself (its own consoles, its own worker).
        bus.publish(message("during"));
        await sleep(POSTGRES_DOWN_MS);
        const wakesBefore = count(heard, (m) => m.topic === "events");
        await postgres.start();
        const back = performance.now();
        await until("the bus to listen again and wake the worker", RECOVERY_MS, () =>
          count(heard, (m) => m.topic === "events") > wakesBefore ? true : undefined,
        );
        const relistened = performance.now() - back;

        bus.publish(message("after"));
        await until("a message sent after the restart", 5_000, () => (heardOf("after") > 0 ? true : undefined));
        await sleep(300);
        assert.equal(heardOf("during"), 1, "the message published during the outage reached this relay's handlers");
        assert.equal(heardOf("after"), 1, "one listening connection: the message is heard once");
        assert.ok(logger.lines.some((line) => line.msg === "bus connection lost; reconnecting"));
        t.diagnostic(`bus: listening again ${ms(relistened)} after PostgreSQL was back (down ${POSTGRES_DOWN_MS} ms)`);
      },
    );

    faultTest(
      "PostgreSQL restarted while completions and posts flow: 503 with Retry-After meanwhile, never a 500, recovery without a restart, every accepted post's event delivered",
      ["postgres"],
      async (t) => {
        const databaseUrl = await createDatabase(postgres, "restarted");
        const key = await init({ databaseUrl });
        const sink = await startWebhookReceiver();
        cleanups.push(() => sink.close());
        const relay = await serve("relay on the restarted database", ["--database", databaseUrl], {
          TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
          TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: "200,400,800,1600,3200",
          // A claim lasts the longest attempt plus 10 s (relay/src/main.ts), so an event whose claim was cut short by the
          // outage goes out again within this test.
          TAB_RELAY_WEBHOOK_TIMEOUT_MS: "2000",
          TAB_RELAY_SOCKET_ACK_TIMEOUT_MS: "1000",
        });
        const agent = await call<{ agent: { id: string }; token: string }>(relay, key, "/agents", "POST", {
          name: "Watcher",
          webhook_url: sink.url,
        });
        const channel = await call<{ id: string }>(relay, key, "/channels", "POST", { name: "ops" });
        await call(relay, key, `/channels/${channel.id}/members`, "POST", { agent_id: agent.agent.id });
        const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };

        const completions = load(
          3,
          (n) =>
            attempt(`${relay.url}/api/v1/tab/chat/completions`, {
              method: "POST",
              headers,
              body: JSON.stringify(completionBody({ entity_id: `src/file${n}.ts` }, { stream: n % 2 === 0 })),
            }),
          10,
        );
        const posts = load(
          2,
          (n) =>
            attempt(`${relay.url}/api/v1/conversations/channel/${channel.id}/messages`, {
              method: "POST",
              headers,
              body: JSON.stringify({ text: `@Watcher job ${n} needs a look` }),
            }),
          20,
        );
        const readiness = load(1, () => attempt(`${relay.url}/readyz`), 50);

        // The first completions start the relay's tokenizer worker, which takes seconds on a busy machine: the outage
        // starts once requests of both kinds flow.
        await until("completions and posts to flow", 30_000, () =>
          count(completions.outcomes, (o) => o.status === 200) >= 20 &&
          count(posts.outcomes, (o) => o.status === 201) >= 5
            ? true
            : undefined,
        );
        const stopping = performance.now();
        await postgres.stop("fast");
        const down = performance.now();
        // A Socket Mode handshake needs the database for its token: it is refused like any request, 503 with Retry-After.
        const handshake = await upgradeAnswer(`${relay.url}/api/v1/agent-api/socket`, agent.token);
        await sleep(POSTGRES_DOWN_MS);
        const starting = performance.now();
        await postgres.start();
        // pg_ctl returns once the server accepts connections: recovery is counted from then.
        const back = performance.now();
        const firstAfter = (outcomes: readonly Outcome[], status: number) =>
          outcomes.find((o) => o.at > back && o.status === status)?.at;
        // The load goes on until both kinds of request have succeeded again for a second.
        await until(
          "completions and posts to succeed again",
          RECOVERY_MS,
          () => {
            const c = firstAfter(completions.outcomes, 200);
            const p = firstAfter(posts.outcomes, 201);
            return c !== undefined && p !== undefined && performance.now() - Math.max(c, p) > 1_000 ? true : undefined;
          },
          100,
        ).catch(() => undefined);
        await Promise.all([completions.stop(), posts.stop(), readiness.stop()]);

        const all = [...completions.outcomes, ...posts.outcomes];
        const unexpected = all.filter((o) => o.status !== 200 && o.status !== 201 && o.status !== 503);
        const unavailable = all.filter((o) => o.status === 503);
        const posted = posts.outcomes.flatMap((o) =>
          o.status === 201 ? [(o.body as { data: { id: string } }).data.id] : [],
        );
        // Every accepted message reaches the agent, at least once (a webhook-id may repeat).
        const deliveredIds = () =>
          new Set(sink.deliveries.map((d) => (JSON.parse(d.body) as MessageCreatedEvent).message.id));
        await until(
          "every accepted message's event to be delivered",
          20_000,
          () => (posted.every((id) => deliveredIds().has(id)) ? true : undefined),
          100,
        ).catch(() => undefined);
        const delivered = deliveredIds();
        const lost = posted.filter((id) => !delivered.has(id));
        const webhookIds = new Set(sink.deliveries.map((d) => d.headers["webhook-id"]));
        const readyDuringOutage = readiness.outcomes.filter((o) => o.at > down + 200 && o.at < starting);
        const readyAgain = firstAfter(readiness.outcomes, 200);
        const completionsAgain = firstAfter(completions.outcomes, 200);
        const postsAgain = firstAfter(posts.outcomes, 201);
        const since = (at: number | undefined) => (at === undefined ? "never" : ms(at - back));

        t.diagnostic(
          `PostgreSQL restart (fast stop ${ms(down - stopping)}, down ${ms(back - down)}): ${all.length} requests ` +
            `(${completions.outcomes.length} completions: ${count(completions.outcomes, (o) => o.status === 503)} answered 503; ` +
            `${posts.outcomes.length} posts: ${count(posts.outcomes, (o) => o.status === 503)} answered 503), ${count(all, (o) => o.status === 200 || o.status === 201)} 2xx, ` +
            `${count(all, isServerError)} 500s, ${unavailable.length} 503s (${count(unavailable, (o) => o.retryAfter !== null)} with Retry-After), ` +
            `${count(all, (o) => typeof o.status !== "number")} unanswered; serving again after the start: completions ${since(completionsAgain)}, ` +
            `posts ${since(postsAgain)}, /readyz ${since(readyAgain)}; events: ${posted.length} posts accepted, ${delivered.size} delivered ` +
            `(${webhookIds.size} webhook-ids in ${sink.deliveries.length} deliveries), ${lost.length} lost`,
        );

        assert.equal(relay.child.exitCode, null, `the relay process kept running\n${relay.output().slice(-4_000)}`);
        assert.deepEqual(
          unexpected.slice(0, 3),
          [],
          `${unexpected.length} requests answered neither 2xx nor 503\n${relay.output().slice(-4_000)}`,
        );
        for (const [kind, outcomes] of [
          ["completions", completions.outcomes],
          ["posts", posts.outcomes],
        ] as const) {
          assert.ok(
            count(outcomes, (o) => o.status === 503 && o.at > down && o.at < starting) > 0,
            `${kind} met the outage (otherwise this tested nothing)`,
          );
        }
        for (const o of unavailable) {
          assert.equal(o.code, "SERVICE_UNAVAILABLE");
          assert.equal(o.retryAfter, "2");
        }
        assert.deepEqual(
          handshake,
          { status: 503, retryAfter: "2", code: "SERVICE_UNAVAILABLE" },
          "a Socket Mode handshake during the outage",
        );
        assert.ok(
          completionsAgain !== undefined && postsAgain !== undefined,
          `completions and posts succeed again within ${RECOVERY_MS} ms of the restart`,
        );
        assert.ok(
          readyDuringOutage.length > 0 && readyDuringOutage.every((o) => o.status === 503),
          `/readyz during the outage: ${readyDuringOutage.map((o) => o.status).join(",")}`,
        );
        assert.ok(readyAgain !== undefined, "/readyz is ready again after the restart");
        assert.deepEqual(
          lost,
          [],
          `${lost.length} of ${posted.length} accepted messages never reached the agent\n${relay.output().slice(-4_000)}`,
        );
      },
    );

    faultTest(
      "Redis stopped and started under load: completions never fail, limits hold per relay meanwhile, then are shared in Redis again",
      ["postgres", "redis"],
      async (t) => {
        const redis = await startThrowawayRedis();
        cleanups.push(() => redis.destroy());
        const databaseUrl = await createDatabase(postgres, "limits");
        const key = await init({ databaseUrl });
        const relays = await Promise.all(
          ["relay 1", "relay 2"].map((name) => serve(name, ["--database", databaseUrl, "--redis", redis.url])),
        );
        const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
        let n = 0;
        /** One completion through relay 1, then one through relay 2, as a load balancer alternates. */
        const pair = async () => {
          const answers: (Outcome & { relay: string })[] = [];
          for (const relay of relays) {
            const body = JSON.stringify(completionBody({ entity_id: `f${n++}.ts` }));
            answers.push({
              relay: relay.name,
              ...(await attempt(`${relay.url}/api/v1/tab/chat/completions`, { method: "POST", headers, body })),
            });
          }
          return answers;
        };
        const remaining = (o: Outcome) => Number(o.headers?.get("x-ratelimit-remaining"));
        const reset = (o: Outcome) => o.headers?.get("x-ratelimit-reset");
        /** How far X-RateLimit-Remaining fell from each answer to the next (within one window), over `answers` in order. */
        const drops = (answers: readonly Outcome[]) =>
          answers
            .slice(1)
            .flatMap((o, i) =>
              reset(o) === reset(answers[i] as Outcome) ? [remaining(answers[i] as Outcome) - remaining(o)] : [],
            );

        // Shared: requests alternating between the two relays count down one counter.
        /**
         * Ten requests, alternating, that count down one counter. A hit that Redis is slow to answer (over 100 ms, on a
         * busy machine) is counted in memory by design, so a run it interrupts is tried again, a few times at most.
         */
        const sharedRun = async () => {
          const tried: number[][] = [];
          for (let run = 0; run < 5; run++) {
            const answers: Outcome[] = [];
            for (let i = 0; i < 5; i++) answers.push(...(await pair()));
            if (drops(answers).every((d) => d === 1)) return answers;
            tried.push(drops(answers));
          }
          assert.fail(
            `one counter for both relays: no run of ten requests counted down by one each: ${JSON.stringify(tried)}`,
          );
        };
        const shared = await sharedRun();

        await redis.stop();
        const down = performance.now();
        const during: (Outcome & { relay: string })[] = [];
        // A steady load for the whole outage, and enough requests on each relay to see how it counts.
        while (performance.now() - down < REDIS_DOWN_MS || during.length < 10) {
          during.push(...(await pair()));
          await sleep(20);
        }
        const readyDuring = await Promise.all(relays.map((relay) => attempt(`${relay.url}/readyz`)));
        await redis.start();
        const back = performance.now();
        await until(
          "both relays to count in Redis again",
          RECOVERY_MS,
          async () => {
            const ready = await Promise.all(relays.map((relay) => attempt(`${relay.url}/readyz`)));
            return ready.every((o) => o.status === 200) ? true : undefined;
          },
          50,
        );
        const recovered = performance.now() - back;
        const again = await sharedRun();
        const last = again[again.length - 1] as Outcome;
        // The counter of the last answer's window (relay/src/rateLimit/redisStore.ts: `<prefix><bucket>:<window index>`,
        // the window ending at X-RateLimit-Reset).
        const windowIndex = Number(reset(last)) / 60 - 1;
        const admin = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
        await admin.connect();
        const counter = (await admin.keys("tab-relay:rl:*")).find((name) => name.endsWith(`:read:${windowIndex}`));
        const counted = counter === undefined ? undefined : Number(await admin.get(counter));
        await admin.quit();

        const unexpected = [...shared, ...during, ...again].filter((o) => o.status !== 200);
        const withHeaders = count(
          during,
          (o) =>
            o.headers?.get("x-ratelimit-limit") === String(READS_PER_MINUTE) &&
            Number.isInteger(remaining(o)) &&
            reset(o) !== null,
        );
        t.diagnostic(
          `Redis stopped for ${ms(back - down)}: ${shared.length + during.length + again.length} completions (${during.length} while down), ` +
            `${unexpected.length} not 200, ${withHeaders} of ${during.length} with rate-limit headers while down; ` +
            `shared counting again ${ms(recovered)} after the start (${counted ?? "?"} counted in Redis since)`,
        );
        assert.deepEqual(unexpected.slice(0, 3), [], "every completion succeeded, Redis or not");
        assert.equal(withHeaders, during.length, "the rate-limit headers are there while Redis is down");
        for (const relay of relays) {
          // Counted alone, each relay's count falls by one per request it serves, although the other serves as many.
          const own = during.filter((o) => o.relay === relay.name);
          assert.ok(
            drops(own).every((d) => d === 1),
            `${relay.name} counts its own requests while Redis is down: ${drops(own).join(",")}`,
          );
        }
        assert.deepEqual(
          readyDuring.map((o) => [o.status, (o.body as { redis?: boolean }).redis]),
          [
            [503, false],
            [503, false],
          ],
          "/readyz names Redis as not ready",
        );
        assert.equal(counted, READS_PER_MINUTE - remaining(last), "the shared count is Redis's counter");
        for (const relay of relays) assert.equal(relay.child.exitCode, null);
      },
    );
  });

  faultTest(
    "a model that hangs or drops mid-stream: a clear error event and no [DONE], and every connection is closed afterwards",
    [],
    async (t) => {
      const standIn = await startUpstreamStandIn();
      cleanups.push(() => standIn.close());
      const kinds = {
        /** Sends a first piece, then nothing: the relay's silence timeout (UPSTREAM_TIMEOUT_MS) ends the stream. */
        "hangs mid-stream": { kind: "reply", text: ["partial ", "never sent"], chunkDelayMs: 60_000 },
        /** Sends a first piece, then resets the connection. */
        "drops mid-stream": { kind: "disconnect", sent: ["partial "] },
        /** Never answers at all. */
        "hangs before answering": { kind: "hang" },
        /** Closes the connection without answering. */
        "drops before answering": { kind: "disconnect", sent: [] },
      } satisfies Record<string, StandInBehaviour>;
      type Kind = keyof typeof kinds;
      const names = Object.keys(kinds) as Kind[];
      standIn.setBehaviour((request) => {
        const context = JSON.stringify(request.body);
        return kinds[names.find((name) => context.includes(`[${name}]`)) ?? "hangs mid-stream"];
      });
      const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-faults-"));
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      const key = await init({ dataDir });
      const relay = await serve("relay on a failing model", ["--data", dataDir], {
        TAB_RELAY_UPSTREAM_URL: standIn.url,
        TAB_RELAY_UPSTREAM_MODEL: "stand-in-model",
        TAB_RELAY_UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      });
      const pid = relay.child.pid as number;
      const fds = () => readdirSync(`/proc/${pid}/fd`).length;

      /** A streaming completion on its own connection (no keep-alive), read to the end; the status and the SSE frames. */
      const complete = (kind: Kind, n: number) =>
        new Promise<{ status: number; text: string; frames: { event: string | undefined; data: string }[] }>(
          (resolve, reject) => {
            const body = JSON.stringify(
              completionBody(
                { entity_id: `src/${n}.ts`, active_text_before_cursor: `// [${kind}] ${n}\nfunction f() {` },
                { stream: true },
              ),
            );
            const req = httpRequest(`${relay.url}/api/v1/tab/chat/completions`, {
              method: "POST",
              agent: false,
              headers: {
                authorization: `Bearer ${key}`,
                "content-type": "application/json",
                "content-length": Buffer.byteLength(body),
              },
              timeout: REQUEST_TIMEOUT_MS,
            });
            req.on("timeout", () => req.destroy(new Error("no answer in time")));
            req.on("error", reject);
            req.on("response", (res) => {
              let text = "";
              res.setEncoding("utf8");
              res.on("data", (chunk: string) => (text += chunk));
              res.on("error", reject);
              res.on("end", () => {
                const frames = text
                  .split("\n\n")
                  .filter((block) => block.trim() !== "")
                  .map((block) => {
                    const lines = block.split("\n");
                    return {
                      event: lines.find((l) => l.startsWith("event: "))?.slice(7),
                      data: lines
                        .filter((l) => l.startsWith("data: "))
                        .map((l) => l.slice(6))
                        .join("\n"),
                    };
                  });
                resolve({ status: res.statusCode ?? 0, text, frames });
              });
            });
            req.end(body);
          },
        );

      /** What a request of each kind must end with. */
      const expected: Record<Kind, { status: number; code: string; midStream: boolean }> = {
        "hangs mid-stream": { status: 200, code: "UPSTREAM_TIMEOUT", midStream: true },
        "drops mid-stream": { status: 200, code: "UPSTREAM_ERROR", midStream: true },
        "hangs before answering": { status: 504, code: "UPSTREAM_TIMEOUT", midStream: false },
        "drops before answering": { status: 502, code: "UPSTREAM_ERROR", midStream: false },
      };
      const check = async (kind: Kind, n: number) => {
        const { status, text, frames } = await complete(kind, n);
        const want = expected[kind];
        assert.equal(status, want.status, `${kind}: status`);
        if (!want.midStream) {
          assert.equal(
            (JSON.parse(text) as { error?: { code?: string } }).error?.code,
            want.code,
            `${kind}: the error envelope`,
          );
          return;
        }
        const last = frames[frames.length - 1];
        assert.ok(
          frames.some((f) => f.event === undefined && f.data.includes("partial")),
          `${kind}: the text sent before the failure arrived`,
        );
        assert.equal(last?.event, "error", `${kind}: the stream ends with an error event`);
        assert.deepEqual(Object.keys(JSON.parse(last.data) as object), ["error"]);
        assert.equal(
          (JSON.parse(last.data) as { error: { code: string } }).error.code,
          want.code,
          `${kind}: the error event's code`,
        );
        assert.ok(!frames.some((f) => f.data === "[DONE]"), `${kind}: no [DONE] after a failure`);
      };
      // After an aborted request undici opens a fresh connection to the upstream, which it closes when its keep-alive
      // (4 s) runs out unused: the wait allows for it.
      const settled = async (what: string) =>
        until(what, 8_000, () => (standIn.openSockets() === 0 ? true : undefined), 20);

      // Warm up: one of each, so whatever the relay opens once (its upstream pool, the tokenizer worker) is open.
      for (const [i, kind] of names.entries()) await check(kind, i);
      await settled("the warm-up's upstream connections to close");
      await sleep(200);
      const baseline = fds();

      const ROUNDS = 20;
      const PARALLEL = 8;
      let peakFds = baseline;
      let peakUpstream = 0;
      const sampler = setInterval(() => {
        peakFds = Math.max(peakFds, fds());
        peakUpstream = Math.max(peakUpstream, standIn.openSockets());
      }, 25);
      const started = performance.now();
      const jobs = Array.from(
        { length: ROUNDS * names.length },
        (_, i) => [names[i % names.length] as Kind, 100 + i] as const,
      );
      let next = 0;
      await Promise.all(
        Array.from({ length: PARALLEL }, async () => {
          while (next < jobs.length) {
            const [kind, n] = jobs[next++] as readonly [Kind, number];
            await check(kind, n);
          }
        }),
      );
      const took = performance.now() - started;
      clearInterval(sampler);
      // The connection of every request the relay gave up on closes at once, so the model stops working on it.
      const abandoned = standIn.requests
        .slice(names.length)
        .filter((request) => JSON.stringify(request.body).includes("[hangs"));
      await until(
        "the relay to close every connection whose request it gave up on",
        1_000,
        () => (abandoned.every((r) => r.clientAborted) ? true : undefined),
        20,
      );
      await settled("every upstream connection to close");
      const closedIn = performance.now() - started - took;
      const after = await until(
        "the relay's descriptors to return to their baseline",
        5_000,
        () => {
          const now = fds();
          return now <= baseline ? now : undefined;
        },
        50,
      ).catch(() => fds());

      t.diagnostic(
        `failing model: ${jobs.length} streams (${ROUNDS} of each: ${names.join(", ")}) in ${ms(took)}, ${PARALLEL} at a time, all with the expected error; ` +
          `upstream sockets open: peak ${peakUpstream}, after ${standIn.openSockets()} (${ms(closedIn)} after the last answer); ` +
          `relay file descriptors: baseline ${baseline}, peak ${peakFds}, after ${after}`,
      );
      // Both measures saw the connections while they were open, so their return to rest means something.
      assert.ok(
        peakUpstream > 0 && peakFds > baseline,
        `connections were seen open: ${peakUpstream} upstream, ${peakFds - baseline} descriptors`,
      );
      assert.equal(standIn.openSockets(), 0, "every upstream connection is closed");
      assert.ok(after <= baseline, `the relay's file descriptors return to ${baseline} (now ${after})`);
      assert.equal(relay.child.exitCode, null);
    },
  );
});
