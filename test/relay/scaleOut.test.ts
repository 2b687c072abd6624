import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { readdirSync, statSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { join } from "node:path";
import { after, before, describe, test, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { MessageCreatedEvent } from "@tab-relay/shared";
import type { Delivery } from "@tab-relay/shared/api";
import pg from "pg";
import { Webhook } from "standardwebhooks";
import WebSocket from "ws";
import { SCOPES } from "../../relay/src/auth/scopes";
import { type RelayProcess, spawnRelay, until } from "../support/relayProcess";
import { REDIS_URL, createDatabase, dropDatabases, servicesProblem } from "../support/scaleOutServices";
import { type ReceivedDelivery, type WebhookReceiver, startWebhookReceiver } from "../support/webhookReceiver";

/**
 * Scale-out: relays run as real processes of the built CLI (`tab-relay serve --database … --redis …`), two or more
 * on one fresh PostgreSQL database and the local Redis, and the test checks what a load balancer in front of them
 * must be able to rely on: shared rate limits, revocations seen everywhere at once, each delivery attempt made by
 * exactly one relay, live updates reaching every relay, and work left by a killed relay finished by another.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "relay/bin/tab-relay.js");
const MIGRATIONS = [
  "0001_workspaces_users_keys",
  "0002_conversations_agents_outbox",
  "0003_sessions",
  "0004_agent_sockets",
  "0005_sessions_by_key",
  "0006_audit_log",
  "0007_tab_usage",
  "0008_tab_usage_next_edits",
];

/** Everything but reads is lifted: the documented 300 reads a minute (docs/api.md#rate-limits) are what the rate-limit test checks. */
const LIFTED = "writes=100000,agent_reads=100000,agent_posts=100000,session_reads=100000,session_writes=100000";
const READS_PER_MINUTE = 300;
const MINUTE_MS = 60_000;
/** The rate-limit run must fit in one fixed window; with less than this left of it, the test waits for the next. */
const WINDOW_MARGIN_MS = 10_000;

/** Longer than the kill scenario takes to answer the survivor's own attempts, which it holds meanwhile. */
const KILL_WEBHOOK_TIMEOUT_MS = 5_000;
const KILL_SOCKET_ACK_TIMEOUT_MS = 2_000;
/** How long a claim on an event lasts, as relay/src/main.ts sets it: the longest attempt plus 10 s. */
const LEASE_MS = Math.max(KILL_WEBHOOK_TIMEOUT_MS, KILL_SOCKET_ACK_TIMEOUT_MS) + 10_000;
/** A relay learns of claims that lapsed elsewhere when it next reads the outbox, at least this often (delivery/worker.ts). */
const IDLE_POLL_MS = 30_000;
const KILL_SHUTDOWN_GRACE_MS = 1_500;
/** Long enough for a loaded machine; anything not here by then was not coming because of the event that was posted. */
const AT_ONCE_MS = 5_000;
/** How long "nothing else arrives" is watched for once the expected deliveries are in. */
const QUIET_MS = 1_000;

const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));

const problem = await servicesProblem();
const SKIPPED =
  problem === undefined
    ? undefined
    : `${problem}: the scale-out tests (two relays on PostgreSQL and Redis) did not run`;
if (SKIPPED) console.error(`\n*** SKIPPED: ${SKIPPED} ***\n`);

/** A test that skips, saying why, when PostgreSQL or Redis is not there. */
function scaleTest(name: string, fn: (t: TestContext) => Promise<void>, options: { todo?: string } = {}): void {
  test(name, options, async (t) => {
    if (SKIPPED) return t.skip(SKIPPED);
    await fn(t);
  });
}

const createdDatabases: string[] = [];

async function freshDatabase(): Promise<string> {
  const database = await createDatabase("tab_relay_scale");
  createdDatabases.push(database.name);
  return database.url;
}

async function query<T extends pg.QueryResultRow>(
  databaseUrl: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** The newest TypeScript source the bundle is built from (the relay's and the shared package's, tests aside). */
function newestSourceMs(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMs(path));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts"))
      newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** The CLI runs relay/dist/cli.js: a missing or stale bundle would test yesterday's code. */
function ensureBuilt(): void {
  const bundle = join(ROOT, "relay/dist/cli.js");
  const builtMs = statSync(bundle, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  if (builtMs >= Math.max(newestSourceMs(join(ROOT, "relay/src")), newestSourceMs(join(ROOT, "shared/src")))) return;
  const build = spawnSync("npm", ["run", "build", "-w", "relay"], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 120_000,
  });
  if (build.status !== 0) throw new Error(`building the relay failed:\n${build.stdout}\n${build.stderr}`);
}

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** One `tab-relay` command as its own process; several may run at once. */
async function cli(args: readonly string[]): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...baseEnv, TAB_RELAY_LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stdout, stderr };
}

async function initWorkspace(databaseUrl: string): Promise<string> {
  const result = await cli(["init", "--database", databaseUrl, "--workspace", "acme", "--owner", "Olive", "--json"]);
  assert.equal(result.code, 0, `tab-relay init failed:\n${result.stdout}\n${result.stderr}`);
  return (JSON.parse(result.stdout) as { api_key: string }).api_key;
}

