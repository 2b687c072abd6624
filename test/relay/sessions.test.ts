import assert from "node:assert/strict";
import { EventEmitter, once } from "node:events";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import SqliteDatabase from "better-sqlite3";
import WebSocket from "ws";
import type { ApiKeyCreated, DataBody, LiveEvent, Me, Session } from "@tab-relay/shared/api";
import { initWorkspace } from "../../relay/src/workspace/init";
import { errorOf, startTestRelay, type TestRelay } from "../support/relayHarness";
import { addMember, createAgent, createChannel, createDm, createUser, postMessage } from "../support/workspace";

interface SignedIn {
  cookie: string;
  csrf: string;
  setCookie: string;
  /** The session token alone, to present under another cookie name. */
  token: string;
}

async function signIn(relay: TestRelay, apiKey: string): Promise<SignedIn> {
  const response = await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: apiKey } });
  assert.equal(response.status, 201, await response.clone().text());
  const setCookie = response.headers.get("set-cookie") ?? "";
  const { data } = (await response.json()) as DataBody<Session>;
  const cookie = setCookie.split(";")[0] as string;
  return { cookie, csrf: data.csrf_token, setCookie, token: cookie.slice(cookie.indexOf("=") + 1) };
}

function withSession(
  relay: TestRelay,
  session: Pick<SignedIn, "cookie" | "csrf">,
  path: string,
  init: RequestInit & { json?: unknown; csrf?: string | null } = {},
) {
  const { csrf, headers, ...rest } = init;
  const h = new Headers(headers);
  h.set("Cookie", session.cookie);
  const token = csrf === undefined ? session.csrf : csrf;
  if (token !== null) h.set("X-CSRF-Token", token);
  return relay.request(path, { ...rest, headers: h, key: null });
}

/** A new key of the holder of `ownerKey`, with exactly `scopes`. */
async function keyWith(relay: TestRelay, ownerKey: string, scopes: string[]): Promise<string> {
  const response = await relay.request("/api/v1/api-keys", {
    method: "POST",
    key: ownerKey,
    json: { name: scopes.join("+"), scopes },
  });
  assert.equal(response.status, 201, await response.clone().text());
  return ((await response.json()) as DataBody<ApiKeyCreated>).data.secret;
}

interface Live {
  frames: LiveEvent[];
  socket: WebSocket;
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
  /** Resolves once `count` more of the relay's pings (one per live check) have arrived. */
  pings(count: number): Promise<void>;
}

/** Every live socket says here when a frame arrives, so `until` re-checks then instead of polling. */
const arrivals = new EventEmitter();
arrivals.setMaxListeners(0);

function liveUrl(relay: TestRelay): string {
  return `${relay.url.replace("http", "ws")}/api/v1/live`;
}

async function openLive(relay: TestRelay, session: Pick<SignedIn, "cookie">): Promise<Live> {
  const socket = new WebSocket(liveUrl(relay), { headers: { cookie: session.cookie, origin: relay.url } });
  const frames: Live["frames"] = [];
  socket.on("message", (data) => {
    frames.push(JSON.parse(String(data)) as LiveEvent);
    arrivals.emit("frame");
  });
  const pings = async (count: number) => {
    const deadline = AbortSignal.timeout(3000);
    for (let i = 0; i < count; i++) await once(socket, "ping", { signal: deadline });
  };
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on("close", (code, reason) => resolve({ code, reason: String(reason) })),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  return { frames, socket, closed, close: () => socket.close(), pings };
}

interface Refusal {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  error: { code: string; message: string };
}

/** The answer to a WebSocket handshake the relay refuses; fails if it is accepted. */
function refusal(url: string, headers: Record<string, string>): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once("unexpected-response", (_req, res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        socket.terminate();
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { error: Refusal["error"] };
        resolve({ status: res.statusCode ?? 0, headers: res.headers, error: body.error });
      });
    });
    socket.once("open", () => {
      socket.terminate();
      reject(new Error("the handshake was accepted"));
    });
    socket.once("error", () => undefined);
  });
}

/** The status a refused WebSocket handshake answered with. */
async function refusedWith(url: string, headers: Record<string, string>): Promise<number> {
  return (await refusal(url, headers)).status;
}

const until = async (check: () => boolean, ms = 2000) => {
  const deadline = AbortSignal.timeout(ms);
  while (!check()) await once(arrivals, "frame", { signal: deadline });
};

