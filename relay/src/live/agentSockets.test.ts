import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { FakeClock } from "@tab-relay/shared/testing";
import { WebSocket, WebSocketServer } from "ws";
import { silentLogger } from "../logger";
import { type AgentSockets, ackedEnvelope, createAgentSockets } from "./agentSockets";

describe("ackedEnvelope", () => {
  test("an acknowledgement names its envelope, with or without other fields", () => {
    assert.equal(ackedEnvelope('{"type":"ack","envelope_id":"evt_1"}'), "evt_1");
    assert.equal(ackedEnvelope('{"envelope_id":"evt_2","type":"ack","payload":{"ok":true}}'), "evt_2");
  });

  test("every other JSON text, and text that is not JSON, acknowledges nothing", () => {
    const others = [
      "null",
      "1",
      "true",
      '"ack"',
      "[]",
      "[null]",
      '[{"type":"ack","envelope_id":"evt_1"}]',
      "{}",
      '{"type":"ack"}',
      '{"type":"ack","envelope_id":null}',
      '{"type":"ack","envelope_id":42}',
      '{"type":"ACK","envelope_id":"evt_1"}',
      '{"type":["ack"],"envelope_id":"evt_1"}',
      '{"__proto__":{"type":"ack"},"envelope_id":"evt_1"}',
      "not json",
      "",
    ];
    for (const text of others) assert.equal(ackedEnvelope(text), undefined, text);
  });
});

describe("acknowledgements on the relay's clock", () => {
  const ACK_TIMEOUT_MS = 10_000;

  /** Agent sockets on a FakeClock, with one agent (agt_1) connected over a real WebSocket. */
  async function withAgent(
    run: (sockets: AgentSockets, clock: FakeClock, agent: WebSocket) => Promise<void>,
  ): Promise<void> {
    const clock = new FakeClock();
    const sockets = createAgentSockets({
      logger: silentLogger,
      clock,
      ackTimeoutMs: ACK_TIMEOUT_MS,
      onChange: () => undefined,
    });
    const server = createServer();
    const wss = new WebSocketServer({ server });
    wss.on("connection", (ws) => sockets.add({ id: "agt_1", workspace_id: "wks_1" }, ws));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const agent = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      const [hello] = (await once(agent, "message")) as [Buffer];
      assert.equal((JSON.parse(hello.toString("utf8")) as { ack_timeout_ms: number }).ack_timeout_ms, ACK_TIMEOUT_MS);
      await run(sockets, clock, agent);
    } finally {
      agent.terminate();
      sockets.close();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  const envelope = { id: "evt_1", headers: { "webhook-id": "evt_1" }, body: "{}" };

  test("an envelope not acknowledged within the ack timeout is a failed attempt, not before", async () => {
    await withAgent(async (sockets, clock, agent) => {
      const sent = once(agent, "message");
      let outcome: Awaited<ReturnType<AgentSockets["deliver"]>> | undefined;
      const delivering = sockets.deliver("agt_1", envelope).then((result) => (outcome = result));
      await sent;
      await clock.advance(ACK_TIMEOUT_MS - 1);
      assert.equal(outcome, undefined, "still waiting 1 ms before the timeout");
      await clock.advance(1);
      await delivering;
      assert.deepEqual(outcome, {
        ok: false,
        error: `no acknowledgement within ${ACK_TIMEOUT_MS} ms`,
        excerpt: "",
        durationMs: ACK_TIMEOUT_MS,
      });
      assert.equal(clock.pendingTimers, 1, "only the heartbeat is left");
    });
  });

  test("an acknowledgement in time delivers, its duration measured on the relay's clock", async () => {
    await withAgent(async (sockets, clock, agent) => {
      const sent = once(agent, "message");
      const delivering = sockets.deliver("agt_1", envelope);
      await sent;
      await clock.advance(2500);
      agent.send(JSON.stringify({ type: "ack", envelope_id: "evt_1" }));
      assert.deepEqual(await delivering, { ok: true, excerpt: "", durationMs: 2500 });
      assert.equal(clock.pendingTimers, 1, "the ack timeout was cleared; only the heartbeat is left");
    });
  });
});
