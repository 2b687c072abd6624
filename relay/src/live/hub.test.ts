import assert from "node:assert/strict";
import { EventEmitter, once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { FakeClock } from "@tab-relay/shared/testing";
import { WebSocket, WebSocketServer } from "ws";
import type { Scope } from "../auth/scopes";
import { createLinks } from "../links";
import { silentLogger } from "../logger";
import { openSqliteStore } from "../store/sqlite";
import type { Store, User } from "../store/types";
import { LIVE_CLOSE, type LiveViewer, createLiveHub } from "./hub";

const CHECK_MS = 1000;
const BOTH: ReadonlySet<Scope> = new Set(["messages.read", "agents.read"]);

/**
 * The live hub over real WebSockets, its checks on a FakeClock: each check is one `clock.advance(CHECK_MS)`, and
 * what the check does to a socket (a ping, a close) is awaited as the event it is.
 */
describe("the live hub's checks", () => {
  let store: Store;
  let user: User;
  const clock = new FakeClock(Date.parse("2026-11-21T12:00:00.000Z"));
  const server = createServer();
  const wss = new WebSocketServer({ server });
  let url = "";
  const hub = () =>
    createLiveHub({ store, links: createLinks("http://relay.test"), logger: silentLogger, clock, checkMs: CHECK_MS });
  let live: ReturnType<typeof hub>;
  /** What the hub's end of each connection heard: pongs, by the connection's key id. */
  const heard = new EventEmitter();
  /** How each key's session looks at the next recheck; a function so a test can make the recheck fail. */
  const sessions = new Map<string, () => Promise<LiveViewer | undefined>>();

  before(async () => {
    store = await openSqliteStore(":memory:");
    const at = new Date(clock.now()).toISOString();
    await store.workspaces.create({ id: "ws_1", slug: "acme", name: "Acme", createdAt: at });
    user = await store.users.create({ id: "usr_1", workspaceId: "ws_1", name: "Olive", role: "owner", createdAt: at });
    live = hub();
    wss.on("connection", (socket, request) => {
      const keyId = request.url?.slice(1) ?? "";
      socket.on("pong", () => heard.emit(`pong:${keyId}`));
      live.add({
        socket,
        user,
        scopes: BOTH,
        workspaceId: "ws_1",
        keyId,
        refresh: () => (sessions.get(keyId) ?? (async () => ({ user, scopes: BOTH })))(),
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    live.close();
    wss.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await store.close();
  });

  async function connect(keyId: string, options: { autoPong?: boolean } = {}) {
    const socket = new WebSocket(`${url}/${keyId}`, options);
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.on("close", (code, reason) => resolve({ code, reason: String(reason) })),
    );
    await once(socket, "message");
    return { socket, closed };
  }

  /** One check: the hub pings every connection; `answered` are the keys whose pong is awaited before going on. */
  async function check(...answered: string[]): Promise<void> {
    const pongs = answered.map((keyId) => once(heard, `pong:${keyId}`));
    await clock.advance(CHECK_MS);
    await Promise.all(pongs);
  }

  test("nothing happens between checks: the first ping comes when the check interval has passed on the hub's clock", async () => {
    const { socket } = await connect("key_idle");
    let pinged = false;
    socket.on("ping", () => (pinged = true));
    await clock.advance(CHECK_MS - 1);
    assert.equal(pinged, false);
    const ping = once(socket, "ping");
    await clock.advance(1);
    await ping;
    socket.close();
  });

  test("a connection that misses a ping is ended at the next check, one that answers stays", async () => {
    const silent = await connect("key_silent", { autoPong: false });
    const answering = await connect("key_answering");
    await check("key_answering");
    assert.equal(silent.socket.readyState, WebSocket.OPEN, "one missed ping is not yet a dead connection");
    await check("key_answering");
    assert.equal((await silent.closed).code, 1006, "terminated, without a closing handshake");
    await check("key_answering");
    assert.equal(answering.socket.readyState, WebSocket.OPEN);
    answering.socket.close();
  });

  test("a session that ended closes its connection with 4001 at the next check, not before", async () => {
    const { socket, closed } = await connect("key_ended");
    sessions.set("key_ended", async () => undefined);
    let done = false;
    void closed.then(() => (done = true));
    await clock.advance(CHECK_MS - 1);
    assert.equal(done, false);
    await clock.advance(1);
    assert.deepEqual(await closed, LIVE_CLOSE.ended);
    assert.equal(socket.readyState, WebSocket.CLOSED);
  });

  test("a session left with neither messages.read nor agents.read closes with 4003; keeping one of them stays", async () => {
    const lost = await connect("key_lost");
    const kept = await connect("key_kept");
    sessions.set("key_lost", async () => ({ user, scopes: new Set<Scope>(["keys.write"]) }));
    sessions.set("key_kept", async () => ({ user, scopes: new Set<Scope>(["agents.read"]) }));
    await check("key_kept");
    assert.deepEqual(await lost.closed, LIVE_CLOSE.scopes);
    assert.equal(kept.socket.readyState, WebSocket.OPEN);
    kept.socket.close();
  });

  test("a recheck that fails (the database away) keeps the connection, and the next check asks again", async () => {
    const { socket, closed } = await connect("key_flaky");
    let asked = 0;
    sessions.set("key_flaky", async () => {
      asked++;
      if (asked === 1) throw new Error("database away");
      return undefined;
    });
    await check("key_flaky");
    assert.equal(asked, 1);
    assert.equal(socket.readyState, WebSocket.OPEN);
    await clock.advance(CHECK_MS);
    assert.equal(asked, 2);
    assert.deepEqual(await closed, LIVE_CLOSE.ended);
  });
});