/**
 * Resolves once every frame the relay had sent these sockets has arrived: each has since had two of the relay's pings,
 * which travel behind anything sent before them on the same connection. The second one was sent a whole live check
 * after the first (which arrived after now), so it left after whatever the relay sent before now.
 */
const drained = (...lives: Live[]) => Promise.all(lives.map((live) => live.pings(2)));

const seen = <T extends LiveEvent["type"]>(live: Live, type: T) =>
  live.frames.filter((f): f is Extract<LiveEvent, { type: T }> => f.type === type);

/** How the relay closed a live socket, failing after `ms` if it never does. */
async function closedWithin(live: Live, ms = 3000): Promise<{ code: number; reason: string }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the live socket was still open after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([live.closed, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe("console sessions", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({
      env: { TAB_RELAY_RATE_LIMITS: "session_reads=5,session_writes=3", TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true" },
    });
  });
  after(() => relay.close());

  test("signing in with an API key sets an HttpOnly, SameSite=Strict cookie and answers who is signed in", async () => {
    const session = await signIn(relay, relay.apiKey);
    assert.match(session.setCookie, /^tab_session=[A-Za-z0-9_-]{40,}; /);
    assert.match(session.setCookie, /; HttpOnly/);
    assert.match(session.setCookie, /; SameSite=Strict/);
    assert.match(session.setCookie, /; Path=\//);
    assert.doesNotMatch(session.setCookie, /Secure/, "not over plain http");
    assert.ok(!session.setCookie.includes(relay.apiKey));
    const current = await withSession(relay, session, "/api/v1/sessions/current");
    assert.equal(current.status, 200);
    const { data } = (await current.json()) as DataBody<Session>;
    assert.equal(data.user.name, "Olive Owner");
    assert.equal(data.csrf_token, session.csrf);
  });

  test("a wrong or revoked key does not sign in, and is told so in the words the API uses for it as a bearer key", async () => {
    const made = await relay.request("/api/v1/api-keys", {
      method: "POST",
      json: { name: "soon revoked", scopes: ["messages.read"] },
    });
    const { id, secret } = ((await made.json()) as DataBody<ApiKeyCreated>).data;
    assert.equal((await relay.request(`/api/v1/api-keys/${id}`, { method: "DELETE" })).status, 200);
    const cases = [
      ["svc_ws_nope", "API key not recognised: it is not a key of this relay (check it was copied whole)"],
      [secret, "This API key has been revoked"],
    ] as const;
    for (const [key, message] of cases) {
      const response = await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: key } });
      assert.equal(response.status, 401);
      assert.deepEqual(await errorOf(response), { code: "UNAUTHORIZED", message });
      assert.equal(response.headers.get("set-cookie"), null);
      const asBearer = await relay.request("/api/v1/me", { key });
      assert.equal(asBearer.status, 401);
      assert.equal((await errorOf(asBearer)).message, message);
    }
  });

  test("writes with a session need the CSRF token; reads do not", async () => {
    const person = await createUser(relay, "Cora Csrf", "member");
    const session = await signIn(relay, person.key);
    const body = { json: { name: "csrf-check" }, method: "POST" };
    const without = await withSession(relay, session, "/api/v1/channels", { ...body, csrf: null });
    assert.equal(without.status, 403);
    assert.match((await errorOf(without)).message, /CSRF/);
    const wrong = await withSession(relay, session, "/api/v1/channels", { ...body, csrf: "x".repeat(43) });
    assert.equal(wrong.status, 403);
    const right = await withSession(relay, session, "/api/v1/channels", body);
    assert.equal(right.status, 201);
    assert.equal((await withSession(relay, session, "/api/v1/conversations", { csrf: null })).status, 200);
  });

  test("session requests have the session limits and headers: 5 reads here, then 429", async () => {
    const person = await createUser(relay, "Lena Limited", "member");
    const session = await signIn(relay, person.key);
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 6; i++) {
      last = await withSession(relay, session, "/api/v1/me");
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    assert.equal(last?.headers.get("x-ratelimit-limit"), "5");
    assert.ok(Number(last?.headers.get("retry-after")) >= 1);
    // A key's own limits are separate from its sessions'.
    assert.equal((await relay.request("/api/v1/me", { key: person.key })).status, 200);
  });

  test("sessions made from one key share its counters: three sessions get 5 reads in all, not 15", async () => {
    const person = await createUser(relay, "Tess Triple", "member");
    const sessions = [
      await signIn(relay, person.key),
      await signIn(relay, person.key),
      await signIn(relay, person.key),
    ];
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++)
      statuses.push((await withSession(relay, sessions[i % 3] as SignedIn, "/api/v1/me")).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429, 429]);
    // A fresh sign-in buys nothing either.
    const fourth = await withSession(relay, await signIn(relay, person.key), "/api/v1/me");
    assert.equal(fourth.status, 429);
    assert.equal(fourth.headers.get("x-ratelimit-remaining"), "0");
    // Another key of the same person has counters of its own.
    const other = await keyWith(relay, person.key, ["messages.read"]);
    assert.equal((await withSession(relay, await signIn(relay, other), "/api/v1/me")).status, 200);
  });

  test("a key holding none of the console's scopes (an editor's tab.complete key) cannot sign in: 403 naming them", async () => {
    const editorKey = await keyWith(relay, relay.apiKey, ["tab.complete"]);
    const response = await relay.request("/api/v1/sessions", {
      method: "POST",
      key: null,
      json: { api_key: editorKey },
    });
    assert.equal(response.status, 403);
    assert.equal(response.headers.get("set-cookie"), null);
    const error = await errorOf(response);
    assert.equal(error.code, "FORBIDDEN");
    assert.match(error.message, /^api_key: /);
    assert.match(error.message, /editor/);
    for (const scope of ["messages.read", "agents.read", "keys.write", "users.write"])
      assert.ok(error.message.includes(scope), error.message);
    // The same key still serves the editor.
    assert.equal((await relay.request("/api/v1/me", { key: editorKey })).status, 200);
    // Any one of the console's scopes is enough to sign in.
    for (const scope of ["messages.read", "agents.read", "keys.write", "users.write"]) {
      await signIn(relay, await keyWith(relay, relay.apiKey, ["tab.complete", scope]));
    }
  });

  test("under plain http the cookie is tab_session, and a __Host- cookie is not read", async () => {
    const person = await createUser(relay, "Hugo Http", "member");
    const session = await signIn(relay, person.key);
    assert.match(session.cookie, /^tab_session=/);
    const prefixed = { cookie: `__Host-tab_session=${session.token}`, csrf: session.csrf };
    assert.equal((await withSession(relay, prefixed, "/api/v1/me")).status, 401);
    assert.equal(await refusedWith(liveUrl(relay), { cookie: prefixed.cookie, origin: relay.url }), 401);
  });

  test("signing out ends the session at once", async () => {
    const person = await createUser(relay, "Otis Out", "member");
    const session = await signIn(relay, person.key);
    const out = await withSession(relay, session, "/api/v1/sessions/current", { method: "DELETE" });
    assert.equal(out.status, 200);
    assert.match(out.headers.get("set-cookie") ?? "", /tab_session=; .*Max-Age=0/);
    const after_ = await withSession(relay, session, "/api/v1/me");
    assert.equal(after_.status, 401);
  });

  test("revoking the key a session was made from ends the session", async () => {
    const person = await createUser(relay, "Rita Revoked", "member");
    const session = await signIn(relay, person.key);
    assert.equal((await withSession(relay, session, "/api/v1/me")).status, 200);
    const me = (await (await relay.request("/api/v1/me", { key: person.key })).json()) as DataBody<Me>;
    assert.equal(
      (await relay.request(`/api/v1/api-keys/${me.data.key.id}`, { method: "DELETE", key: person.key })).status,
      200,
    );
    assert.equal((await withSession(relay, session, "/api/v1/me")).status, 401);
  });
});

