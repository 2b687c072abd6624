import assert from "node:assert/strict";
import { EventEmitter, once } from "node:events";
import type { IncomingMessage } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, afterEach, before, describe, test } from "node:test";
import { WebSocket, WebSocketServer } from "ws";
import {
  type PingEvent,
  SOCKET_MODE_CLOSE_CODES,
  WEBHOOK_HEADERS,
  type WebhookEvent,
  newSigningSecret,
  signWebhook,
} from "@tab-relay/shared";
import { FakeClock } from "@tab-relay/shared/testing";
import type { SocketModeClient, SocketModeClientOptions, SocketModeLogEntry } from "./socketMode";
import { SocketModeError, agentSocketUrl, createSocketModeClient } from "./socketMode";

const SECRET = newSigningSecret();
const TOKEN = "svc_agent_test";
/** The clients' time: envelopes are signed at it, and reconnect delays pass only when a test advances it. */
const NOW_MS = Date.UTC(2025, 5, 15, 15, 6, 40);
/** How long a test waits for something that happens at once over a real socket (nothing here waits for time to pass). */
const AT_ONCE_MS = 2000;

/**
 * Something happened that a test may be waiting for: a frame or a connection at the fake relay, a log entry, an
 * event or a close at the client. `until` re-checks its condition on each.
 */
const happened = new EventEmitter();
const notify = () => happened.emit("change");

async function until(condition: () => boolean, what: string, timeoutMs = AT_ONCE_MS): Promise<void> {
  if (condition()) return;
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (!condition()) return;
      happened.off("change", check);
      clearTimeout(deadline);
      resolve();
    };
    const deadline = setTimeout(() => {
      happened.off("change", check);
      reject(new Error(`timed out waiting for ${what}`));
    }, timeoutMs);
    happened.on("change", check);
  });
}

function ping(id: string): PingEvent {
  return {
    id,
    type: "ping",
    created_at: "2025-06-15T15:06:40.000Z",
    workspace: { slug: "acme", name: "Acme" },
    agent: { id: "agt_1", name: "Echo" },
  };
}

async function envelope(id: string, body = JSON.stringify(ping(id)), secret = SECRET) {
  const timestamp = Math.floor(NOW_MS / 1000);
  return {
    type: "event",
    envelope_id: id,
    headers: {
      [WEBHOOK_HEADERS.id]: id,
      [WEBHOOK_HEADERS.timestamp]: String(timestamp),
      [WEBHOOK_HEADERS.signature]: await signWebhook(secret, id, timestamp, body),
    },
    body,
  };
}

