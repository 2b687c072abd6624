import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, test, type TestContext } from "node:test";
import WebSocket from "ws";
import type { AgentCreated, DataBody, Session } from "@tab-relay/shared/api";
import { LIVE_CLOSE, MAX_LIVE_SOCKETS_PER_KEY } from "../../relay/src/live/hub";
import { MAX_SOCKETS_PER_AGENT } from "../../relay/src/live/agentSockets";
import { type TestRelay, startTestRelay } from "../support/relayHarness";
import { REDIS_URL, createDatabase, dropDatabases, servicesProblem } from "../support/scaleOutServices";
import { createUser } from "../support/workspace";

/**
 * Two relays in this process on one fresh PostgreSQL database and the local Redis, each with its own bus connection
 * (LISTEN/NOTIFY) and Redis client, as two processes behind a load balancer would have: what one relay is told must
 * reach the sockets held by the other, and the per-key and per-agent socket caps count the sockets of both.
 */

/** So long that the periodic recheck of live sessions never runs during a test: whatever closes a socket is the event. */
const NO_PERIODIC_CHECK_MS = 10 * 60_000;
/** "At once", on a machine shared with other test runs: far below any periodic check, above a loaded NOTIFY round trip. */
const AT_ONCE_MS = 1_500;

const problem = await servicesProblem();
if (problem) console.error(`\n*** SKIPPED: ${problem}: the two-relay socket tests did not run ***\n`);

const relays: TestRelay[] = [];
const databases: string[] = [];
const opened = new Set<WebSocket>();

before(async () => {
  if (problem) return;
  const database = await createDatabase("tab_relay_sockets");
  databases.push(database.name);
  const env = {
    TAB_RELAY_DATABASE_URL: database.url,
    TAB_RELAY_REDIS_URL: REDIS_URL,
    TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000,session_reads=100000,session_writes=100000,agent_reads=100000",
  };
  const timings = { liveCheckMs: NO_PERIODIC_CHECK_MS };
  const first = await startTestRelay({ env, timings });
  relays.push(first);
  relays.push(await startTestRelay({ env, timings, join: first }));
});

after(async () => {
  for (const ws of opened) ws.terminate();
  await Promise.all(relays.map((relay) => relay.close()));
  await dropDatabases(databases);
});

function twoRelays(t: TestContext): [TestRelay, TestRelay] | undefined {
  if (problem) {
    t.skip(problem);
    return undefined;
  }
  return relays as [TestRelay, TestRelay];
}

interface SignedIn {
  cookie: string;
  csrf: string;
}

async function signIn(relay: TestRelay, apiKey: string): Promise<SignedIn> {
  const response = await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: apiKey } });
  assert.equal(response.status, 201, await response.clone().text());
  const { data } = (await response.json()) as DataBody<Session>;
  return { cookie: (response.headers.get("set-cookie") ?? "").split(";")[0] as string, csrf: data.csrf_token };
}

interface Open {
  ws: WebSocket;
  closed: Promise<{ code: number; reason: string; at: number }>;
}

/** A WebSocket the relay accepted (its hello frame arrived). */
async function open(url: string, headers: Record<string, string>): Promise<Open> {
  const ws = new WebSocket(url, { headers });
  opened.add(ws);
  const closed = new Promise<{ code: number; reason: string; at: number }>((resolve) =>
    ws.on("close", (code, reason) => {
      opened.delete(ws);
      resolve({ code, reason: String(reason), at: performance.now() });
    }),
  );
  const hello = once(ws, "message");
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
    ws.once("unexpected-response", (_req, res) => reject(new Error(`the upgrade was refused with ${res.statusCode}`)));
  });
  await hello;
  return { ws, closed };
}

const openLive = (relay: TestRelay, session: SignedIn) =>
  open(`${relay.url.replace(/^http/, "ws")}/api/v1/live`, { cookie: session.cookie, origin: relay.url });

const openAgentSocket = (relay: TestRelay, token: string) =>
  open(`${relay.url.replace(/^http/, "ws")}/api/v1/agent-api/socket`, { authorization: `Bearer ${token}` });

/** The status and error code of a refused handshake; fails if it is accepted. */
function refusedWith(url: string, headers: Record<string, string>): Promise<{ status: number; code: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once("unexpected-response", (_req, res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        ws.terminate();
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { error: { code: string } };
        resolve({ status: res.statusCode ?? 0, code: body.error.code });
      });
    });
    ws.once("open", () => {
      ws.terminate();
      reject(new Error(`the handshake to ${url} was accepted`));
    });
    ws.once("error", () => undefined);
  });
}

