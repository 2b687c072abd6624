import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import WebSocket from "ws";
import { initWorkspace } from "../../relay/src/workspace/init";
import { errorOf, startTestRelay, type TestRelay } from "../support/relayHarness";
import { addMember, createAgent, createChannel, createDm, createUser, postMessage } from "../support/workspace";

interface SignedIn {
  cookie: string;
  csrf: string;
  setCookie: string;
}

async function signIn(relay: TestRelay, apiKey: string): Promise<SignedIn> {
  const response = await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: apiKey } });
  assert.equal(response.status, 201, await response.clone().text());
  const setCookie = response.headers.get("set-cookie") ?? "";
  const { data } = (await response.json()) as { data: { csrf_token: string } };
  return { cookie: setCookie.split(";")[0] as string, csrf: data.csrf_token, setCookie };
}

function withSession(relay: TestRelay, session: SignedIn, path: string, init: RequestInit & { json?: unknown; csrf?: string | null } = {}) {
  const { csrf, headers, ...rest } = init;
  const h = new Headers(headers);
  h.set("Cookie", session.cookie);
  const token = csrf === undefined ? session.csrf : csrf;
  if (token !== null) h.set("X-CSRF-Token", token);
  return relay.request(path, { ...rest, headers: h, key: null });
}

interface Live {
  frames: { type: string; message?: { id: string; text: string }; conversation?: { id: string } }[];
  socket: WebSocket;
  close(): void;
}

async function openLive(relay: TestRelay, session: SignedIn): Promise<Live> {
  const socket = new WebSocket(`${relay.url.replace("http", "ws")}/api/v1/live`, { headers: { cookie: session.cookie, origin: relay.url } });
  const frames: Live["frames"] = [];
  socket.on("message", (data) => frames.push(JSON.parse(String(data)) as Live["frames"][number]));
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  return { frames, socket, close: () => socket.close() };
}

/** The status a refused WebSocket handshake answered with. */
function refusedWith(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once("unexpected-response", (_req, res) => {
      resolve(res.statusCode ?? 0);
      socket.terminate();
    });
    socket.once("open", () => reject(new Error("the handshake was accepted")));
    socket.once("error", () => undefined);
  });
}

const until = async (check: () => boolean, ms = 2000) => {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe("console sessions", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_RATE_LIMITS: "session_reads=5,session_writes=3", TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true" } });
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
    const { data } = (await current.json()) as { data: { user: { name: string }; csrf_token: string } };
    assert.equal(data.user.name, "Olive Owner");
    assert.equal(data.csrf_token, session.csrf);
  });

  test("a wrong key does not sign in", async () => {
    const response = await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: "svc_ws_nope" } });
    assert.equal(response.status, 401);
    assert.match((await errorOf(response)).message, /api_key/);
    assert.equal(response.headers.get("set-cookie"), null);
  });

  test("writes with a session need the CSRF token; reads do not", async () => {
    const session = await signIn(relay, relay.apiKey);
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
    const session = await signIn(relay, relay.apiKey);
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 6; i++) {
      last = await withSession(relay, session, "/api/v1/me");
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    assert.equal(last?.headers.get("x-ratelimit-limit"), "5");
    assert.ok(Number(last?.headers.get("retry-after")) >= 1);
    // A key's own limits are separate from its session's.
    assert.equal((await relay.request("/api/v1/me")).status, 200);
  });

  test("signing out ends the session at once", async () => {
    const session = await signIn(relay, relay.apiKey);
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
    const me = (await (await relay.request("/api/v1/me", { key: person.key })).json()) as { data: { key: { id: string } } };
    assert.equal((await relay.request(`/api/v1/api-keys/${me.data.key.id}`, { method: "DELETE", key: person.key })).status, 200);
    assert.equal((await withSession(relay, session, "/api/v1/me")).status, 401);
  });
});

describe("live updates", () => {
  let relay: TestRelay;
  let other: { apiKey: string };
  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000", TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true" } });
    other = await initWorkspace(relay.relay.store, { now: () => Date.now() }, { slug: "elsewhere", ownerName: "Otto Other" });
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
      await new Promise((resolve) => setTimeout(resolve, 150));
      const seen = (live: Live) => live.frames.filter((f) => f.type === "message.created").map((f) => f.message?.id);
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
      const posted = await relay.request(`/api/v1/agent-api/conversations/channel/${room.id}/messages`, { method: "POST", key: agent.token, json: { text: "from the agent" } });
      assert.equal(posted.status, 201);
      await until(() => live.frames.some((f) => f.message?.text === "from the agent"));
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
    assert.equal(await refusedWith(`${relay.url.replace("http", "ws")}/api/v1/live`, { cookie: session.cookie, origin: relay.url }), 401);
  });
});