/** The live sessions' recheck interval in these tests, instead of 15 s. */
const CHECK_MS = 100;

/** Changes a person's role in the relay's SQLite file, as an operator would: the API has no way to yet. */
function setRole(relay: TestRelay, userId: string, role: string): void {
  const db = new SqliteDatabase(join(relay.dataDir, "relay.db"));
  try {
    db.pragma("busy_timeout = 5000");
    db.prepare("update users set role = ? where id = ?").run(role, userId);
  } finally {
    db.close();
  }
}

describe("live updates", () => {
  let relay: TestRelay;
  let other: { apiKey: string };
  before(async () => {
    relay = await startTestRelay({
      env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000", TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true" },
      timings: { liveCheckMs: CHECK_MS },
    });
    other = await initWorkspace(
      relay.relay.store,
      { now: () => Date.now() },
      { slug: "elsewhere", ownerName: "Otto Other" },
    );
  });
  after(() => relay.close());

  test("each message reaches the live connections of exactly the people who may see it", async () => {
    const member = await createUser(relay, "Mia Member", "member");
    const guest = await createUser(relay, "Gus Guest", "guest");
    const outsider = await createUser(relay, "Oscar Outside", "member");
    const lounge = await createChannel(relay, "lounge", "public");
    const secret = await createChannel(relay, "secret", "private");
    await addMember(relay, secret.id, { user_id: member.id });
    const dm = await createDm(relay, [member.id]);
    const owner = await openLive(relay, await signIn(relay, relay.apiKey));
    const mia = await openLive(relay, await signIn(relay, member.key));
    const gus = await openLive(relay, await signIn(relay, guest.key));
    const oscar = await openLive(relay, await signIn(relay, outsider.key));
    const otto = await openLive(relay, await signIn(relay, other.apiKey));
    try {
      const inLounge = await postMessage(relay, lounge, "public news");
      const inSecret = await postMessage(relay, secret, "private news");
      const inDm = await postMessage(relay, dm, "just for Mia");
      await until(() => mia.frames.filter((f) => f.type === "message.created").length === 3);
      await drained(owner, mia, gus, oscar, otto);
      const seen = (live: Live) => live.frames.filter((f) => f.type === "message.created").map((f) => f.message.id);
      assert.deepEqual(seen(mia), [inLounge.id, inSecret.id, inDm.id]);
      assert.deepEqual(seen(owner), [inLounge.id, inSecret.id, inDm.id]);
      assert.deepEqual(seen(oscar), [inLounge.id], "a public channel, nothing private");
      assert.deepEqual(seen(gus), [], "guests see only conversations they are in");
      assert.deepEqual(seen(otto), [], "nothing crosses workspaces");
      assert.equal(mia.frames[0]?.type, "hello");
    } finally {
      for (const live of [owner, mia, gus, oscar, otto]) live.close();
    }
  });

  test("an agent's reply appears live", async () => {
    const room = await createChannel(relay, "agent-room", "public");
    const agent = await createAgent(relay, { name: "Replier" });
    await addMember(relay, room.id, { agent_id: agent.agent.id });
    const live = await openLive(relay, await signIn(relay, relay.apiKey));
    try {
      const posted = await relay.request(`/api/v1/agent-api/conversations/channel/${room.id}/messages`, {
        method: "POST",
        key: agent.token,
        json: { text: "from the agent" },
      });
      assert.equal(posted.status, 201);
      await until(() => live.frames.some((f) => f.type === "message.created" && f.message.text === "from the agent"));
    } finally {
      live.close();
    }
  });

  test("the live socket needs a session, from a page of this relay", async () => {
    const url = `${relay.url.replace("http", "ws")}/api/v1/live`;
    assert.equal(await refusedWith(url, {}), 401);
    assert.equal(await refusedWith(url, { cookie: "tab_session=forged" }), 401);
    const session = await signIn(relay, relay.apiKey);
    assert.equal(await refusedWith(url, { cookie: session.cookie, origin: "https://evil.example" }), 403);
  });

  test("signing out closes nothing the person did not open, and a signed-out cookie cannot listen", async () => {
    const session = await signIn(relay, relay.apiKey);
    assert.equal((await withSession(relay, session, "/api/v1/sessions/current", { method: "DELETE" })).status, 200);
    assert.equal(
      await refusedWith(`${relay.url.replace("http", "ws")}/api/v1/live`, {
        cookie: session.cookie,
        origin: relay.url,
      }),
      401,
    );
  });

  test("messages go only to sessions holding messages.read and agent changes only to those holding agents.read", async () => {
    const person = await createUser(relay, "Sasha Scoped", "member");
    const agentsOnly = await openLive(relay, await signIn(relay, await keyWith(relay, person.key, ["agents.read"])));
    const messagesOnly = await openLive(
      relay,
      await signIn(relay, await keyWith(relay, person.key, ["messages.read"])),
    );
    const owner = await openLive(relay, await signIn(relay, relay.apiKey));
    try {
      const channel = await createChannel(relay, "scoped-public", "public");
      const posted = await postMessage(relay, channel, "everyone in the workspace may read this");
      const agent = await createAgent(relay, { name: "ScopeWatcher" });
      // The owner's socket sees both, so once it has, the others have had their chance too.
      await until(
        () =>
          seen(owner, "message.created").some((f) => f.message?.id === posted.id) &&
          seen(owner, "agent.updated").some((f) => f.agent_id === agent.agent.id),
      );
      await until(
        () => seen(messagesOnly, "message.created").length === 1 && seen(agentsOnly, "agent.updated").length >= 1,
      );
      await drained(agentsOnly, messagesOnly);
      assert.deepEqual(
        seen(agentsOnly, "message.created"),
        [],
        "agents.read alone never carries a message, even a public one",
      );
      assert.deepEqual(seen(messagesOnly, "agent.updated"), []);
      assert.equal(seen(messagesOnly, "message.created")[0]?.message?.id, posted.id);
      assert.ok(seen(agentsOnly, "agent.updated").some((f) => f.agent_id === agent.agent.id));
    } finally {
      for (const live of [agentsOnly, messagesOnly, owner]) live.close();
    }
  });

  test("a session whose key holds neither messages.read nor agents.read signs in but cannot open the live socket (403)", async () => {
    const person = await createUser(relay, "Kim Keys", "member");
    const session = await signIn(relay, await keyWith(relay, person.key, ["keys.write"]));
    const refused = await refusal(liveUrl(relay), { cookie: session.cookie, origin: relay.url });
    assert.deepEqual([refused.status, refused.error.code], [403, "FORBIDDEN"]);
    assert.match(refused.error.message, /messages\.read/);
    assert.match(refused.error.message, /agents\.read/);
  });

  test("each recheck follows the session: a changed role changes the frames, losing both scopes closes with 4003, signing out with 4001", async () => {
    const dora = await createUser(relay, "Dora Demoted", "member");
    const ada = await createUser(relay, "Ada AgentsOnly", "member");
    const otis = await createUser(relay, "Otis Out", "member");
    const doraLive = await openLive(
      relay,
      await signIn(relay, await keyWith(relay, dora.key, ["messages.read", "agents.read"])),
    );
    const adaLive = await openLive(relay, await signIn(relay, await keyWith(relay, ada.key, ["agents.read"])));
    const otisSession = await signIn(relay, otis.key);
    const otisLive = await openLive(relay, otisSession);
    const owner = await openLive(relay, await signIn(relay, relay.apiKey));
    try {
      // Guests hold no agents.read and see only conversations they are in.
      setRole(relay, dora.id, "guest");
      setRole(relay, ada.id, "guest");
      // Any write through the relay makes its SQLite store forget the key owners it remembered.
      const channel = await createChannel(relay, "after-demotion", "public");
      assert.deepEqual(await closedWithin(adaLive), {
        code: 4003,
        reason: "live updates need messages.read or agents.read",
      });
      // Three live checks, each one asked the session again.
      await doraLive.pings(3);
      assert.equal(doraLive.socket.readyState, WebSocket.OPEN, "messages.read is left, so the socket stays");
      const posted = await postMessage(relay, channel, "not for guests outside the channel");
      const agent = await createAgent(relay, { name: "AfterDemotion" });
      await until(
        () =>
          seen(owner, "message.created").some((f) => f.message?.id === posted.id) &&
          seen(owner, "agent.updated").some((f) => f.agent_id === agent.agent.id),
      );
      await drained(doraLive);
      assert.deepEqual(seen(doraLive, "message.created"), [], "a guest now, outside the public channel");
      assert.ok(
        !seen(doraLive, "agent.updated").some((f) => f.agent_id === agent.agent.id),
        "no agents.read as a guest",
      );

      assert.equal(
        (await withSession(relay, otisSession, "/api/v1/sessions/current", { method: "DELETE" })).status,
        200,
      );
      assert.deepEqual(await closedWithin(otisLive), { code: 4001, reason: "session ended" });
    } finally {
      for (const live of [doraLive, adaLive, otisLive, owner]) live.close();
    }
  });

  test("signing in past 10 live sessions of one key ends its oldest, whose live socket then closes", async () => {
    const person = await createUser(relay, "Cap Person", "member");
    const first = await signIn(relay, person.key);
    const firstLive = await openLive(relay, first);
    try {
      const later: SignedIn[] = [];
      for (let i = 0; i < 9; i++) later.push(await signIn(relay, person.key));
      assert.equal((await withSession(relay, first, "/api/v1/me")).status, 200, "ten sessions are within the cap");
      later.push(await signIn(relay, person.key));
      assert.equal((await withSession(relay, first, "/api/v1/me")).status, 401);
      for (const session of later) assert.equal((await withSession(relay, session, "/api/v1/me")).status, 200);
      assert.deepEqual(await closedWithin(firstLive), { code: 4001, reason: "session ended" });
    } finally {
      firstLive.close();
    }
  });

  test("a key holds at most 10 live sockets on a relay: the 11th upgrade is refused with 429 until one closes", async () => {
    const person = await createUser(relay, "Tabs Many", "member");
    const session = await signIn(relay, person.key);
    const open: Live[] = [];
    try {
      for (let i = 0; i < 10; i++) open.push(await openLive(relay, session));
      const refused = await refusal(liveUrl(relay), { cookie: session.cookie, origin: relay.url });
      assert.deepEqual([refused.status, refused.error.code], [429, "RATE_LIMIT_EXCEEDED"]);
      assert.match(refused.error.message, /10 live connections/);
      // Another session of the same key counts against the same key.
      const again = await signIn(relay, person.key);
      assert.equal(await refusedWith(liveUrl(relay), { cookie: again.cookie, origin: relay.url }), 429);
      // Other people are not affected.
      const someone = await createUser(relay, "Someone Else", "member");
      open.push(await openLive(relay, await signIn(relay, someone.key)));
      const closing = open.shift() as Live;
      closing.close();
      await closing.closed;
      await sleep(50);
      open.push(await openLive(relay, session));
    } finally {
      for (const live of open) live.close();
    }
  });
});