const children = new Set<ChildProcess>();

/** `tab-relay serve --database … --redis …` on port 0; resolves once it announces where it listens. */
function serve(name: string, databaseUrl: string, env: Record<string, string>): Promise<RelayProcess> {
  return spawnRelay({
    name,
    args: [BIN, "serve", "--database", databaseUrl, "--redis", REDIS_URL, "--port", "0", "--host", "127.0.0.1"],
    cwd: ROOT,
    env: { ...baseEnv, TAB_RELAY_LOG_LEVEL: "warn", ...env },
    tracked: children,
    startTimeoutMs: 20_000,
    outputChars: 16_000,
  });
}

function killAll(): void {
  for (const child of children) child.kill("SIGKILL");
}

/** A request with a bearer token (a key or an agent token); the body, when given, is sent as JSON. */
function request(
  relay: RelayProcess,
  token: string | null,
  path: string,
  init: { method?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...init.headers };
  if (token !== null) headers["authorization"] = `Bearer ${token}`;
  if (init.json !== undefined) headers["content-type"] = "application/json";
  return fetch(`${relay.url}/api/v1${path}`, {
    method: init.method ?? "GET",
    headers,
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
}

/** The `data` of a successful answer; anything else fails with the status and body. */
async function call<T>(relay: RelayProcess, token: string, path: string, method = "GET", json?: unknown): Promise<T> {
  const response = await request(relay, token, path, { method, json });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} on ${relay.name} answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { data: T }).data;
}

/** The status and error code of a refused request. */
async function refusal(response: Response): Promise<{ status: number; code: string | undefined }> {
  const body = (await response.json().catch(() => ({}))) as { error?: { code?: string } };
  return { status: response.status, code: body.error?.code };
}

function webhookHeaders(delivery: ReceivedDelivery): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const value = delivery.headers[name];
    assert.equal(typeof value, "string", `header ${name} is missing`);
    out[name] = value as string;
  }
  return out;
}

const webhookId = (delivery: ReceivedDelivery) => delivery.headers["webhook-id"] as string;

/** Verifies every delivery with the official library and returns each payload; webhook-id must be the event id. */
function verifiedEvents(deliveries: readonly ReceivedDelivery[], secret: string): MessageCreatedEvent[] {
  const verifier = new Webhook(secret);
  return deliveries.map((delivery) => {
    const headers = webhookHeaders(delivery);
    assert.doesNotThrow(() => verifier.verify(delivery.body, headers), `signature of ${headers["webhook-id"]}`);
    const event = JSON.parse(delivery.body) as MessageCreatedEvent;
    assert.equal(event.id, headers["webhook-id"]);
    return event;
  });
}

/** Posts `count` messages mentioning `agentName`, message n through relay n mod 2, `parallel` at a time; their ids in order. */
async function postMentions(
  relays: readonly RelayProcess[],
  key: string,
  channelId: string,
  agentName: string,
  count: number,
  parallel = 8,
): Promise<string[]> {
  const ids: string[] = new Array<string>(count);
  let next = 0;
  const poster = async () => {
    while (next < count) {
      const n = next++;
      const relay = relays[n % relays.length] as RelayProcess;
      ids[n] = (
        await call<{ id: string }>(relay, key, `/conversations/channel/${channelId}/messages`, "POST", {
          text: `@${agentName} job ${n} needs a look`,
        })
      ).id;
    }
  };
  await Promise.all(Array.from({ length: parallel }, poster));
  return ids;
}

/** An agent with a webhook URL (or none), in a fresh public channel. */
async function agentInChannel(relay: RelayProcess, key: string, name: string, webhookUrl: string | null) {
  const created = await call<{ agent: { id: string }; token: string; signing_secret: string }>(
    relay,
    key,
    "/agents",
    "POST",
    { name, webhook_url: webhookUrl },
  );
  const channel = await call<{ id: string }>(relay, key, "/channels", "POST", { name: `${name.toLowerCase()}-room` });
  await call(relay, key, `/channels/${channel.id}/members`, "POST", { agent_id: created.agent.id });
  return { id: created.agent.id, token: created.token, secret: created.signing_secret, channelId: channel.id };
}

/** A new key of the owner's: each test reads with its own, so no test spends another's 300 reads a minute. */
async function newKey(relay: RelayProcess, ownerKey: string, name: string): Promise<{ id: string; secret: string }> {
  return call<{ id: string; secret: string }>(relay, ownerKey, "/api-keys", "POST", { name, scopes: SCOPES });
}

async function deliveryLog(relay: RelayProcess, key: string, agentId: string): Promise<Delivery[]> {
  return call<Delivery[]>(relay, key, `/agents/${agentId}/deliveries?limit=100`);
}