interface Connection {
  socket: WebSocket;
  request: IncomingMessage;
  frames: Record<string, unknown>[];
  /** Resolves with the first frame (from now on or already received) that satisfies `match`. */
  frame(match: (frame: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
}

/**
 * A scripted stand-in for the relay: each upgrade is refused with `refuseWith()`'s status or accepted and greeted.
 * `attempts` are the times of the upgrade requests on the clock `now` reads.
 */
async function startFakeRelay(now: () => number) {
  const server = createServer();
  const wss = new WebSocketServer({ noServer: true });
  const connections: Connection[] = [];
  const attempts: number[] = [];
  const connectionWaiters: (() => void)[] = [];
  let refuse: number | undefined;
  let greet = true;
  server.on("upgrade", (request: IncomingMessage, raw, head) => {
    attempts.push(now());
    notify();
    if (refuse !== undefined) {
      raw.end(`HTTP/1.1 ${refuse} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      for (const wake of connectionWaiters.splice(0)) wake();
      return;
    }
    wss.handleUpgrade(request, raw, head, (socket) => {
      const frames: Record<string, unknown>[] = [];
      const waiters: (() => void)[] = [];
      socket.on("message", (data) => {
        frames.push(JSON.parse((data as Buffer).toString("utf8")) as Record<string, unknown>);
        for (const wake of waiters.splice(0)) wake();
        notify();
      });
      const connection: Connection = {
        socket,
        request,
        frames,
        async frame(match, timeoutMs = 2000) {
          const deadline = performance.now() + timeoutMs;
          for (;;) {
            const found = frames.find(match);
            if (found) return found;
            const left = deadline - performance.now();
            if (left <= 0) throw new Error(`no matching frame within ${timeoutMs} ms; got ${JSON.stringify(frames)}`);
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, left);
              waiters.push(() => {
                clearTimeout(timer);
                resolve();
              });
            });
          }
        },
      };
      connections.push(connection);
      if (greet) socket.send(JSON.stringify({ type: "hello", agent_id: "agt_1", ack_timeout_ms: 10_000 }));
      for (const wake of connectionWaiters.splice(0)) wake();
      notify();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/api/v1/agent-api/socket`,
    connections,
    attempts,
    refuseWith(status: number | undefined) {
      refuse = status;
    },
    greet(value: boolean) {
      greet = value;
    },
    /** Resolves once `count` upgrade requests (accepted or refused) have arrived. */
    async attempted(count: number, timeoutMs = 3000): Promise<void> {
      const deadline = performance.now() + timeoutMs;
      while (attempts.length < count) {
        const left = deadline - performance.now();
        if (left <= 0)
          throw new Error(`expected ${count} connection attempts within ${timeoutMs} ms, got ${attempts.length}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          connectionWaiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
    async close() {
      for (const client of wss.clients) client.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type FakeRelay = Awaited<ReturnType<typeof startFakeRelay>>;

describe("createSocketModeClient", () => {
  let relay: FakeRelay;
  let clock = new FakeClock(NOW_MS);
  const clients: SocketModeClient[] = [];

  before(async () => {
    relay = await startFakeRelay(() => clock.now());
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    for (const connection of relay.connections.splice(0)) connection.socket.terminate();
    relay.attempts.splice(0);
    relay.refuseWith(undefined);
    relay.greet(true);
    clock = new FakeClock(NOW_MS);
  });
  after(() => relay.close());

  function client(overrides: Partial<SocketModeClientOptions> = {}) {
    const events: { event: WebhookEvent; envelopeId: string }[] = [];
    const logs: SocketModeLogEntry[] = [];
    const closed: { code: number; reason: string }[] = [];
    const created = createSocketModeClient({
      url: relay.url,
      token: TOKEN,
      signingSecret: SECRET,
      WebSocket,
      onClosed: (code, reason) => {
        closed.push({ code, reason });
        notify();
      },
      log: (entry) => {
        logs.push(entry);
        notify();
      },
      reconnect: { minMs: 20, maxMs: 80 },
      clock,
      ...overrides,
      onEvent: async (event, envelopeId) => {
        try {
          if (overrides.onEvent) await overrides.onEvent(event, envelopeId);
          else events.push({ event, envelopeId });
        } finally {
          notify();
        }
      },
    });
    clients.push(created);
    return { client: created, events, logs, closed };
  }

  /** The delay of the client's `n`th reconnect, once it has scheduled it (before, nothing would come of advancing). */
  async function reconnectDelay(logs: SocketModeLogEntry[], n: number): Promise<number> {
    const reconnects = () => logs.filter((entry) => entry.kind === "reconnecting");
    await until(() => reconnects().length >= n, `reconnect ${n} to be scheduled`);
    return reconnects()[n - 1]?.in_ms as number;
  }

  test("resolves start on the relay's hello after connecting with the agent token as a bearer header", async () => {
    const { client: agent } = client();
    assert.equal(agent.connected, false);
    await agent.start();
    assert.equal(agent.connected, true);
    assert.equal(relay.connections.length, 1);
    assert.equal(relay.connections[0]?.request.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(relay.connections[0]?.request.url, "/api/v1/agent-api/socket");
  });

  test("acknowledges a verified envelope before the handler runs, then hands the handler the event", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const handled: string[] = [];
    const { client: agent } = client({
      onEvent: async (event, envelopeId) => {
        await gate;
        handled.push(`${event.id}/${envelopeId}`);
      },
    });
    await agent.start();
    const connection = relay.connections[0] as Connection;
    connection.socket.send(JSON.stringify(await envelope("evt_a")));
    try {
      assert.deepEqual(await connection.frame((f) => f.type === "ack"), { type: "ack", envelope_id: "evt_a" });
      assert.deepEqual(handled, []);
    } finally {
      release();
    }
    await until(() => handled.length === 1, "the handler");
    assert.deepEqual(handled, ["evt_a/evt_a"]);
  });

  test("acknowledges a repeated envelope again without running the handler twice", async () => {
    const { client: agent, events, logs } = client();
    await agent.start();
    const connection = relay.connections[0] as Connection;
    connection.socket.send(JSON.stringify(await envelope("evt_b")));
    await connection.frame((f) => f.type === "ack");
    connection.socket.send(JSON.stringify(await envelope("evt_b")));
    await until(() => connection.frames.filter((f) => f.type === "ack").length === 2, "the second ack");
    await until(() => logs.some((entry) => entry.kind === "received" && entry.duplicate === true), "the duplicate log");
    assert.deepEqual(
      events.map((e) => e.envelopeId),
      ["evt_b"],
    );
  });

  test("neither acknowledges nor handles envelopes with a bad signature, a stale timestamp or a mismatched id", async () => {
    const { client: agent, events, logs } = client();
    await agent.start();
    const connection = relay.connections[0] as Connection;
    const forged = await envelope("evt_forged", JSON.stringify(ping("evt_forged")), newSigningSecret());
    const tampered = {
      ...(await envelope("evt_tampered")),
      body: JSON.stringify({ ...ping("evt_tampered"), type: "message.created" }),
    };
    const stale = await envelope("evt_stale");
    const oldTimestamp = Math.floor(NOW_MS / 1000) - 3600;
    stale.headers[WEBHOOK_HEADERS.timestamp] = String(oldTimestamp);
    stale.headers[WEBHOOK_HEADERS.signature] = await signWebhook(SECRET, "evt_stale", oldTimestamp, stale.body);
    const mismatched = { ...(await envelope("evt_real")), envelope_id: "evt_other" };
    for (const frame of [forged, tampered, stale, mismatched]) connection.socket.send(JSON.stringify(frame));
    connection.socket.send("not json");
    connection.socket.send(JSON.stringify({ type: "event", envelope_id: 7 }));
    // A valid envelope sent last shows the earlier ones were processed (and got no ack).
    connection.socket.send(JSON.stringify(await envelope("evt_good")));
    await until(() => events.length === 1, "the good envelope");
    await connection.frame((f) => f.type === "ack" && f.envelope_id === "evt_good");
    await until(() => logs.filter((entry) => entry.kind === "rejected").length === 5, "five rejections");
    assert.deepEqual(
      connection.frames.filter((f) => f.type === "ack").map((f) => f.envelope_id),
      ["evt_good"],
    );
    assert.deepEqual(
      logs
        .filter((entry) => entry.kind === "rejected")
        .map((entry) => entry.reason)
        .sort(),
      [
        "envelope_id_mismatch",
        "malformed_envelope",
        "no_matching_signature",
        "no_matching_signature",
        "timestamp_too_old",
      ],
    );
    assert.equal(events[0]?.envelopeId, "evt_good");
  });

  test("logs a failing handler and keeps handling later envelopes", async () => {
    const seen: string[] = [];
    const { client: agent, logs } = client({
      onEvent: (event) => {
        seen.push(event.id);
        if (event.id === "evt_boom") throw new Error("boom");
      },
    });
    await agent.start();
    const connection = relay.connections[0] as Connection;
    connection.socket.send(JSON.stringify(await envelope("evt_boom")));
    connection.socket.send(JSON.stringify(await envelope("evt_after")));
    await until(() => seen.length === 2, "both envelopes");
    assert.ok(
      logs.some(
        (entry) => entry.kind === "handler_failed" && entry.envelope_id === "evt_boom" && entry.error === "boom",
      ),
    );
  });

  test("reconnects after the relay goes away and handles envelopes on the new connection", async () => {
    const { client: agent, events, closed, logs } = client();
    await agent.start();
    (relay.connections[0] as Connection).socket.close(
      SOCKET_MODE_CLOSE_CODES.shutdown.code,
      SOCKET_MODE_CLOSE_CODES.shutdown.reason,
    );
    await clock.advance(await reconnectDelay(logs, 1));
    await until(() => relay.connections.length === 2 && agent.connected, "the reconnect");
    const second = relay.connections[1] as Connection;
    second.socket.send(JSON.stringify(await envelope("evt_c")));
    await second.frame((f) => f.type === "ack" && f.envelope_id === "evt_c");
    await until(() => events.length === 1, "the handler");
    assert.deepEqual(closed, []);
  });

  test("backs off exponentially with jitter while the relay keeps refusing, and resets after a hello", async () => {
    const { client: agent, logs } = client({ reconnect: { minMs: 40, maxMs: 160 }, random: () => 0.999 });
    await agent.start();
    relay.refuseWith(503);
    (relay.connections[0] as Connection).socket.terminate();
    for (let attempt = 2; attempt <= 5; attempt++) {
      const delay = await reconnectDelay(logs, attempt - 1);
      // Not a moment early: one millisecond short of the delay, nothing comes.
      await clock.advance(delay - 1);
      assert.equal(relay.attempts.length, attempt - 1, `attempt ${attempt} came early`);
      await clock.advance(1);
      await relay.attempted(attempt);
    }
    const delays = logs.filter((entry) => entry.kind === "reconnecting").map((entry) => entry.in_ms);
    assert.deepEqual(delays.slice(0, 4), [40, 80, 160, 160]);
    const expectedGaps = [80, 160, 160];
    for (const [i, expected] of expectedGaps.entries()) {
      const gap = (relay.attempts[i + 2] as number) - (relay.attempts[i + 1] as number);
      assert.ok(gap >= expected - 5, `gap ${i} was ${gap} ms, expected about ${expected}`);
      assert.equal(gap, expected);
    }
    relay.refuseWith(undefined);
    await clock.advance(await reconnectDelay(logs, 5));
    await until(() => agent.connected, "the reconnect", 3000);
    (relay.connections[1] as Connection).socket.terminate();
    await clock.advance(await reconnectDelay(logs, 6));
    await until(() => relay.connections.length === 3, "the next reconnect");
    const afterHello = logs.filter((entry) => entry.kind === "reconnecting").at(-1);
    assert.equal(afterHello?.in_ms, 40);
    assert.equal(afterHello?.attempt, 1);
  });

  test("randomizes each reconnect delay down to half of its step", async () => {
    const { client: agent, logs } = client({ reconnect: { minMs: 100, maxMs: 100 }, random: () => 0 });
    await agent.start();
    (relay.connections[0] as Connection).socket.terminate();
    await reconnectDelay(logs, 1);
    await clock.advance(49);
    assert.equal(relay.connections.length, 1);
    await clock.advance(1);
    await until(() => relay.connections.length === 2, "the reconnect");
    assert.equal(logs.find((entry) => entry.kind === "reconnecting")?.in_ms, 50);
  });

  test("the close codes are the protocol's: 4001, 4003 and 4004 are final, 1001 (shutdown) is not", () => {
    assert.deepEqual(SOCKET_MODE_CLOSE_CODES, {
      tokenReplaced: { code: 4001, reason: "token replaced", final: true },
      paused: { code: 4003, reason: "agent paused", final: true },
      removed: { code: 4004, reason: "agent removed", final: true },
      shutdown: { code: 1001, reason: "relay shutting down", final: false },
    });
  });

  for (const [code, reason] of [
    [4001, "token replaced"],
    [4003, "agent paused"],
    [4004, "agent removed"],
  ] as const) {
    test(`stops for good and reports close code ${code} (${reason}) without reconnecting`, async () => {
      const { client: agent, closed } = client({ reconnect: { minMs: 10, maxMs: 10 } });
      await agent.start();
      (relay.connections[0] as Connection).socket.close(code, reason);
      await until(() => closed.length === 1, "onClosed");
      assert.deepEqual(closed, [{ code, reason }]);
      assert.equal(agent.connected, false);
      assert.equal(clock.pendingTimers, 0, "no reconnect is scheduled");
      await clock.advance(100);
      assert.equal(relay.attempts.length, 1);
      await assert.rejects(agent.start(), SocketModeError);
    });
  }

  for (const status of [401, 403]) {
    test(`stops when the relay refuses a reconnect with HTTP ${status}`, async () => {
      const { client: agent, closed, logs } = client({ reconnect: { minMs: 10, maxMs: 10 } });
      await agent.start();
      relay.refuseWith(status);
      (relay.connections[0] as Connection).socket.terminate();
      await clock.advance(await reconnectDelay(logs, 1));
      await until(() => closed.length === 1, "onClosed");
      assert.equal(closed[0]?.code, status);
      assert.equal(clock.pendingTimers, 0, "no reconnect is scheduled");
      await clock.advance(100);
      assert.equal(relay.attempts.length, 2);
    });
  }

  test("rejects start with the HTTP status when the first connection is refused, and does not retry", async () => {
    relay.refuseWith(401);
    const { client: agent, closed } = client({ reconnect: { minMs: 10, maxMs: 10 } });
    await assert.rejects(agent.start(), (error: unknown) => error instanceof SocketModeError && error.status === 401);
    assert.deepEqual(closed, []);
    relay.refuseWith(503);
    const other = client({ reconnect: { minMs: 10, maxMs: 10 } }).client;
    await assert.rejects(other.start(), (error: unknown) => error instanceof SocketModeError && error.status === 503);
    assert.equal(clock.pendingTimers, 0, "no reconnect is scheduled");
    await clock.advance(100);
    assert.equal(relay.attempts.length, 2);
  });

  test("rejects start when nothing listens at the address", async () => {
    const unreachable = createSocketModeClient({
      url: "ws://127.0.0.1:1/api/v1/agent-api/socket",
      token: TOKEN,
      signingSecret: SECRET,
      WebSocket,
      onEvent: () => undefined,
    });
    await assert.rejects(unreachable.start(), SocketModeError);
  });

  test("close ends the connection, stops reconnecting and waits for running handlers", async () => {
    let finished = false;
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const { client: agent } = client({
      onEvent: async () => {
        await slow;
        finished = true;
      },
    });
    await agent.start();
    const connection = relay.connections[0] as Connection;
    const serverSawClose = once(connection.socket, "close");
    connection.socket.send(JSON.stringify(await envelope("evt_slow")));
    await connection.frame((f) => f.type === "ack");
    let closeReturned = false;
    const closing = agent.close().then(() => (closeReturned = true));
    const [code] = (await serverSawClose) as [number];
    assert.equal(code, 1000);
    assert.equal(closeReturned, false, "close waits for the handler still running");
    release();
    await closing;
    assert.equal(finished, true);
    assert.equal(agent.connected, false);
    assert.equal(clock.pendingTimers, 0, "no reconnect is scheduled");
    await clock.advance(100);
    assert.equal(relay.attempts.length, 1);
    await assert.rejects(agent.start(), SocketModeError);
  });

  test("close before the hello rejects the pending start", async () => {
    relay.greet(false);
    const { client: agent } = client();
    const started = agent.start();
    await relay.attempted(1);
    await until(() => relay.connections.length === 1, "the connection");
    const rejected = assert.rejects(started, SocketModeError);
    await agent.close();
    await rejected;
  });

  test("refuses a malformed signing secret at creation", () => {
    assert.throws(() => client({ signingSecret: "whsec_short" }));
  });
});

describe("agentSocketUrl", () => {
  test("turns a relay address into its Socket Mode address and keeps explicit socket addresses", () => {
    assert.equal(agentSocketUrl("http://127.0.0.1:8787"), "ws://127.0.0.1:8787/api/v1/agent-api/socket");
    assert.equal(agentSocketUrl("https://relay.example.com/"), "wss://relay.example.com/api/v1/agent-api/socket");
    assert.equal(
      agentSocketUrl("wss://relay.example.com/api/v1/agent-api/socket"),
      "wss://relay.example.com/api/v1/agent-api/socket",
    );
    assert.throws(() => agentSocketUrl("ftp://relay.example.com"), TypeError);
  });
});
