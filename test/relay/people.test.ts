import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";
import { WebSocket } from "ws";
import type { WebhookEvent } from "@tab-relay/shared";
import type { Agent, ApiKey, ApiKeyCreated, Delivery, Me, User, UserCreated, UserRemoved } from "@tab-relay/shared/api";
import { dataOf, errorOf, expectError, startTestRelay, type TestRelay } from "../support/relayHarness";
import { type WebhookReceiver, startWebhookReceiver } from "../support/webhookReceiver";
import { addMember, agentRequest, createAgent, createChannel, createUser, postMessage } from "../support/workspace";

/** A key of the owner holding just these scopes. */
async function ownerKey(relay: TestRelay, scopes: string[]): Promise<ApiKeyCreated> {
  return dataOf(
    await relay.request("/api/v1/api-keys", { method: "POST", json: { name: scopes.join("+"), scopes } }),
    201,
  );
}

async function keyIdOf(relay: TestRelay, key: string): Promise<string> {
  return (await dataOf<Me>(await relay.request("/api/v1/me", { key }), 200)).key.id;
}

describe("adding people: the first key holds no scope the calling key lacks", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" } });
  });
  after(() => relay.close());

  test("a key kept to users.write that adds an admin hands on users.write and nothing else", async () => {
    const narrow = await ownerKey(relay, ["users.write"]);
    const created = await dataOf<UserCreated>(
      await relay.request("/api/v1/users", {
        key: narrow.secret,
        method: "POST",
        json: { name: "Ann Admin", role: "admin" },
      }),
      201,
    );
    assert.equal(created.user.role, "admin");
    assert.deepEqual(created.api_key.scopes, ["users.write"]);
    const me = await dataOf<Me>(await relay.request("/api/v1/me", { key: created.api_key.secret }), 200);
    assert.deepEqual(me.key.scopes, ["users.write"]);
    // What the old first key could do, and the narrow key could not:
    await expectError(
      await relay.request("/api/v1/api-keys", {
        key: created.api_key.secret,
        method: "POST",
        json: { name: "x", scopes: ["keys.write"] },
      }),
      403,
      "FORBIDDEN",
      /keys\.write/,
    );
    await expectError(
      await relay.request("/api/v1/agents", { key: created.api_key.secret }),
      403,
      "FORBIDDEN",
      /agents\.read/,
    );
  });

  test("the first key holds the role's scopes that the calling key also holds, in the catalogue's order", async () => {
    const some = await ownerKey(relay, ["messages.read", "users.write", "tab.complete", "agents.write"]);
    const created = await dataOf<UserCreated>(
      await relay.request("/api/v1/users", {
        key: some.secret,
        method: "POST",
        json: { name: "Max Member", role: "member" },
      }),
      201,
    );
    // users.write is beyond a member's role, so it is not handed on even though the caller holds it.
    assert.deepEqual(created.api_key.scopes, ["tab.complete", "messages.read", "agents.write"]);
  });

  test("when the two share no scope, the person is added with a key that holds none", async () => {
    const narrow = await ownerKey(relay, ["users.write"]);
    const created = await dataOf<UserCreated>(
      await relay.request("/api/v1/users", {
        key: narrow.secret,
        method: "POST",
        json: { name: "Gus Guest", role: "guest" },
      }),
      201,
    );
    assert.deepEqual(created.api_key.scopes, []);
    const me = await dataOf<Me>(await relay.request("/api/v1/me", { key: created.api_key.secret }), 200);
    assert.deepEqual([me.user.id, me.key.scopes], [created.user.id, []]);
    await expectError(
      await relay.request("/api/v1/conversations", { key: created.api_key.secret }),
      403,
      "FORBIDDEN",
      /messages\.read/,
    );
    const people = await dataOf<User[]>(await relay.request("/api/v1/users"), 200);
    assert.ok(
      people.some((person) => person.id === created.user.id),
      "the guest is in the workspace",
    );
  });

  test("a key with every scope still gives the first key every scope of the role", async () => {
    const created = await dataOf<UserCreated>(
      await relay.request("/api/v1/users", { method: "POST", json: { name: "Gina Guest", role: "guest" } }),
      201,
    );
    assert.deepEqual(created.api_key.scopes, [
      "workspace.read",
      "apps.read",
      "files.read",
      "tab.complete",
      "messages.read",
      "messages.write",
    ]);
  });
});