/** A WebSocket open on `url` with `headers`; its frames are collected and can be waited for. */
class Socket {
  readonly frames: Record<string, unknown>[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly waiters: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      this.frames.push(JSON.parse(String(data)) as Record<string, unknown>);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => ws.on("close", (code, reason) => resolve({ code, reason: String(reason) })));
  }

  static async open(url: string, headers: Record<string, string>): Promise<Socket> {
    const ws = new WebSocket(url, { headers });
    sockets.add(ws);
    ws.on("close", () => sockets.delete(ws));
    const socket = new Socket(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) =>
        reject(new Error(`the upgrade to ${url} was refused with ${res.statusCode}`)),
      );
    });
    return socket;
  }

  /** The first frame (from now on or already received) that `match` accepts. */
  async frame(
    match: (frame: Record<string, unknown>) => boolean,
    timeoutMs = AT_ONCE_MS,
  ): Promise<Record<string, unknown>> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(match);
      if (found) return found;
      const left = deadline - performance.now();
      if (left <= 0)
        throw new Error(
          `no matching frame within ${timeoutMs} ms; frames: ${JSON.stringify(this.frames).slice(0, 2_000)}`,
        );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

const sockets = new Set<WebSocket>();
const receivers: WebhookReceiver[] = [];
const hung: ServerResponse[] = [];

async function receiver(answer?: Parameters<typeof startWebhookReceiver>[0]): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver(answer);
  receivers.push(started);
  return started;
}

after(async () => {
  for (const ws of sockets) ws.terminate();
  killAll();
  for (const res of hung) res.destroy();
  await Promise.all(receivers.map((r) => r.close()));
  if (!SKIPPED) await dropDatabases(createdDatabases.splice(0));
});

// The killed-relay scenario spends most of its time waiting for a lease to lapse, so it runs beside the others.
/** What `relay` writes to stdout and stderr from now until `stop()`, which returns it. */
function watchOutput(relay: RelayProcess): { stop(): string } {
  let text = "";
  const collect = (chunk: Buffer) => (text += chunk.toString("utf8"));
  relay.child.stdout?.on("data", collect);
  relay.child.stderr?.on("data", collect);
  return {
    stop() {
      relay.child.stdout?.off("data", collect);
      relay.child.stderr?.off("data", collect);
      return text;
    },
  };
}

