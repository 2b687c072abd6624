import assert from "node:assert/strict";
import { lookup } from "node:dns/promises";
import { once } from "node:events";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { after, before, describe, test } from "node:test";
import { startTestRelay, type TestRelay } from "../support/relayHarness";
import { createAgent } from "../support/workspace";

interface Log {
  id: string;
  status: string;
  attempts: { status_code: number | null; error: string | null; outcome: string }[];
}

describe("an agent's webhook URL on this machine", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay();
  });
  after(() => relay.close());

  test("is refused naming the loopback address and TAB_RELAY_WEBHOOK_ALLOW_PRIVATE, not https", async () => {
    const response = await relay.request("/api/v1/agents", {
      method: "POST",
      json: { name: "Local", webhook_url: "http://127.0.0.1:8788/webhook" },
    });
    assert.equal(response.status, 400);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    assert.equal(error.code, "VALIDATION_ERROR");
    assert.equal(
      error.message,
      "webhook_url: Webhook URL points at 127.0.0.1, a loopback address (this machine): refused unless the relay runs with TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true (for an agent on this machine or a private network).",
    );
  });
});

/**
 * The address rule holds at delivery time, on the address the name resolves to, not only on the URL as written:
 * this machine's own host name passes the static check (it is not an IP literal or "localhost") but resolves to
 * loopback, so a relay that does not allow private addresses must refuse to connect.
 */
describe("webhook deliveries to a name that resolves to a private address", () => {
  let relay: TestRelay;
  const connections: string[] = [];
  const trap = createServer((socket) => {
    connections.push(String(socket.remoteAddress));
    socket.destroy();
  });
  let loopbackName: string | undefined;

  before(async () => {
    const name = hostname();
    const resolved = await lookup(name, { all: true }).catch(() => []);
    if (resolved.length > 0 && resolved.every((entry) => entry.address.startsWith("127.") || entry.address === "::1"))
      loopbackName = name;
    trap.listen(0, "127.0.0.1");
    await once(trap, "listening");
    relay = await startTestRelay({ env: { TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: "60000" } });
  });
  after(async () => {
    await relay.close();
    trap.close();
  });

  test("are refused before connecting, and the attempt records why", async (t) => {
    if (!loopbackName) return t.skip(`${hostname()} does not resolve to loopback here`);
    const { port } = trap.address() as AddressInfo;
    const created = await createAgent(relay, { name: "Rebinder", webhook_url: `https://${loopbackName}:${port}/hook` });
    const sent = await relay.request(`/api/v1/agents/${created.agent.id}/test-event`, { method: "POST" });
    assert.equal(sent.status, 202);
    const log = await relay.whenHeard(async () => {
      const response = await relay.request(`/api/v1/agents/${created.agent.id}/deliveries`);
      const [entry] = ((await response.json()) as { data: Log[] }).data;
      return entry && entry.attempts.length > 0 ? entry : undefined;
    }, "the attempt to be recorded");
    const attempt = log?.attempts[0];
    assert.equal(log?.status, "failed");
    assert.equal(attempt?.status_code, null);
    assert.match(String(attempt?.error), /blocked address 127\./);
    assert.deepEqual(connections, [], "nothing connected to the loopback listener");
  });
});