describe("revoking keys: only an owner may revoke an owner's key", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" } });
  });
  after(() => relay.close());

  const revoke = (key: string, id: string) => relay.request(`/api/v1/api-keys/${id}`, { key, method: "DELETE" });

  test("an admin gets 403 for the owner's key, which keeps working", async () => {
    const admin = await createUser(relay, "Ada Admin", "admin");
    await expectError(
      await revoke(admin.key, await keyIdOf(relay, relay.apiKey)),
      403,
      "FORBIDDEN",
      /Only an owner can revoke an owner's key/,
    );
    const spare = await ownerKey(relay, ["tab.complete"]);
    await expectError(await revoke(admin.key, spare.id), 403, "FORBIDDEN", /owner's key/);
    assert.equal((await relay.request("/api/v1/me")).status, 200);
    assert.equal((await relay.request("/api/v1/me", { key: spare.secret })).status, 200);
  });

  test("another owner may revoke an owner's key", async () => {
    const second = await createUser(relay, "Otto Owner", "owner");
    const spare = await ownerKey(relay, ["tab.complete"]);
    const revoked = await dataOf<ApiKey>(await revoke(second.key, spare.id), 200);
    assert.equal(revoked.id, spare.id);
    assert.notEqual(revoked.revoked_at, null);
    assert.equal((await relay.request("/api/v1/me", { key: spare.secret })).status, 401);
  });

  test("admins still revoke admins' and members' keys, and anyone revokes their own", async () => {
    const admin = await createUser(relay, "Abe Admin", "admin");
    const other = await createUser(relay, "Alma Admin", "admin");
    const member = await createUser(relay, "Mia Member", "member");
    const guest = await createUser(relay, "Gil Guest", "guest");
    await dataOf(await revoke(admin.key, await keyIdOf(relay, other.key)), 200);
    await dataOf(await revoke(admin.key, await keyIdOf(relay, member.key)), 200);
    assert.equal((await relay.request("/api/v1/me", { key: other.key })).status, 401);
    assert.equal((await relay.request("/api/v1/me", { key: member.key })).status, 401);
    // A guest holds no keys.write, and needs none to revoke the key it calls with.
    await dataOf(await revoke(guest.key, await keyIdOf(relay, guest.key)), 200);
    await dataOf(await revoke(admin.key, await keyIdOf(relay, admin.key)), 200);
    assert.equal((await relay.request("/api/v1/me", { key: admin.key })).status, 401);
  });
});