describe("several relays on one PostgreSQL and Redis", { concurrency: true }, () => {
  describe("two relays serving one workspace", { concurrency: 1 }, () => {
    let databaseUrl = "";
    let ownerKey = "";
    let relays: [RelayProcess, RelayProcess];
    const one = () => relays[0];
    const two = () => relays[1];

    /** A key's 300 reads taken in turn by the two relays, within one fixed minute: each answer's count and window. */
    const readsAcrossRelays = async (secret: string) => {
      // The limit counts per fixed minute: a run straddling two would start counting afresh halfway.
      const left = MINUTE_MS - (Date.now() % MINUTE_MS);
      if (left < WINDOW_MARGIN_MS) await sleep(left + 100);
      const counts: number[] = [];
      const resets = new Set<string | null>();
      for (let n = 0; n < READS_PER_MINUTE; n++) {
        const relay = relays[n % 2] as RelayProcess;
        const response = await request(relay, secret, "/me");
        assert.equal(response.status, 200, `read ${n + 1} on ${relay.name}: ${await response.clone().text()}`);
        await response.arrayBuffer();
        counts.push(Number(response.headers.get("x-ratelimit-remaining")));
        resets.add(response.headers.get("x-ratelimit-reset"));
      }
      return { counts, resets };
    };

    before(async () => {
      if (SKIPPED) return;
      ensureBuilt();
      databaseUrl = await freshDatabase();
      ownerKey = await initWorkspace(databaseUrl);
      const env = {
        TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
        TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: "300",
        TAB_RELAY_RATE_LIMITS: LIFTED,
        TAB_RELAY_SOCKET_ACK_TIMEOUT_MS: "2000",
      };
      relays = await Promise.all([serve("relay 1", databaseUrl, env), serve("relay 2", databaseUrl, env)]);
    });

    scaleTest("both relays are ready behind a load balancer once the database and Redis answer", async () => {
      for (const relay of relays) {
        const response = await fetch(`${relay.url}/readyz`);
        assert.equal(response.status, 200, `${relay.name}: ${await response.clone().text()}`);
        assert.equal((await fetch(`${relay.url}/healthz`)).status, 200);
      }
    });

    scaleTest("a key's 300 reads a minute are shared by both relays: the 301st is refused on either", async (t) => {
      // A hit Redis does not answer within 100 ms is counted by the relay's own memory instead, by design
      // (redisStore.ts), and says so in its log: on a loaded machine in CI one read of 300 did (remaining 299 at read
      // 189). Such a run tells nothing about sharing, so it is run again with a new key, up to 3 times.
      const FELL_BACK = "Redis rate limit store unavailable";
      let key: Awaited<ReturnType<typeof newKey>> | undefined;
      for (let attempt = 1; ; attempt++) {
        key = await newKey(one(), ownerKey, `counted ${attempt}`);
        const logged = relays.map((relay) => watchOutput(relay));
        const remaining = await readsAcrossRelays(key.secret);
        const fellBack = logged.some((watch) => watch.stop().includes(FELL_BACK));
        const expected = Array.from({ length: READS_PER_MINUTE }, (_, n) => READS_PER_MINUTE - 1 - n);
        if (fellBack && attempt < 3 && JSON.stringify(remaining.counts) !== JSON.stringify(expected)) {
          t.diagnostic(`attempt ${attempt}: Redis did not answer a hit within its timeout; counting again`);
          continue;
        }
        // One counter for both relays counts down by one per request, whichever relay took it.
        assert.deepEqual(
          remaining.counts,
          expected,
          "X-RateLimit-Remaining counts down across both relays (a per-relay count would go down by one every other request)",
        );
        assert.equal(remaining.resets.size, 1, "every answer names the same window");
        break;
      }
      for (const relay of relays) {
        const refused = await request(relay, key.secret, "/me");
        assert.deepEqual(
          await refusal(refused),
          { status: 429, code: "RATE_LIMIT_EXCEEDED" },
          `the 301st read on ${relay.name}`,
        );
        assert.equal(refused.headers.get("x-ratelimit-remaining"), "0");
        assert.ok(Number(refused.headers.get("retry-after")) >= 1);
      }
    });

    scaleTest(
      "a key revoked through relay 1 is refused by relay 2 on the very next request, with its console session",
      async () => {
        const key = await newKey(one(), ownerKey, "to revoke");
        assert.equal((await request(two(), key.secret, "/me")).status, 200);
        const signIn = await request(two(), null, "/sessions", { method: "POST", json: { api_key: key.secret } });
        assert.equal(signIn.status, 201, await signIn.clone().text());
        const cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0] as string;
        assert.equal((await request(two(), null, "/sessions/current", { headers: { cookie } })).status, 200);

        await call(one(), ownerKey, `/api-keys/${key.id}`, "DELETE");

        assert.deepEqual(await refusal(await request(two(), key.secret, "/me")), { status: 401, code: "UNAUTHORIZED" });
        assert.equal(
          (await request(two(), null, "/sessions/current", { headers: { cookie } })).status,
          401,
          "the session made with the key ends with it",
        );
        assert.deepEqual(await refusal(await request(one(), key.secret, "/me")), { status: 401, code: "UNAUTHORIZED" });
      },
    );

    scaleTest(
      "an agent's token rotated, the agent paused or removed through relay 1: relay 2's Agent API and sockets follow at once",
      async () => {
        const key = (await newKey(one(), ownerKey, "agents")).secret;
        const agent = await agentInChannel(one(), key, "Rotor", null);
        const socketUrl = `${two().url.replace(/^http/, "ws")}/api/v1/agent-api/socket`;
        assert.equal((await request(two(), agent.token, "/agent-api/me")).status, 200);
        const first = await Socket.open(socketUrl, { authorization: `Bearer ${agent.token}` });
        await first.frame((f) => f["type"] === "hello");

        const rotated = await call<{ token: string }>(one(), key, `/agents/${agent.id}/token`, "POST");
        assert.deepEqual(
          await refusal(await request(two(), agent.token, "/agent-api/me")),
          { status: 401, code: "INVALID_TOKEN" },
          "the old token on relay 2",
        );
        assert.equal((await request(two(), rotated.token, "/agent-api/me")).status, 200, "the new token on relay 2");
        assert.equal((await first.closed).code, 4001, "relay 2 closes the socket opened with the replaced token");

        const second = await Socket.open(socketUrl, { authorization: `Bearer ${rotated.token}` });
        await second.frame((f) => f["type"] === "hello");
        await call(one(), key, `/agents/${agent.id}/pause`, "POST");
        assert.deepEqual(await refusal(await request(two(), rotated.token, "/agent-api/me")), {
          status: 403,
          code: "AGENT_PAUSED",
        });
        assert.equal((await second.closed).code, 4003, "relay 2 closes the paused agent's socket");

        await call(one(), key, `/agents/${agent.id}/resume`, "POST");
        assert.equal(
          (await request(two(), rotated.token, "/agent-api/me")).status,
          200,
          "resumed through relay 1, relay 2 lets it in",
        );
        await call(one(), key, `/agents/${agent.id}`, "DELETE");
        assert.deepEqual(
          await refusal(await request(two(), rotated.token, "/agent-api/me")),
          { status: 401, code: "INVALID_TOKEN" },
          "removed through relay 1",
        );
      },
    );

    scaleTest(
      "100 events posted through both relays are each delivered once: one attempt each, no webhook-id twice",
      async () => {
        const EVENTS = 100;
        const key = (await newKey(one(), ownerKey, "exactly once")).secret;
        const sink = await receiver();
        const agent = await agentInChannel(one(), key, "Counter", sink.url);
        const messageIds = await postMentions(relays, key, agent.channelId, "Counter", EVENTS);

        await sink.waitFor(EVENTS, 20_000);
        await sleep(QUIET_MS);
        const ids = sink.deliveries.map(webhookId);
        const twice = ids.filter((id, n) => ids.indexOf(id) !== n);
        assert.deepEqual(twice, [], "no webhook-id arrives twice");
        assert.equal(sink.deliveries.length, EVENTS, "exactly one delivery per event");
        const events = verifiedEvents(sink.deliveries, agent.secret);
        assert.deepEqual(
          events.map((e) => e.message.id).sort(),
          [...messageIds].sort(),
          "one event per message posted, through either relay",
        );

        const log = await until(
          "the log to show every event delivered",
          AT_ONCE_MS,
          async () => {
            const entries = await deliveryLog(two(), key, agent.id);
            return entries.length === EVENTS && entries.every((d) => d.status === "delivered") ? entries : undefined;
          },
          200,
        );
        const attempts = log.map((d) => d.attempts.length);
        assert.ok(
          attempts.every((n) => n === 1),
          `one recorded attempt per event; got ${JSON.stringify(attempts)}`,
        );
      },
    );

    scaleTest(
      "with a failing first attempt, each event arrives exactly twice, never two attempts of one id at once",
      async () => {
        const EVENTS = 30;
        const key = (await newKey(one(), ownerKey, "retries")).secret;
        const seen = new Map<string, number>();
        const open = new Set<string>();
        const overlaps: string[] = [];
        // Each answer waits a little, so a second relay attempting the same id meanwhile would be caught in the act.
        const sink = await receiver((delivery, res) => {
          const id = webhookId(delivery);
          if (open.has(id)) overlaps.push(id);
          open.add(id);
          const count = (seen.get(id) ?? 0) + 1;
          seen.set(id, count);
          setTimeout(() => {
            open.delete(id);
            res.writeHead(count === 1 ? 500 : 204).end(count === 1 ? "not yet" : "");
          }, 30);
        });
        const agent = await agentInChannel(one(), key, "Retrier", sink.url);
        const messageIds = await postMentions(relays, key, agent.channelId, "Retrier", EVENTS);

        await sink.waitFor(2 * EVENTS, 20_000);
        await sleep(QUIET_MS);
        assert.deepEqual(overlaps, [], "no id was attempted twice at the same time");
        assert.equal(seen.size, EVENTS);
        assert.deepEqual(
          [...seen.entries()].filter(([, n]) => n !== 2),
          [],
          "each id arrives exactly twice: the failed attempt and its one retry",
        );
        assert.equal(sink.deliveries.length, 2 * EVENTS);
        const events = verifiedEvents(sink.deliveries, agent.secret);
        assert.deepEqual([...new Set(events.map((e) => e.message.id))].sort(), [...messageIds].sort());
        for (const id of seen.keys()) {
          const bodies = new Set(sink.deliveries.filter((d) => webhookId(d) === id).map((d) => d.body));
          assert.equal(bodies.size, 1, `event ${id} kept its body across attempts`);
        }

        const log = await until(
          "the log to show every event delivered",
          AT_ONCE_MS,
          async () => {
            const entries = await deliveryLog(one(), key, agent.id);
            return entries.length === EVENTS && entries.every((d) => d.status === "delivered") ? entries : undefined;
          },
          200,
        );
        for (const entry of log) {
          assert.deepEqual(
            entry.attempts.map((a) => [a.attempt, a.outcome, a.status_code]),
            [
              [1, "failed", 500],
              [2, "success", 204],
            ],
            `attempts of ${entry.id}`,
          );
        }
      },
    );

    scaleTest(
      "a console signed in on relay 2 sees a message posted through relay 1, and an agent paused there",
      async () => {
        const key = (await newKey(one(), ownerKey, "live")).secret;
        const signIn = await request(two(), null, "/sessions", { method: "POST", json: { api_key: key } });
        assert.equal(signIn.status, 201, await signIn.clone().text());
        const cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0] as string;
        const live = await Socket.open(`${two().url.replace(/^http/, "ws")}/api/v1/live`, {
          cookie,
          origin: two().url,
        });
        await live.frame((f) => f["type"] === "hello");

        const channel = await call<{ id: string }>(one(), key, "/channels", "POST", { name: "town-square" });
        const posted = await call<{ id: string }>(one(), key, `/conversations/channel/${channel.id}/messages`, "POST", {
          text: "hello from relay 1",
        });
        const frame = await live.frame(
          (f) => f["type"] === "message.created" && (f["message"] as { id?: string } | undefined)?.id === posted.id,
        );
        assert.deepEqual(frame["conversation"], { type: "channel", id: channel.id });
        assert.equal((frame["message"] as { text: string }).text, "hello from relay 1");

        const agent = await call<{ agent: { id: string } }>(one(), key, "/agents", "POST", { name: "Watched" });
        await call(one(), key, `/agents/${agent.agent.id}/pause`, "POST");
        await live.frame((f) => f["type"] === "agent.updated" && f["agent_id"] === agent.agent.id);
        live.ws.close();
      },
    );

    scaleTest(
      "an event for a Socket Mode agent connected to relay 2 reaches it when posted through relay 1",
      async () => {
        const key = (await newKey(one(), ownerKey, "socket mode")).secret;
        const agent = await agentInChannel(one(), key, "Sockbot", null);
        const socket = await Socket.open(`${two().url.replace(/^http/, "ws")}/api/v1/agent-api/socket`, {
          authorization: `Bearer ${agent.token}`,
        });
        await socket.frame((f) => f["type"] === "hello");
        const posted = await call<{ id: string }>(
          one(),
          key,
          `/conversations/channel/${agent.channelId}/messages`,
          "POST",
          { text: "@Sockbot over the socket please" },
        );
        const envelope = await socket.frame((f) => f["type"] === "event");
        const event = JSON.parse(envelope["body"] as string) as MessageCreatedEvent;
        assert.equal(event.message.id, posted.id);
        assert.doesNotThrow(() =>
          new Webhook(agent.secret).verify(envelope["body"] as string, envelope["headers"] as Record<string, string>),
        );
        socket.ws.send(JSON.stringify({ type: "ack", envelope_id: envelope["envelope_id"] }));
        const [delivered] = await until(
          "the acknowledged event to show delivered",
          AT_ONCE_MS,
          async () => {
            const entries = await deliveryLog(one(), key, agent.id);
            return entries.length === 1 && entries[0]?.status === "delivered" ? entries : undefined;
          },
          100,
        );
        assert.deepEqual(
          delivered?.attempts.map((a) => [a.outcome, a.url]),
          [["success", "socket"]],
        );
        socket.ws.close();
      },
    );

    scaleTest(
      "while an agent's socket is connected to relay 2, relay 1 does not POST its events to the webhook URL",
      async () => {
        const EVENTS = 20;
        const key = (await newKey(one(), ownerKey, "socket wins")).secret;
        const sink = await receiver();
        const agent = await agentInChannel(one(), key, "Both", sink.url);
        const socket = await Socket.open(`${two().url.replace(/^http/, "ws")}/api/v1/agent-api/socket`, {
          authorization: `Bearer ${agent.token}`,
        });
        await socket.frame((f) => f["type"] === "hello");
        socket.ws.on("message", (data) => {
          const frame = JSON.parse(String(data)) as { type?: string; envelope_id?: string };
          if (frame.type === "event") socket.ws.send(JSON.stringify({ type: "ack", envelope_id: frame.envelope_id }));
        });
        await postMentions([one()], key, agent.channelId, "Both", EVENTS);
        await until("every event to arrive one way or the other", AT_ONCE_MS, () => {
          const envelopes = socket.frames.filter((f) => f["type"] === "event").length;
          return envelopes + sink.deliveries.length >= EVENTS ? true : undefined;
        });
        const envelopes = socket.frames.filter((f) => f["type"] === "event").length;
        socket.ws.close();
        assert.equal(
          sink.deliveries.length,
          0,
          `${sink.deliveries.length} of ${EVENTS} events went to the webhook URL, ${envelopes} over the socket`,
        );
      },
    );

    scaleTest(
      "two `tab-relay migrate` at once on a fresh database both succeed, and each migration is applied once",
      async () => {
        const fresh = await freshDatabase();
        const results = await Promise.all([
          cli(["migrate", "--database", fresh]),
          cli(["migrate", "--database", fresh]),
        ]);
        for (const result of results)
          assert.equal(result.code, 0, `migrate failed:\n${result.stdout}\n${result.stderr}`);
        const applied = results.flatMap((r) => /^Applied (.+)$/m.exec(r.stdout)?.[1]?.split(", ") ?? []);
        assert.deepEqual(
          applied.sort(),
          MIGRATIONS,
          `each migration applied by exactly one of them; outputs: ${JSON.stringify(results.map((r) => r.stdout))}`,
        );
        const rows = await query<{ name: string }>(fresh, "select name from kysely_migration order by name");
        assert.deepEqual(
          rows.map((r) => r.name),
          MIGRATIONS,
        );
        const again = await cli(["migrate", "--database", fresh]);
        assert.equal(again.code, 0);
        assert.match(again.stdout, /up to date/);
      },
    );
  });

  describe("a relay killed mid-delivery", { concurrency: 1 }, () => {
    let databaseUrl = "";
    let ownerKey = "";
    let doomed: RelayProcess;
    let survivor: RelayProcess;
    let sink: WebhookReceiver;
    /** What the receiver does with each delivery; swapped as the scenario moves on. */
    let answer: (delivery: ReceivedDelivery, res: ServerResponse) => void = (_delivery, res) =>
      void res.writeHead(204).end();
    const acked: ReceivedDelivery[] = [];
    const ack = (delivery: ReceivedDelivery, res: ServerResponse) => {
      acked.push(delivery);
      res.writeHead(204).end();
    };

    before(async () => {
      if (SKIPPED) return;
      ensureBuilt();
      databaseUrl = await freshDatabase();
      ownerKey = await initWorkspace(databaseUrl);
      const env = {
        TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
        TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: "300",
        TAB_RELAY_WEBHOOK_TIMEOUT_MS: String(KILL_WEBHOOK_TIMEOUT_MS),
        TAB_RELAY_SOCKET_ACK_TIMEOUT_MS: String(KILL_SOCKET_ACK_TIMEOUT_MS),
        TAB_RELAY_SHUTDOWN_GRACE_MS: String(KILL_SHUTDOWN_GRACE_MS),
        TAB_RELAY_RATE_LIMITS: `reads=100000,${LIFTED}`,
      };
      [doomed, survivor] = await Promise.all([serve("relay A", databaseUrl, env), serve("relay B", databaseUrl, env)]);
      sink = await receiver((delivery, res) => answer(delivery, res));
    });

    /** How long after their first attempt the survivor sent the killed relay's events, for the test after it. */
    const takeover = { afterFirstAttemptMs: Number.NaN };

    scaleTest(
      "SIGKILL a relay with attempts under way: the other sends them after the lease lapses, same ids, nothing lost",
      async (t) => {
        const EVENTS = 12;
        const held: { delivery: ReceivedDelivery; res: ServerResponse; cutOff: boolean }[] = [];
        answer = (delivery, res) => {
          hung.push(res);
          const entry = { delivery, res, cutOff: false };
          // Closed before any answer was written: the relay at the other end went away.
          res.once("close", () => (entry.cutOff = !res.writableFinished));
          held.push(entry);
        };
        const agent = await agentInChannel(doomed, ownerKey, "Survivor", sink.url);
        const messageIds = await postMentions([doomed, survivor], ownerKey, agent.channelId, "Survivor", EVENTS, 4);
        // A relay takes at most 8 attempts of one agent at a time, so with 12 hanging both relays hold some.
        await until(`all ${EVENTS} attempts to be under way`, AT_ONCE_MS, () =>
          held.length >= EVENTS ? true : undefined,
        );

        doomed.child.kill("SIGKILL");
        assert.equal(await doomed.exited, "SIGKILL");
        const killedAt = performance.now();
        // The kill closes the dead relay's connections; the attempts still open are the survivor's.
        await until("the dead relay's connections to close", AT_ONCE_MS, () =>
          held.some((h) => h.cutOff) ? true : undefined,
        );
        await sleep(300);
        const orphaned = held.filter((h) => h.cutOff);
        const survivors = held.filter((h) => !h.cutOff);
        assert.ok(
          orphaned.length >= EVENTS - 8,
          `the killed relay held at least ${EVENTS - 8} attempts; it held ${orphaned.length}`,
        );
        assert.equal(orphaned.length + survivors.length, EVENTS);
        answer = ack;
        for (const { delivery, res } of survivors) ack(delivery, res);

        const orphanIds = new Set(orphaned.map((h) => webhookId(h.delivery)));
        // After the lease lapses, the survivor sees the orphans at its next look at the outbox: at worst an idle poll later.
        const deadlineMs = LEASE_MS + IDLE_POLL_MS + 10_000;
        await until(
          `the ${orphanIds.size} orphaned events to arrive again (lease ${LEASE_MS / 1000} s)`,
          deadlineMs,
          () => ([...orphanIds].every((id) => acked.some((d) => webhookId(d) === id)) ? true : undefined),
          200,
        );
        await sleep(QUIET_MS);

        const ackedIds = acked.map(webhookId);
        assert.equal(new Set(ackedIds).size, ackedIds.length, "no event acknowledged twice");
        const events = verifiedEvents(sink.deliveries, agent.secret);
        assert.deepEqual(
          [...new Set(events.map((e) => e.message.id))].sort(),
          [...messageIds].sort(),
          "every message's event arrived",
        );
        assert.equal(
          sink.deliveries.length,
          EVENTS + orphanIds.size,
          "each orphaned event was sent once more, nothing else was",
        );
        for (const { delivery } of orphaned) {
          const again = acked.find((d) => webhookId(d) === webhookId(delivery)) as ReceivedDelivery;
          assert.equal(again.body, delivery.body, "the retry is the same event, byte for byte");
          // The claim was taken just before the first arrival; nobody may take it over before it lapses.
          assert.ok(
            again.at - delivery.at >= LEASE_MS - 1_000,
            `retried ${Math.round(again.at - delivery.at)} ms after the first attempt, before the lease lapsed`,
          );
        }
        const firstSent = Math.min(...orphaned.map((h) => h.delivery.at));
        const resent = Math.max(...acked.filter((d) => orphanIds.has(webhookId(d))).map((d) => d.at));
        takeover.afterFirstAttemptMs = resent - firstSent;
        t.diagnostic(
          `lease ${LEASE_MS} ms; the orphans went out again ${Math.round(resent - firstSent)} ms after their first attempt, ${Math.round(resent - killedAt)} ms after the kill`,
        );

        const log = await until(
          "the survivor's log to show every event delivered",
          AT_ONCE_MS,
          async () => {
            const entries = await deliveryLog(survivor, ownerKey, agent.id);
            return entries.length === EVENTS && entries.every((d) => d.status === "delivered") ? entries : undefined;
          },
          200,
        );
        for (const entry of log) {
          // The dead relay never recorded its attempt, so each event has the one that succeeded.
          assert.deepEqual(
            entry.attempts.map((a) => [a.attempt, a.outcome]),
            [[1, "success"]],
            `attempts of ${entry.id}`,
          );
        }
      },
    );

    scaleTest("the survivor takes over a dead relay's events as soon as their lease lapses", async () => {
      assert.ok(Number.isFinite(takeover.afterFirstAttemptMs), "the previous test measured the takeover");
      assert.ok(
        takeover.afterFirstAttemptMs < LEASE_MS + 3_000,
        `sent ${Math.round(takeover.afterFirstAttemptMs)} ms after the first attempt, ${Math.round(takeover.afterFirstAttemptMs - LEASE_MS)} ms after the lease lapsed`,
      );
    });

    /** What the SIGTERM test saw, for the test after it. */
    const shutdown = { abandonedId: "", exitedAfterMs: Number.NaN, copiesAfterSignal: Number.NaN };

    scaleTest(
      "SIGTERM lets an attempt under way finish, gives back the claim of one it abandons, and exits 0",
      async (t) => {
        const held: { delivery: ReceivedDelivery; res: ServerResponse; reused: boolean }[] = [];
        const served = new WeakSet<object>();
        const agent = await agentInChannel(survivor, ownerKey, "Graceful", sink.url);
        // One delivery answered at once leaves an idle pooled connection behind, as on any busy relay.
        answer = (delivery, res) => {
          if (res.socket) served.add(res.socket);
          ack(delivery, res);
        };
        const before = acked.length;
        await postMentions([survivor], ownerKey, agent.channelId, "Graceful", 1, 1);
        await until("the warm-up delivery", AT_ONCE_MS, () => (acked.length > before ? true : undefined));
        answer = (delivery, res) => {
          // A keep-alive connection that carried an earlier delivery: where a shutdown cuts an attempt short.
          const reused = res.socket !== null && served.has(res.socket);
          hung.push(res);
          held.push({ delivery, res, reused });
        };
        await postMentions([survivor], ownerKey, agent.channelId, "Graceful", 2, 2);
        await until("both attempts to be under way", AT_ONCE_MS, () => (held.length >= 2 ? true : undefined));
        // The one on the reused connection is left hanging: cutting that one short is the harder case.
        const abandoned = held.find((h) => h.reused) ?? (held[1] as (typeof held)[number]);
        const finishing = held.find((h) => h !== abandoned) as (typeof held)[number];
        shutdown.abandonedId = webhookId(abandoned.delivery);

        const signalled = performance.now();
        const deliveredBefore = sink.deliveries.length;
        survivor.child.kill("SIGTERM");
        await sleep(300);
        finishing.res.writeHead(204).end();
        const how = await Promise.race([
          survivor.exited,
          sleep(KILL_SHUTDOWN_GRACE_MS + 10_000).then(() => "still running"),
        ]);
        assert.equal(how, 0, `the relay exits 0 after SIGTERM:\n${survivor.output()}`);
        shutdown.exitedAfterMs = performance.now() - signalled;
        shutdown.copiesAfterSignal = sink.deliveries
          .slice(deliveredBefore)
          .filter((d) => webhookId(d) === shutdown.abandonedId).length;
        t.diagnostic(
          `exited ${Math.round(shutdown.exitedAfterMs)} ms after SIGTERM (grace period ${KILL_SHUTDOWN_GRACE_MS} ms); ` +
            `the abandoned attempt (${abandoned.reused ? "on a reused connection" : "on a new connection"}) was sent ${shutdown.copiesAfterSignal} more time(s) during shutdown`,
        );
        assert.match(survivor.output(), /SIGTERM received/);

        const rows = await query<{
          id: string;
          status: string;
          attempts: number;
          claimed: number;
          next_attempt_at: string | null;
        }>(databaseUrl, "select id, status, attempts, claimed, next_attempt_at from events where id = any($1)", [
          [webhookId(finishing.delivery), shutdown.abandonedId],
        ]);
        const byId = new Map(rows.map((r) => [r.id, r]));
        assert.equal(
          byId.get(webhookId(finishing.delivery))?.status,
          "delivered",
          "the attempt answered during the grace period was recorded",
        );
        const left = byId.get(shutdown.abandonedId);
        assert.ok(left);
        assert.deepEqual(
          { status: left.status, attempts: Number(left.attempts) },
          { status: "pending", attempts: 0 },
          "the attempt cut short is not counted against the agent",
        );
        const dueInMs = left.next_attempt_at === null ? Number.NaN : Date.parse(left.next_attempt_at) - Date.now();
        assert.ok(
          Number(left.claimed) === 0 && dueInMs <= 0,
          `the claim is given back so another relay sends it at once (claimed=${left.claimed}, due in ${Math.round(dueInMs)} ms)`,
        );
      },
    );

    scaleTest(
      "SIGTERM cuts a hung attempt short at the end of the grace period: no second copy reaches the agent, and the relay does not wait for the webhook timeout",
      async () => {
        assert.notEqual(shutdown.abandonedId, "", "the previous test abandoned an attempt");
        assert.equal(shutdown.copiesAfterSignal, 0, "the abandoned attempt was sent again while the relay shut down");
        assert.ok(
          shutdown.exitedAfterMs < KILL_SHUTDOWN_GRACE_MS + 2_000,
          `exited ${Math.round(shutdown.exitedAfterMs)} ms after SIGTERM: the grace period is ${KILL_SHUTDOWN_GRACE_MS} ms, the webhook timeout ${KILL_WEBHOOK_TIMEOUT_MS} ms`,
        );
      },
    );
  });
});