/** How long after `since` the socket closed, and how; fails if it is still open `ms` later. */
async function closedWithin(socket: Open, since: number, ms: number): Promise<{ code: number; afterMs: number }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the socket was still open ${ms} ms later`)), ms);
  });
  try {
    const { code, at } = await Promise.race([socket.closed, late]);
    return { code, afterMs: Math.round(at - since) };
  } finally {
    clearTimeout(timer);
  }
}

describe("a console session ended through one relay closes its live sockets on the other at once", () => {
  test("signing out through relay 1 closes the session's live socket on relay 2 with 4001; the key's other session stays", async (t) => {
    const pair = twoRelays(t);
    if (!pair) return;
    const [one, two] = pair;
    const person = await createUser(one, "Sam Signout", "member");
    const leaving = await signIn(two, person.key);
    const staying = await signIn(two, person.key);
    const leavingLive = await openLive(two, leaving);
    const stayingLive = await openLive(two, staying);

    const response = await one.request("/api/v1/sessions/current", {
      method: "DELETE",
      key: null,
      headers: { cookie: leaving.cookie, "x-csrf-token": leaving.csrf },
    });
    assert.equal(response.status, 200, await response.clone().text());
    const { code } = await closedWithin(leavingLive, performance.now(), AT_ONCE_MS);
    assert.equal(code, LIVE_CLOSE.ended.code);
    // The other session of the same key was rechecked too, in the same turn: it is still valid, so it stays.
    assert.equal((await two.request("/api/v1/me", { key: null, headers: { cookie: staying.cookie } })).status, 200);
    assert.equal(stayingLive.ws.readyState, WebSocket.OPEN, "a session that did not end keeps its socket");
    stayingLive.ws.close();
  });

  test("revoking a key through relay 1 closes the live sockets of its sessions on relay 2 with 4001", async (t) => {
    const pair = twoRelays(t);
    if (!pair) return;
    const [one, two] = pair;
    const person = await createUser(one, "Rae Revoked", "member");
    const me = (await (await one.request("/api/v1/me", { key: person.key })).json()) as DataBody<{
      key: { id: string };
    }>;
    const live = await openLive(two, await signIn(two, person.key));
    const bystander = await openLive(two, await signIn(two, one.apiKey));

    assert.equal((await one.request(`/api/v1/api-keys/${me.data.key.id}`, { method: "DELETE" })).status, 200);
    assert.equal((await closedWithin(live, performance.now(), AT_ONCE_MS)).code, LIVE_CLOSE.ended.code);
    assert.equal(bystander.ws.readyState, WebSocket.OPEN, "another person's socket is untouched");
    bystander.ws.close();
  });

  test("removing a person through relay 1 closes their live socket on relay 2 with 4001", async (t) => {
    const pair = twoRelays(t);
    if (!pair) return;
    const [one, two] = pair;
    const person = await createUser(one, "Rex Removed", "member");
    const live = await openLive(two, await signIn(two, person.key));
    assert.equal((await one.request(`/api/v1/users/${person.id}`, { method: "DELETE" })).status, 200);
    assert.equal((await closedWithin(live, performance.now(), AT_ONCE_MS)).code, LIVE_CLOSE.ended.code);
  });
});

describe("socket caps hold across relays sharing Redis", () => {
  test(`a key's ${MAX_LIVE_SOCKETS_PER_KEY} live sockets count on both relays: the next is refused with 429 on either until one closes`, async (t) => {
    const pair = twoRelays(t);
    if (!pair) return;
    const [one, two] = pair;
    const person = await createUser(one, "Tess Tabs", "member");
    const session = await signIn(one, person.key);
    const held: Open[] = [];
    for (let n = 0; n < MAX_LIVE_SOCKETS_PER_KEY; n++) held.push(await openLive(pair[n % 2] as TestRelay, session));
    for (const relay of [one, two]) {
      assert.deepEqual(
        await refusedWith(`${relay.url.replace(/^http/, "ws")}/api/v1/live`, {
          cookie: session.cookie,
          origin: relay.url,
        }),
        { status: 429, code: "RATE_LIMIT_EXCEEDED" },
        `the 11th live socket, on ${relay === one ? "relay 1" : "relay 2"}`,
      );
    }
    // A socket closed on relay 1 frees its place for relay 2.
    const leaving = held.shift() as Open;
    leaving.ws.close();
    await leaving.closed;
    held.push(await reopened(() => openLive(two, session)));
    for (const socket of held) socket.ws.close();
  });

  test(`an agent's ${MAX_SOCKETS_PER_AGENT} Socket Mode sockets count on both relays: the next is refused with 429 on either until one closes`, async (t) => {
    const pair = twoRelays(t);
    if (!pair) return;
    const [one, two] = pair;
    const created = await one.request("/api/v1/agents", { method: "POST", json: { name: "Capped" } });
    assert.equal(created.status, 201, await created.clone().text());
    const { token } = ((await created.json()) as DataBody<AgentCreated>).data;
    const held: Open[] = [];
    for (let n = 0; n < MAX_SOCKETS_PER_AGENT; n++) held.push(await openAgentSocket(pair[n % 2] as TestRelay, token));
    for (const relay of [one, two]) {
      assert.deepEqual(
        await refusedWith(`${relay.url.replace(/^http/, "ws")}/api/v1/agent-api/socket`, {
          authorization: `Bearer ${token}`,
        }),
        { status: 429, code: "RATE_LIMIT_EXCEEDED" },
        `the 11th agent socket, on ${relay === one ? "relay 1" : "relay 2"}`,
      );
    }
    const leaving = held.shift() as Open;
    leaving.ws.close();
    await leaving.closed;
    held.push(await reopened(() => openAgentSocket(two, token)));
    for (const socket of held) socket.ws.close();
  });
});

/**
 * The client sees the close before the relay has handled it (and given the place back): a refused retry right then is
 * the cap holding, so the open is retried for a short while.
 */
async function reopened(attempt: () => Promise<Open>): Promise<Open> {
  const deadline = performance.now() + AT_ONCE_MS;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (performance.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
