import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { AgentApiConversation, AgentCreated, Conversation, DataBody } from "@tab-relay/shared/api";
import { type TestRelay, startTestRelay } from "../support/relayHarness";
import { agentRequest, createAgent, createDm, createUser } from "../support/workspace";

/**
 * Listing conversations names the members of every DM. Reading the workspace's whole directory once per DM made
 * the list cost (DMs × people): with 500 people and 300 DMs one `GET /conversations` held the event loop for
 * 0.7-1.3 s, a stall every request on the relay waited out. The directory is read once per list.
 */
describe("listing conversations reads the directory once, however many DMs", () => {
  let relay: TestRelay;
  let agent: AgentCreated;
  const people: { id: string; name: string }[] = [];
  let directoryReads = 0;

  before(async () => {
    relay = await startTestRelay();
    for (let i = 0; i < 6; i++) {
      const { id, name } = await createUser(relay, `Person ${i}`, "member");
      people.push({ id, name });
    }
    agent = await createAgent(relay, { name: "Lister" });
    // Every pair of people with the owner (15) and the agent with each person (6): 21 DMs of the owner, 6 of the agent.
    for (let i = 0; i < people.length; i++) {
      for (let j = i + 1; j < people.length; j++)
        await createDm(relay, [people[i]?.id as string, people[j]?.id as string]);
      await createDm(relay, [agent.agent.id, people[i]?.id as string]);
    }
    const conversations = relay.relay.store.conversations;
    const directory = conversations.directory.bind(conversations);
    conversations.directory = (workspaceId) => {
      directoryReads++;
      return directory(workspaceId);
    };
  });
  after(() => relay.close());

  test("GET /api/v1/conversations: one read for 21 DMs, every DM with its members' names", async () => {
    directoryReads = 0;
    const response = await relay.request("/api/v1/conversations");
    assert.equal(response.status, 200);
    const { data } = (await response.json()) as DataBody<Conversation[]>;
    const dms = data.filter((c) => c.type === "dm");
    assert.equal(dms.length, 21);
    assert.equal(directoryReads, 1);
    const names = new Map([
      ...people.map((p) => [p.id, p.name] as const),
      [agent.agent.id, "Lister"],
      [relay.user.id, relay.user.name],
    ]);
    for (const dm of dms) {
      assert.ok((dm.members?.length ?? 0) >= 3, JSON.stringify(dm));
      for (const member of dm.members ?? []) assert.equal(member.name, names.get(member.id), JSON.stringify(member));
    }
  });

  test("GET /api/v1/agent-api/conversations: one read for the agent's DMs", async () => {
    directoryReads = 0;
    const response = await agentRequest(relay, agent.token, "/conversations");
    assert.equal(response.status, 200);
    const { data } = (await response.json()) as DataBody<AgentApiConversation[]>;
    assert.equal(data.filter((c) => c.type === "dm").length, people.length);
    assert.equal(directoryReads, 1);
  });

  test("a list with no DM does not read the directory at all", async () => {
    directoryReads = 0;
    const guest = await createUser(relay, "Lonely Guest", "guest");
    const response = await relay.request("/api/v1/conversations", { key: guest.key });
    assert.equal(response.status, 200);
    assert.deepEqual((await response.json()) as { data: unknown[] }, { data: [] });
    assert.equal(directoryReads, 0);
  });
});