describe("removing a person pauses the agents they own", () => {
  let relay: TestRelay;
  let receiver: WebhookReceiver;
  const sockets: WebSocket[] = [];
  before(async () => {
    relay = await startTestRelay({
      env: {
        TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
        TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000,agent_reads=100000,agent_posts=100000",
      },
    });
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    for (const socket of sockets) socket.terminate();
    await relay.close();
    await receiver.close();
  });

  /** Names of the agents whose events reached the receiver, in arrival order. */
  const deliveredTo = () =>
    receiver.deliveries.map((delivery) => (JSON.parse(delivery.body) as WebhookEvent).agent.name);

  async function agentState(id: string): Promise<string | undefined> {
    const agents = await dataOf<Agent[]>(await relay.request("/api/v1/agents"), 200);
    return agents.find((agent) => agent.id === id)?.state;
  }

  test("their tokens get 403 AGENT_PAUSED, their sockets close with 4003, mentions queue nothing, and an admin may resume them", async () => {
    const mel = await createUser(relay, "Mel Member", "member");
    const admin = await createUser(relay, "Ari Admin", "admin");
    const channel = await createChannel(relay, "ops");
    const hooked = await createAgent(relay, { name: "Mel Hook", webhook_url: receiver.url }, mel.key);
    const socketed = await createAgent(relay, { name: "Mel Socket" }, mel.key);
    const witness = await createAgent(relay, { name: "Olive Bot", webhook_url: receiver.url });
    for (const agent of [hooked, socketed, witness]) await addMember(relay, channel.id, { agent_id: agent.agent.id });

    const socket = new WebSocket(`${relay.url.replace(/^http/, "ws")}/api/v1/agent-api/socket`, {
      headers: { authorization: `Bearer ${socketed.token}` },
    });
    sockets.push(socket);
    const closed = new Promise<[number, string]>((resolve) =>
      socket.on("close", (code, reason) => resolve([code, String(reason)])),
    );
    await once(socket, "message");

    // Before: Mel's agent is reached like any other.
    await postMessage(relay, channel, "@Mel Hook are you there?");
    await receiver.waitFor(1);
    assert.deepEqual(deliveredTo(), ["Mel Hook"]);

    const removed = await dataOf<UserRemoved>(
      await relay.request(`/api/v1/users/${mel.id}`, { method: "DELETE" }),
      200,
    );
    assert.deepEqual([removed.id, removed.removed], [mel.id, true]);
    assert.equal(await agentState(hooked.agent.id), "paused");
    assert.equal(await agentState(socketed.agent.id), "paused");
    assert.equal(await agentState(witness.agent.id), "active", "other people's agents are untouched");
    for (const token of [hooked.token, socketed.token]) {
      const me = await agentRequest(relay, token, "/me");
      assert.equal(me.status, 403);
      assert.equal((await errorOf(me)).code, "AGENT_PAUSED");
    }
    assert.deepEqual(await closed, [4003, "agent paused"]);
    assert.deepEqual([...removed.paused_agent_ids].sort(), [hooked.agent.id, socketed.agent.id].sort());

    // A mention of the paused agent queues nothing: the witness's later event arrives, and nothing for Mel's.
    await postMessage(relay, channel, "@Mel Hook and @Mel Socket, the build broke");
    await postMessage(relay, channel, "@Olive Bot the build broke");
    await receiver.waitFor(2);
    // Deliveries come only from the outbox: with no event queued for Mel's agents, none can be on its way.
    const log = await dataOf<Delivery[]>(await relay.request(`/api/v1/agents/${hooked.agent.id}/deliveries`), 200);
    assert.equal(log.length, 1, "only the event from before the removal");
    assert.deepEqual(
      await dataOf<Delivery[]>(await relay.request(`/api/v1/agents/${socketed.agent.id}/deliveries`), 200),
      [],
    );
    assert.deepEqual(deliveredTo(), ["Mel Hook", "Olive Bot"]);

    // They become the managers' to look after: an admin may resume one, and its token works again.
    const resumed = await dataOf<Agent>(
      await relay.request(`/api/v1/agents/${hooked.agent.id}/resume`, { key: admin.key, method: "POST" }),
      200,
    );
    assert.deepEqual([resumed.state, resumed.can_manage], ["active", true]);
    assert.equal((await agentRequest(relay, hooked.token, "/me")).status, 200);
    await postMessage(relay, channel, "@Mel Hook welcome back");
    await receiver.waitFor(3);
    assert.deepEqual(deliveredTo(), ["Mel Hook", "Olive Bot", "Mel Hook"]);
  });

  test("a person without agents is removed as before, pausing nothing", async () => {
    const guest = await createUser(relay, "Gwen Guest", "guest");
    const removed = await dataOf<UserRemoved>(
      await relay.request(`/api/v1/users/${guest.id}`, { method: "DELETE" }),
      200,
    );
    assert.deepEqual(removed.paused_agent_ids, []);
    assert.equal((await relay.request("/api/v1/me", { key: guest.key })).status, 403);
  });
});

describe("removing the workspace's last owner over the API (docs/api.md, DELETE /users/{id})", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" } });
  });
  after(() => relay.close());

  test("the owner removing themselves gets 400 and an admin gets 403; no caller reaches the last-owner 409", async () => {
    const me = await dataOf<Me>(await relay.request("/api/v1/me"), 200);
    await expectError(
      await relay.request(`/api/v1/users/${me.user.id}`, { method: "DELETE" }),
      400,
      "VALIDATION_ERROR",
      /path\.id: you cannot remove yourself/,
    );
    const admin = await createUser(relay, "Ada Admin", "admin");
    await expectError(
      await relay.request(`/api/v1/users/${me.user.id}`, { key: admin.key, method: "DELETE" }),
      403,
      "FORBIDDEN",
      /Only an owner can remove an owner/,
    );
    assert.equal((await relay.request("/api/v1/me")).status, 200, "the last owner is still there");
  });
});
