import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { FakeClock } from "@tab-relay/shared/testing";
import { createLinks } from "../links";
import { createSortableIds } from "../store/sortableIds";
import { openSqliteStore } from "../store/sqlite";
import type { Conversation, Store, Workspace } from "../store/types";
import { createConversationService } from "./service";

const clock = new FakeClock(Date.parse("2026-11-27T12:00:00.000Z"));
const ids = createSortableIds(clock);
const at = new Date(clock.now()).toISOString();
let store: Store;
let workspace: Workspace;
const agents: string[] = [];

before(async () => {
  store = await openSqliteStore(":memory:");
  workspace = await store.workspaces.create({ id: "ws_1", slug: "acme", name: "Acme", createdAt: at });
  await store.users.create({ id: "usr_1", workspaceId: workspace.id, name: "Olive", role: "owner", createdAt: at });
  for (let i = 0; i < 60; i++) {
    const agent = await store.agents.create({
      id: ids("agt"),
      workspaceId: workspace.id,
      ownerUserId: "usr_1",
      name: `bot-${String(i).padStart(2, "0")}`,
      description: "",
      webhookUrl: `http://agents.test/${i}`,
      tokenHash: `hash-${i}`,
      tokenHint: "hint",
      signingSecret: "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0",
      createdAt: at,
    });
    agents.push(agent.id);
  }
});
after(() => store.close());

async function channel(name: string, visibility: "public" | "private", members: readonly string[]) {
  const conversation: Conversation = {
    id: ids("cnv"),
    workspace_id: workspace.id,
    type: "channel",
    name,
    visibility,
    created_by: "usr_1",
    created_at: at,
  };
  await store.conversations.create({ ...conversation, dm_key: null });
  for (const id of members) await store.conversations.addMember(conversation.id, { id, type: "agent" }, at);
  return conversation;
}

/** The service over a store that counts how often a conversation's whole member list is read. */
function service() {
  const woken: (readonly string[])[] = [];
  let listed = 0;
  const counting: Store = {
    ...store,
    transaction: (fn) =>
      store.transaction((tx) =>
        fn({
          ...tx,
          conversations: {
            ...tx.conversations,
            members: (id) => {
              listed++;
              return tx.conversations.members(id);
            },
          },
        }),
      ),
  };
  const conversations = createConversationService({
    store: counting,
    clock,
    ids,
    links: createLinks(undefined),
    eventsQueued: (agentIds) => woken.push(agentIds),
    posted: () => undefined,
  });
  return { conversations, woken, listed: () => listed };
}

const olive = { id: "usr_1", type: "user" as const, name: "Olive" };
const pendingFor = async (agentId: string) =>
  (await store.events.listForAgent(agentId, 10)).filter((event) => event.status === "pending").length;

test("a post in a large channel queues events for the agents it names, without reading every member, and wakes delivery for them", async () => {
  const big = await channel("big", "public", agents.slice(0, 50));
  const { conversations, woken, listed } = service();
  await conversations.post({ workspace, conversation: big, author: olive, text: "@bot-03 and @bot-07, a look?" });
  assert.equal(listed(), 0, "the channel's member list is not read");
  assert.deepEqual(woken, [[agents[3], agents[7]]]);
  assert.equal(await pendingFor(agents[3] as string), 1);
  assert.equal(await pendingFor(agents[7] as string), 1);
  assert.equal(await pendingFor(agents[4] as string), 0, "an agent not named gets nothing");

  // Naming an agent outside a public channel brings it in; outside a private one, it is not addressed.
  await conversations.post({ workspace, conversation: big, author: olive, text: "@bot-55 join us" });
  assert.equal(await store.conversations.isMember(big.id, agents[55] as string), true);
  assert.equal(await pendingFor(agents[55] as string), 1);
  const closed = await channel("closed", "private", agents.slice(0, 2));
  await conversations.post({ workspace, conversation: closed, author: olive, text: "@bot-56 @bot-01 hi" });
  assert.equal(await store.conversations.isMember(closed.id, agents[56] as string), false);
  assert.equal(await pendingFor(agents[56] as string), 0);
  assert.deepEqual(woken.at(-1), [agents[1]]);
});

test("a reply in a thread addresses the agents that wrote in it", async () => {
  const room = await channel("room", "public", agents.slice(10, 13));
  const { conversations, woken } = service();
  const root = await conversations.post({ workspace, conversation: room, author: olive, text: "a question" });
  for (const index of [10, 11]) {
    const agent = { id: agents[index] as string, type: "agent" as const, name: `bot-${index}` };
    await conversations.post({ workspace, conversation: room, author: agent, text: "an answer", threadId: root.id });
  }
  await conversations.post({ workspace, conversation: room, author: olive, text: "thanks", threadId: root.id });
  assert.deepEqual([...(woken.at(-1) ?? [])].sort(), [agents[10], agents[11]].sort());
  assert.equal(await pendingFor(agents[12] as string), 0, "a member that did not write in the thread gets nothing");
});