describe("WebSocket upgrades count against the rate limits", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_RATE_LIMITS: "reads=3,session_reads=3" } });
  });
  after(() => relay.close());

  test("a live upgrade is a read of its key's sessions: the fourth is refused with 429, Retry-After and X-RateLimit-* headers", async () => {
    const person = await createUser(relay, "Ursula Upgrades", "member");
    const session = await signIn(relay, person.key);
    for (let i = 0; i < 3; i++) {
      const live = await openLive(relay, session);
      live.close();
      await live.closed;
    }
    const refused = await refusal(liveUrl(relay), { cookie: session.cookie, origin: relay.url });
    assert.deepEqual([refused.status, refused.error.code], [429, "RATE_LIMIT_EXCEEDED"]);
    assert.ok(Number(refused.headers["retry-after"]) >= 1);
    assert.equal(refused.headers["x-ratelimit-limit"], "3");
    assert.equal(refused.headers["x-ratelimit-remaining"], "0");
    assert.ok(Number(refused.headers["x-ratelimit-reset"]) * 1000 > Date.now());
    // The same counters as the key's session requests, from any of its sessions.
    assert.equal((await withSession(relay, session, "/api/v1/me")).status, 429);
    assert.equal(
      await refusedWith(liveUrl(relay), { cookie: (await signIn(relay, person.key)).cookie, origin: relay.url }),
      429,
    );
  });

  test("an upgrade whose cookie names no session counts against the client's address", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push(await refusedWith(liveUrl(relay), { cookie: "tab_session=forged", origin: relay.url }));
    assert.deepEqual(statuses, [401, 401, 401, 429]);
    // An unauthenticated HTTP read from the same address shares the counter.
    assert.equal((await relay.request("/api/v1/me", { key: null })).status, 429);
  });
});

