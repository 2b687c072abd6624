import assert from "node:assert/strict";
import { once } from "node:events";
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { WebSocket } from "ws";
import { type Clock, systemClock } from "../../relay/src/clock";
import { startTestRelay, type TestRelay } from "../support/relayHarness";
import { createDatabase, dropDatabases, postgresProblem } from "../support/scaleOutServices";
import { createAgent, createChannel, postMessage } from "../support/workspace";

/**
 * /metrics over real HTTP on SQLite and on PostgreSQL: prom-client's process and runtime series, and the relay's
 * gauges read at scrape time (open sockets by kind, the outbox's depth and oldest age) and delivery outcomes,
 * each seen to move.
 */

const PROCESS_SERIES = [
  "process_resident_memory_bytes",
  "process_cpu_seconds_total",
  "process_open_fds",
  "nodejs_eventloop_lag_seconds",
  "nodejs_eventloop_lag_p99_seconds",
  "nodejs_active_handles_total",
  "nodejs_heap_size_used_bytes",
];

/** The value of the series `name{labels}` (labels as written by the exporter), or undefined when it is not there. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** An upstream that holds every request until released, so a completion stream stays open as long as a test wants. */
async function heldUpstream() {
  const held: ServerResponse[] = [];
  const arrived: (() => void)[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    req.resume();
    held.push(res);
    for (const wake of arrived.splice(0)) wake();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    /** Resolves once `count` requests are held. */
    async holding(count: number) {
      while (held.length < count) await new Promise<void>((resolve) => arrived.push(resolve));
    },
    release() {
      for (const res of held.splice(0)) res.destroy();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The system clock, `offset` ms ahead: the oldest pending event's age is seen to grow without waiting for it. */
function shiftedClock(): Clock & { offset: number } {
  const clock = { ...systemClock, offset: 0, now: () => Date.now() + clock.offset };
  return clock;
}

const pgProblem = await postgresProblem();
const backends: { name: string; skip: string | undefined }[] = [
  { name: "SQLite", skip: undefined },
  { name: "PostgreSQL", skip: pgProblem },
];

for (const backend of backends) {
  describe(
    `/metrics on ${backend.name}`,
    { skip: backend.skip ? `PostgreSQL tests skipped: ${backend.skip}` : false },
    () => {
      let relay: TestRelay;
      let upstream: Awaited<ReturnType<typeof heldUpstream>>;
      let database: string | undefined;
      const clock = shiftedClock();
      const sockets: WebSocket[] = [];
      const scrape = async () => {
        const response = await fetch(`${relay.url}/metrics`);
        assert.equal(response.status, 200);
        assert.match(response.headers.get("content-type") ?? "", /^text\/plain/);
        return response.text();
      };

      before(async () => {
        upstream = await heldUpstream();
        const env: Record<string, string> = {
          TAB_RELAY_PROVIDER: "openai",
          TAB_RELAY_UPSTREAM_URL: upstream.url,
          TAB_RELAY_UPSTREAM_MODEL: "held",
          TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
        };
        if (backend.name === "PostgreSQL") {
          const scratch = await createDatabase("tab_relay_metrics");
          database = scratch.name;
          env.TAB_RELAY_DATABASE_URL = scratch.url;
        }
        relay = await startTestRelay({ env, clock });
      });
      after(async () => {
        for (const socket of sockets) socket.terminate();
        upstream.release();
        await relay.close();
        await upstream.close();
        if (database !== undefined) await dropDatabases([database]);
      });

      test("carries prom-client's process and runtime series and the relay's own, at rest", async () => {
        const text = await scrape();
        for (const name of PROCESS_SERIES) assert.ok(sample(text, name) !== undefined, `${name} in\n${text}`);
        assert.ok((sample(text, "process_resident_memory_bytes") ?? 0) > 10 * 1024 * 1024, "resident memory in bytes");
        assert.match(text, /^# TYPE nodejs_gc_duration_seconds histogram$/m);
        for (const kind of ["console", "socket_mode", "sse"])
          assert.equal(sample(text, `tab_relay_open_sockets{kind="${kind}"}`), 0, kind);
        assert.equal(sample(text, "tab_relay_outbox_pending_events"), 0);
        assert.equal(sample(text, "tab_relay_outbox_oldest_pending_age_seconds"), 0);
        assert.match(text, /^# TYPE tab_relay_webhook_deliveries_total counter$/m);
        assert.match(text, /^# TYPE tab_relay_http_requests_total counter$/m);
      });

      test("an event waiting for its agent shows in the outbox with its age; a console and the agent's socket open; delivery counts it", async () => {
        const agent = await createAgent(relay, { name: "Sock" });
        const channel = await createChannel(relay, "metrics-outbox");
        await postMessage(relay, channel, "@Sock are you there?");
        // No webhook and no socket yet: the event waits.
        clock.offset += 90_000;
        let text = await scrape();
        assert.equal(sample(text, "tab_relay_outbox_pending_events"), 1, text);
        assert.ok((sample(text, "tab_relay_outbox_oldest_pending_age_seconds") ?? 0) >= 90, text);

        const signIn = await relay.request("/api/v1/sessions", {
          method: "POST",
          key: null,
          json: { api_key: relay.apiKey },
        });
        assert.equal(signIn.status, 201, await signIn.clone().text());
        const cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0] as string;
        const live = new WebSocket(`${relay.url.replace(/^http/, "ws")}/api/v1/live`, {
          headers: { cookie, origin: relay.url },
        });
        sockets.push(live);
        await once(live, "open");
        const frames: string[] = [];
        live.on("message", (data) => frames.push(String(data)));

        const agentSocket = new WebSocket(`${relay.url.replace(/^http/, "ws")}/api/v1/agent-api/socket`, {
          headers: { authorization: `Bearer ${agent.token}` },
        });
        sockets.push(agentSocket);
        const acked = new Promise<void>((resolve) => {
          agentSocket.on("message", (data) => {
            const frame = JSON.parse(String(data)) as { type: string; envelope_id?: string };
            if (frame.type !== "event") return;
            agentSocket.send(JSON.stringify({ type: "ack", envelope_id: frame.envelope_id }));
            resolve();
          });
        });
        await once(agentSocket, "message");
        text = await scrape();
        assert.equal(sample(text, 'tab_relay_open_sockets{kind="console"}'), 1, text);
        assert.equal(sample(text, 'tab_relay_open_sockets{kind="socket_mode"}'), 1, text);

        // The console hears of each recorded attempt (agent.updated): the scrape after that frame sees the delivery.
        await acked;
        const delivered = 'tab_relay_webhook_deliveries_total{outcome="delivered",via="socket"}';
        for (;;) {
          const frame = once(live, "message", { signal: AbortSignal.timeout(5000) });
          text = await scrape();
          if (sample(text, delivered) === 1 && sample(text, "tab_relay_outbox_pending_events") === 0) {
            // The frame not waited for times out later: its rejection must not outlive the test unhandled.
            frame.catch(() => undefined);
            break;
          }
          await frame;
        }
        assert.equal(sample(text, "tab_relay_outbox_oldest_pending_age_seconds"), 0);
        assert.ok(frames.length > 0);
      });

      test("a completion stream counts as an open SSE stream while it lasts", async () => {
        const body = {
          model: "tab-v1",
          stream: true,
          tab_context: {
            surface: "code",
            workspace_slug: relay.workspace.slug,
            entity_id: "held.ts",
            document_type: "plaintext",
            code_language: "typescript",
            file_path: "held.ts",
            active_text_before_cursor: "const total = ",
            active_text_after_cursor: "\n",
          },
        };
        const stream = relay.request("/api/v1/tab/chat/completions", { method: "POST", json: body });
        await upstream.holding(1);
        assert.equal(sample(await scrape(), 'tab_relay_open_sockets{kind="sse"}'), 1);
        upstream.release();
        await (await stream).text();
        assert.equal(sample(await scrape(), 'tab_relay_open_sockets{kind="sse"}'), 0);
      });
    },
  );
}

describe("/metrics is the operator's: it names every workspace's usage", () => {
  const TOKEN = "m".repeat(40);

  test("without TAB_RELAY_METRICS_TOKEN it answers a client on this machine directly, and refuses one a proxy forwarded", async () => {
    const relay = await startTestRelay({ env: { TAB_RELAY_TRUST_PROXY: "loopback" } });
    try {
      const direct = await fetch(`${relay.url}/metrics`);
      assert.equal(direct.status, 200);
      assert.match(await direct.text(), /^# TYPE tab_relay_http_requests_total counter$/m);
      for (const header of [{ "X-Forwarded-For": "203.0.113.9" }, { Forwarded: "for=203.0.113.9" }]) {
        for (const path of ["/metrics", "/METRICS", "/metrics/"]) {
          const forwarded = await fetch(`${relay.url}${path}`, { headers: header });
          assert.equal(forwarded.status, 403, `${path} with ${Object.keys(header)[0]}`);
          const body = (await forwarded.json()) as { error: { code: string; message: string } };
          assert.equal(body.error.code, "FORBIDDEN");
          assert.match(body.error.message, /TAB_RELAY_METRICS_TOKEN/);
        }
      }
    } finally {
      await relay.close();
    }
  });

  test("with TAB_RELAY_METRICS_TOKEN it needs that bearer token, from anywhere", async () => {
    const relay = await startTestRelay({ env: { TAB_RELAY_METRICS_TOKEN: TOKEN } });
    try {
      for (const authorization of [
        undefined,
        `Bearer ${TOKEN}x`,
        `Bearer ${TOKEN.slice(1)}`,
        TOKEN,
        `Bearer ${relay.apiKey}`,
      ]) {
        const refused = await fetch(`${relay.url}/metrics`, {
          headers: authorization === undefined ? {} : { Authorization: authorization },
        });
        assert.equal(refused.status, 401, String(authorization));
        assert.equal(((await refused.json()) as { error: { code: string } }).error.code, "UNAUTHORIZED");
      }
      const scraped = await fetch(`${relay.url}/metrics`, {
        headers: { Authorization: `Bearer ${TOKEN}`, "X-Forwarded-For": "203.0.113.9" },
      });
      assert.equal(scraped.status, 200);
      assert.match(await scraped.text(), /^# TYPE tab_relay_http_requests_total counter$/m);
    } finally {
      await relay.close();
    }
  });

  test("a metrics token shorter than 32 characters stops the relay at start, naming the setting", async () => {
    await assert.rejects(
      startTestRelay({ env: { TAB_RELAY_METRICS_TOKEN: "short" } }),
      /TAB_RELAY_METRICS_TOKEN \(--metrics-token\): must be at least 32 characters/,
    );
  });
});