describe("the session cookie under an https public URL", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_PUBLIC_URL: "https://relay.example" } });
  });
  after(() => relay.close());

  test("is __Host-tab_session with Secure, Path=/ and no Domain, and only that name is read, by the API and the live socket", async () => {
    const session = await signIn(relay, relay.apiKey);
    assert.match(session.setCookie, /^__Host-tab_session=[A-Za-z0-9_-]{40,}; /);
    assert.match(session.setCookie, /; Secure(;|$)/);
    assert.match(session.setCookie, /; Path=\/(;|$)/);
    assert.match(session.setCookie, /; HttpOnly/);
    assert.doesNotMatch(session.setCookie, /Domain/i);
    assert.equal((await withSession(relay, session, "/api/v1/me")).status, 200);
    const plain = { cookie: `tab_session=${session.token}`, csrf: session.csrf };
    assert.equal((await withSession(relay, plain, "/api/v1/me")).status, 401);
    assert.equal(await refusedWith(liveUrl(relay), { cookie: plain.cookie, origin: relay.url }), 401);
    const live = await openLive(relay, session);
    await until(() => live.frames.length > 0);
    assert.equal(live.frames[0]?.type, "hello");
    live.close();
    const out = await withSession(relay, session, "/api/v1/sessions/current", { method: "DELETE" });
    assert.equal(out.status, 200);
    assert.match(out.headers.get("set-cookie") ?? "", /^__Host-tab_session=; .*Max-Age=0.*; Secure/);
  });
});
