import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type {
  AgentApiConversation,
  AgentApiMessage,
  AgentCreated,
  ChannelMemberAdded,
  Conversation,
  Me,
  Message,
  Notification,
  User,
  UserCreated,
} from "@tab-relay/shared/api";
import { dataOf, expectError, startTestRelay, type TestRelay } from "../support/relayHarness";
import {
  addMember,
  agentRequest,
  createAgent,
  createChannel,
  createDm,
  createUser,
  postMessage,
} from "../support/workspace";

type Person = Awaited<ReturnType<typeof createUser>>;

const ALL_SCOPES = [
  "workspace.read",
  "apps.read",
  "files.read",
  "tab.complete",
  "messages.read",
  "messages.write",
  "agents.read",
  "agents.write",
  "users.write",
  "keys.write",
];
const ROLE_SCOPES: Record<string, string[]> = {
  owner: ALL_SCOPES,
  admin: ALL_SCOPES,
  member: ALL_SCOPES.filter((scope) => scope !== "users.write"),
  guest: ["workspace.read", "apps.read", "files.read", "tab.complete", "messages.read", "messages.write"],
};

describe("people and conversations", () => {
  let relay: TestRelay;
  let admin: Person;
  let mel: Person;
  let max: Person;
  let guest: Person;
  let helper: AgentCreated;

  const get = (path: string, key?: string) => relay.request(`/api/v1${path}`, key ? { key } : {});
  const post = (path: string, json: unknown, key?: string) =>
    relay.request(`/api/v1${path}`, { method: "POST", json, ...(key ? { key } : {}) });
  const messagesPath = (conversation: { type: string; id: string }, query = "") =>
    `/conversations/${conversation.type}/${conversation.id}/messages${query}`;
  const list = async (key?: string) => dataOf<Conversation[]>(await get("/conversations", key), 200);
  const read = async (conversation: { type: string; id: string }, query = "", key?: string) =>
    dataOf<Message[]>(await get(messagesPath(conversation, query), key), 200);
  const notifications = async (key: string, query = "") =>
    dataOf<Notification[]>(await get(`/notifications${query}`, key), 200);

  before(async () => {
    relay = await startTestRelay({
      // The paging test alone posts 75 messages with one key, beyond the default write limit.
      env: { TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true", TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" },
    });
    admin = await createUser(relay, "Ari Admin", "admin");
    mel = await createUser(relay, "Mel Member", "member");
    max = await createUser(relay, "Max Member", "member");
    guest = await createUser(relay, "Gus Guest", "guest");
    helper = await createAgent(relay, { name: "Helper Bot" });
  });
  after(() => relay.close());

  describe("users", () => {
    test("an owner adds people of every role, each with a first key that works and holds the role's scopes", async () => {
      for (const role of ["owner", "admin", "member", "guest"]) {
        const { user, api_key } = await dataOf<UserCreated>(await post("/users", { name: `New ${role}`, role }), 201);
        assert.equal(user.name, `New ${role}`);
        assert.equal(user.role, role);
        assert.match(user.created_at, /^\d{4}-\d{2}-\d{2}T/);
        assert.match(api_key.secret, /^svc_ws_/);
        assert.deepEqual([...api_key.scopes].sort(), [...(ROLE_SCOPES[role] as string[])].sort());
        const me = await dataOf<Me>(await get("/me", api_key.secret), 200);
        assert.equal(me.user.id, user.id);
        assert.equal(me.user.role, role);
        assert.equal(me.key.id, api_key.id);
        assert.deepEqual([...me.key.scopes].sort(), [...(ROLE_SCOPES[role] as string[])].sort());
      }
    });

    test("an admin adds members and admins but not owners", async () => {
      await dataOf(await post("/users", { name: "Admin-made Member", role: "member" }, admin.key), 201);
      await dataOf(await post("/users", { name: "Admin-made Admin", role: "admin" }, admin.key), 201);
      await expectError(await post("/users", { name: "Admin-made Owner", role: "owner" }, admin.key), 403, "FORBIDDEN");
      const users = await dataOf<User[]>(await get("/users"), 200);
      assert.ok(!users.some((user) => user.name === "Admin-made Owner"), "the refused owner was not created");
    });

    test("members and guests cannot add people", async () => {
      await expectError(await post("/users", { name: "Sneaky", role: "member" }, mel.key), 403, "FORBIDDEN");
      await expectError(await post("/users", { name: "Sneaky", role: "guest" }, guest.key), 403, "FORBIDDEN");
    });

    test("a new user needs a name and a known role", async () => {
      await expectError(await post("/users", { name: "Root", role: "superuser" }), 400, "VALIDATION_ERROR", /role/);
      await expectError(await post("/users", { name: "  ", role: "member" }), 400, "VALIDATION_ERROR", /name/);
    });

    test("a removed user's key gets 403 FORBIDDEN on its next request", async () => {
      const leaver = await createUser(relay, "Lee Leaver", "member");
      await dataOf(await get("/me", leaver.key), 200);
      assert.deepEqual(await dataOf(await relay.request(`/api/v1/users/${leaver.id}`, { method: "DELETE" }), 200), {
        id: leaver.id,
        removed: true,
        paused_agent_ids: [],
      });
      await expectError(await get("/me", leaver.key), 403, "FORBIDDEN");
      await expectError(await get("/conversations", leaver.key), 403, "FORBIDDEN");
      const users = await dataOf<User[]>(await get("/users"), 200);
      assert.ok(!users.some((user) => user.id === leaver.id), "a removed user is no longer listed");
      await expectError(await relay.request(`/api/v1/users/${leaver.id}`, { method: "DELETE" }), 404, "NOT_FOUND");
    });

    test("nobody can remove themselves, and only an owner removes an owner", async () => {
      await expectError(
        await relay.request(`/api/v1/users/${relay.user.id}`, { method: "DELETE" }),
        400,
        "VALIDATION_ERROR",
        /path\.id/,
      );
      await expectError(
        await relay.request(`/api/v1/users/${admin.id}`, { method: "DELETE", key: admin.key }),
        400,
        "VALIDATION_ERROR",
        /path\.id/,
      );
      await expectError(
        await relay.request(`/api/v1/users/${relay.user.id}`, { method: "DELETE", key: admin.key }),
        403,
        "FORBIDDEN",
      );
      await expectError(
        await relay.request(`/api/v1/users/${max.id}`, { method: "DELETE", key: mel.key }),
        403,
        "FORBIDDEN",
      );
      await dataOf(await get("/me"), 200);
      await dataOf(await get("/me", admin.key), 200);
      await dataOf(await get("/me", max.key), 200);
    });

    test("GET /users lists the workspace's people with their roles", async () => {
      const users = await dataOf<User[]>(await get("/users", guest.key), 200);
      const byId = new Map(users.map((user) => [user.id, user]));
      assert.deepEqual(byId.get(relay.user.id), {
        id: relay.user.id,
        name: "Olive Owner",
        role: "owner",
        created_at: relay.user.created_at,
      });
      for (const person of [admin, mel, max, guest]) {
        const listed = byId.get(person.id);
        assert.deepEqual(listed && { id: listed.id, name: listed.name, role: listed.role }, {
          id: person.id,
          name: person.name,
          role: person.role,
        });
        assert.match(listed?.created_at ?? "", /^\d{4}-\d{2}-\d{2}T/);
      }
    });
  });

  describe("channels", () => {
    test("a channel is created public by default with a leading # stripped and its creator as a member", async () => {
      const channel = await dataOf<Conversation>(await post("/channels", { name: "#launch" }), 201);
      assert.equal(channel.type, "channel");
      assert.match(channel.id, /\S/);
      assert.equal(channel.name, "#launch");
      assert.equal(channel.visibility, "public");
      assert.equal(channel.is_member, true);
      assert.match(channel.created_at, /^\d{4}-\d{2}-\d{2}T/);
      assert.deepEqual(channel.members, [{ id: relay.user.id, type: "user", name: "Olive Owner" }]);
    });

    test("a private channel is created private, by any member", async () => {
      const channel = await dataOf<Conversation>(
        await post("/channels", { name: "mel-private", visibility: "private" }, mel.key),
        201,
      );
      assert.equal(channel.visibility, "private");
      assert.equal(channel.name, "#mel-private");
      assert.deepEqual(
        channel.members?.map((member) => member.id),
        [mel.id],
      );
    });

    test("a second channel with the same name is 409 CONFLICT", async () => {
      await createChannel(relay, "dup-name");
      await expectError(await post("/channels", { name: "dup-name" }), 409, "CONFLICT", /name/);
      await expectError(
        await post("/channels", { name: "#dup-name", visibility: "private" }, mel.key),
        409,
        "CONFLICT",
        /name/,
      );
    });

    for (const name of ["has space", "", "#", "dots.not.allowed", "-leading-dash", "a".repeat(81), 42]) {
      test(`channel name ${JSON.stringify(name).slice(0, 20)} is 400 naming name`, async () => {
        await expectError(await post("/channels", { name }), 400, "VALIDATION_ERROR", /^name: /);
      });
    }

    test("an unknown visibility is 400 naming visibility", async () => {
      await expectError(
        await post("/channels", { name: "vis", visibility: "secret" }),
        400,
        "VALIDATION_ERROR",
        /visibility/,
      );
    });

    test("a guest cannot create a channel", async () => {
      await expectError(await post("/channels", { name: "guest-made" }, guest.key), 403, "FORBIDDEN");
      const names = (await list()).map((conversation) => conversation.name);
      assert.ok(!names.includes("#guest-made"));
    });

    test("a member not in a private channel cannot read, post or see it until added", async () => {
      const secret = await createChannel(relay, "secret-plans", "private");
      await postMessage(relay, secret, "the plan");
      await expectError(await get(messagesPath(secret), mel.key), 403, "FORBIDDEN");
      await expectError(await post(messagesPath(secret), { text: "let me in" }, mel.key), 403, "FORBIDDEN");
      await expectError(await post(`/channels/${secret.id}/members`, { user_id: mel.id }, mel.key), 403, "FORBIDDEN");
      assert.ok(
        !(await list(mel.key)).some((conversation) => conversation.id === secret.id),
        "hidden from GET /conversations",
      );
      assert.equal(
        (await list()).find((conversation) => conversation.id === secret.id)?.is_member,
        true,
        "its creator sees it",
      );

      await addMember(relay, secret.id, { user_id: mel.id });
      assert.equal((await list(mel.key)).find((conversation) => conversation.id === secret.id)?.is_member, true);
      assert.deepEqual(
        (await read(secret, "", mel.key)).map((message) => message.text),
        ["the plan"],
      );
      await dataOf(await post(messagesPath(secret), { text: "I'm in" }, mel.key), 201);
      await expectError(await get(messagesPath(secret), max.key), 403, "FORBIDDEN");
    });

    test("a public channel is listed and readable for non-members, and posting there joins it", async () => {
      const square = await createChannel(relay, "town-square");
      await postMessage(relay, square, "welcome");
      const before_ = (await list(max.key)).find((conversation) => conversation.id === square.id);
      assert.equal(before_?.is_member, false);
      assert.equal(before_?.name, "#town-square");
      assert.deepEqual(
        (await read(square, "", max.key)).map((message) => message.text),
        ["welcome"],
      );
      await dataOf(await post(messagesPath(square), { text: "hi all" }, max.key), 201);
      assert.equal((await list(max.key)).find((conversation) => conversation.id === square.id)?.is_member, true);
      const again = await dataOf<ChannelMemberAdded>(
        await post(`/channels/${square.id}/members`, { user_id: max.id }),
        200,
      );
      assert.equal(again.added, false, "max was already a member");
    });

    test("guests see only the conversations they are in", async () => {
      const lobby = await createChannel(relay, "guest-lobby");
      const open = await createChannel(relay, "open-to-staff");
      await expectError(await get(messagesPath(open), guest.key), 403, "FORBIDDEN");
      await expectError(await post(messagesPath(open), { text: "hello?" }, guest.key), 403, "FORBIDDEN");
      assert.deepEqual(await list(guest.key), []);

      await addMember(relay, lobby.id, { user_id: guest.id });
      const dm = await createDm(relay, [guest.id]);
      const visible = await list(guest.key);
      assert.deepEqual(visible.map((conversation) => conversation.id).sort(), [lobby.id, dm.id].sort());
      assert.ok(visible.every((conversation) => conversation.is_member === true));
      await dataOf(await post(messagesPath(lobby), { text: "thanks for having me" }, guest.key), 201);
      await expectError(await post(`/channels/${lobby.id}/members`, { user_id: max.id }, guest.key), 403, "FORBIDDEN");
    });

    test("users and agents are added to a channel, once", async () => {
      const room = await createChannel(relay, "crew-room", "private");
      const addedUser = await dataOf<ChannelMemberAdded>(
        await post(`/channels/${room.id}/members`, { user_id: mel.id }),
        201,
      );
      assert.equal(addedUser.added, true);
      assert.deepEqual(
        addedUser.members?.map((member) => member.id),
        [relay.user.id, mel.id],
      );
      const addedAgent = await dataOf<ChannelMemberAdded>(
        await post(`/channels/${room.id}/members`, { agent_id: helper.agent.id }),
        201,
      );
      assert.equal(addedAgent.added, true);
      assert.deepEqual(addedAgent.members?.at(-1), { id: helper.agent.id, type: "agent", name: "Helper Bot" });
      const twice = await dataOf<ChannelMemberAdded>(
        await post(`/channels/${room.id}/members`, { agent_id: helper.agent.id }),
        200,
      );
      assert.equal(twice.added, false);
      assert.equal(twice.members?.length, 3);

      const seen = await dataOf<AgentApiConversation[]>(await agentRequest(relay, helper.token, "/conversations"), 200);
      assert.ok(
        seen.some((conversation) => conversation.id === room.id),
        "the agent now sees the channel",
      );
    });

    test("adding an unknown or wrong kind of member is 400 naming the field", async () => {
      const room = await createChannel(relay, "add-checks");
      await expectError(
        await post(`/channels/${room.id}/members`, { user_id: "usr_nobody" }),
        400,
        "VALIDATION_ERROR",
        /^user_id: /,
      );
      await expectError(
        await post(`/channels/${room.id}/members`, { agent_id: "agt_nobody" }),
        400,
        "VALIDATION_ERROR",
        /^agent_id: /,
      );
      await expectError(
        await post(`/channels/${room.id}/members`, { user_id: helper.agent.id }),
        400,
        "VALIDATION_ERROR",
        /^user_id: /,
      );
      await expectError(
        await post(`/channels/${room.id}/members`, { agent_id: mel.id }),
        400,
        "VALIDATION_ERROR",
        /^agent_id: /,
      );
      await expectError(
        await post(`/channels/${room.id}/members`, { user_id: mel.id, agent_id: helper.agent.id }),
        400,
        "VALIDATION_ERROR",
        /user_id.*agent_id/,
      );
      await expectError(await post(`/channels/${room.id}/members`, {}), 400, "VALIDATION_ERROR", /user_id.*agent_id/);
      await expectError(await post(`/channels/ch_nowhere/members`, { user_id: mel.id }), 404, "NOT_FOUND");
    });
  });

  describe("DMs", () => {
    test("a DM holds its users and agents and the same set always returns the same DM", async () => {
      const created = await dataOf<Conversation>(await post("/dms", { member_ids: [mel.id, helper.agent.id] }), 201);
      assert.equal(created.type, "dm");
      assert.equal(created.name, null);
      assert.equal(created.visibility, null);
      assert.deepEqual(
        created.members?.map((member) => `${member.type}:${member.id}`).sort(),
        [`user:${relay.user.id}`, `user:${mel.id}`, `agent:${helper.agent.id}`].sort(),
      );

      const sameFromMel = await dataOf<Conversation>(
        await post("/dms", { member_ids: [helper.agent.id, relay.user.id] }, mel.key),
        200,
      );
      assert.equal(sameFromMel.id, created.id);
      const sameWithSelf = await dataOf<Conversation>(
        await post("/dms", { member_ids: [relay.user.id, mel.id, helper.agent.id] }),
        200,
      );
      assert.equal(sameWithSelf.id, created.id);
      const pair = await dataOf<Conversation>(await post("/dms", { member_ids: [mel.id] }), 201);
      assert.notEqual(pair.id, created.id, "a different set is a different DM");

      const agentSees = await dataOf<AgentApiConversation[]>(
        await agentRequest(relay, helper.token, "/conversations"),
        200,
      );
      assert.ok(agentSees.some((conversation) => conversation.id === created.id));
      assert.ok(!agentSees.some((conversation) => conversation.id === pair.id));
    });

    test("someone outside a DM cannot read, post to or see it", async () => {
      const dm = await createDm(relay, [mel.id]);
      await postMessage(relay, dm, "just us");
      await expectError(await get(messagesPath(dm), max.key), 403, "FORBIDDEN");
      await expectError(await post(messagesPath(dm), { text: "me too" }, max.key), 403, "FORBIDDEN");
      await expectError(await get(messagesPath(dm), admin.key), 403, "FORBIDDEN");
      assert.ok(!(await list(max.key)).some((conversation) => conversation.id === dm.id));
      assert.deepEqual(
        (await read(dm, "", mel.key)).map((message) => message.text),
        ["just us"],
      );
    });

    test("DM member ids must name someone else in the workspace", async () => {
      await expectError(await post("/dms", { member_ids: [] }), 400, "VALIDATION_ERROR", /member_ids/);
      await expectError(await post("/dms", { member_ids: [relay.user.id] }), 400, "VALIDATION_ERROR", /member_ids/);
      await expectError(
        await post("/dms", { member_ids: [mel.id, "usr_nobody"] }),
        400,
        "VALIDATION_ERROR",
        /member_ids\[1\]/,
      );
    });
  });

  describe("messages", () => {
    test("a posted message carries its conversation, author, mentions and link", async () => {
      const room = await createChannel(relay, "shape");
      const message = await dataOf<Message>(
        await post(messagesPath(room), { text: "hey @mel member and <@" + helper.agent.id + ">" }),
        201,
      );
      assert.deepEqual(message.conversation, { type: "channel", id: room.id });
      assert.equal(message.thread_id, null);
      assert.deepEqual(message.author, { id: relay.user.id, type: "user", name: "Olive Owner" });
      assert.deepEqual(message.mentions, [
        { id: mel.id, type: "user", name: "Mel Member" },
        { id: helper.agent.id, type: "agent", name: "Helper Bot" },
      ]);
      assert.equal(message.aside, false);
      assert.ok(message.url.endsWith(`/conversations/channel/${room.id}/messages/${message.id}`), message.url);
      assert.deepEqual(await read(room), [message]);
    });

    test("messages list newest first and `before` pages through 75 of them without gaps or repeats", async () => {
      const room = await createChannel(relay, "history");
      const posted: string[] = [];
      for (let i = 1; i <= 75; i++) posted.push((await postMessage(relay, room, `m${i}`)).id);
      const newestFirst = [...posted].reverse();

      const first = await read(room);
      assert.equal(first.length, 30, "the default limit is 30");
      assert.deepEqual(
        first.map((message) => message.text),
        Array.from({ length: 30 }, (_, i) => `m${75 - i}`),
      );

      const seen: string[] = [];
      const pageSizes: number[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await read(room, `?limit=30${cursor ? `&before=${cursor}` : ""}`);
        if (page.length === 0) break;
        if (cursor !== undefined)
          assert.ok(
            page.every((message) => message.id < (cursor as string)),
            "strictly older than before",
          );
        pageSizes.push(page.length);
        seen.push(...page.map((message) => message.id));
        cursor = page.at(-1)?.id;
        assert.ok(pageSizes.length <= 4, "paging ends");
      }
      assert.deepEqual(pageSizes, [30, 30, 15]);
      assert.deepEqual(seen, newestFirst);

      const beforeM40 = await read(room, `?limit=3&before=${posted[39]}`);
      assert.deepEqual(
        beforeM40.map((message) => message.text),
        ["m39", "m38", "m37"],
      );
      assert.equal((await read(room, "?limit=100")).length, 75);
      assert.deepEqual(
        (await read(room, "?limit=1")).map((message) => message.text),
        ["m75"],
      );
      assert.deepEqual(await read(room, `?before=${posted[0]}`), []);
    });

    for (const limit of ["0", "101", "abc", "1.5", "-1", ""]) {
      test(`limit=${JSON.stringify(limit)} is 400 naming query.limit`, async () => {
        const room = {
          type: "channel",
          id: (await list()).find((conversation) => conversation.name === "#launch")?.id ?? "",
        };
        await expectError(await get(messagesPath(room, `?limit=${limit}`)), 400, "VALIDATION_ERROR", /query\.limit/);
      });
    }

    test("a reply to a reply lands in the root's thread and thread_id lists the root and its replies", async () => {
      const room = await createChannel(relay, "threads");
      const root = await postMessage(relay, room, "root");
      const unrelated = await postMessage(relay, room, "unrelated");
      const reply = await postMessage(relay, room, "first reply", { thread_id: root.id });
      const replyToReply = await postMessage(relay, room, "reply to the reply", { thread_id: reply.id, key: mel.key });
      const other = await postMessage(relay, room, "another thread", { thread_id: unrelated.id });
      assert.equal(root.thread_id, null);
      assert.equal(reply.thread_id, root.id);
      assert.equal(replyToReply.thread_id, root.id);
      assert.equal(other.thread_id, unrelated.id);

      assert.deepEqual(
        (await read(room, `?thread_id=${root.id}`)).map((message) => message.id),
        [replyToReply.id, reply.id, root.id],
      );
      assert.deepEqual(
        (await read(room, `?thread_id=${root.id}&limit=2`)).map((message) => message.id),
        [replyToReply.id, reply.id],
      );
      assert.deepEqual(
        (await read(room, `?thread_id=${root.id}&before=${reply.id}`)).map((message) => message.id),
        [root.id],
      );
      assert.equal((await read(room)).length, 5, "without thread_id every message is listed");
    });

    test("a thread_id that is not a message of the conversation is 400 naming thread_id", async () => {
      const room = await createChannel(relay, "thread-checks");
      const elsewhere = await createChannel(relay, "thread-elsewhere");
      const foreign = await postMessage(relay, elsewhere, "not here");
      await expectError(
        await post(messagesPath(room), { text: "reply", thread_id: "msg_nothing" }),
        400,
        "VALIDATION_ERROR",
        /thread_id/,
      );
      await expectError(
        await post(messagesPath(room), { text: "reply", thread_id: foreign.id }),
        400,
        "VALIDATION_ERROR",
        /thread_id/,
      );
      assert.deepEqual(await read(room), [], "nothing was posted");
    });

    test("empty, blank, missing and over-long text is 400 naming text; 8000 characters is fine", async () => {
      const room = await createChannel(relay, "text-checks");
      for (const body of [{ text: "" }, { text: "  \n\t " }, { text: "x".repeat(8001) }, { text: 42 }]) {
        await expectError(await post(messagesPath(room), body), 400, "VALIDATION_ERROR", /^text: /);
      }
      await expectError(await post(messagesPath(room), {}), 400, "VALIDATION_ERROR", /^text is required$/);
      const longest = await dataOf<Message>(await post(messagesPath(room), { text: "y".repeat(8000) }), 201);
      assert.equal(longest.text.length, 8000);
      assert.deepEqual(
        (await read(room)).map((message) => message.id),
        [longest.id],
      );
    });

    test("an unknown conversation is 404", async () => {
      for (const path of ["/conversations/channel/ch_nowhere/messages", "/conversations/dm/dm_nowhere/messages"]) {
        await expectError(await get(path), 404, "NOT_FOUND");
        await expectError(await post(path, { text: "anyone?" }), 404, "NOT_FOUND");
      }
    });

    test("a conversation type other than channel or dm is 400 naming path.type", async () => {
      await expectError(await get("/conversations/group/ch_x/messages"), 400, "VALIDATION_ERROR", /path\.type/);
      await expectError(
        await post("/conversations/group/ch_x/messages", { text: "hi" }),
        400,
        "VALIDATION_ERROR",
        /path\.type/,
      );
    });
  });

  describe("/aside", () => {
    test("an /aside is stored without its prefix, marked aside, shown to people and hidden from agents", async () => {
      const room = await createChannel(relay, "aside-room");
      await addMember(relay, room.id, { user_id: mel.id });
      await addMember(relay, room.id, { agent_id: helper.agent.id });
      const normal = await postMessage(relay, room, "for everyone");
      const aside = await dataOf<Message>(await post(messagesPath(room), { text: "/aside just between us" }), 201);
      assert.equal(aside.aside, true);
      assert.equal(aside.text, "just between us");

      const melSees = await read(room, "", mel.key);
      assert.deepEqual(
        melSees.map((message) => [message.text, message.aside]),
        [
          ["just between us", true],
          ["for everyone", false],
        ],
      );
      const agentSees = await dataOf<AgentApiMessage[]>(
        await agentRequest(relay, helper.token, messagesPath(room)),
        200,
      );
      assert.deepEqual(
        agentSees.map((message) => message.id),
        [normal.id],
      );
    });

    test("only a leading /aside followed by text makes an aside", async () => {
      const room = await createChannel(relay, "aside-checks");
      await expectError(await post(messagesPath(room), { text: "/aside" }), 400, "VALIDATION_ERROR", /text/);
      await expectError(await post(messagesPath(room), { text: "/aside    " }), 400, "VALIDATION_ERROR", /text/);
      const glued = await dataOf<Message>(await post(messagesPath(room), { text: "/asides are neat" }), 201);
      assert.equal(glued.aside, false);
      assert.equal(glued.text, "/asides are neat");
      const later = await dataOf<Message>(await post(messagesPath(room), { text: "see /aside later" }), 201);
      assert.equal(later.aside, false);
    });
  });

  describe("notifications", () => {
    let nora: Person;
    let nick: Person;
    let notifier: AgentCreated;
    let dm: { type: "dm"; id: string };

    const agentPost = async (conversation: { type: string; id: string }, text: string) =>
      dataOf<AgentApiMessage>(
        await agentRequest(relay, notifier.token, messagesPath(conversation), { method: "POST", json: { text } }),
        201,
      );

    before(async () => {
      nora = await createUser(relay, "Nora North", "member");
      nick = await createUser(relay, "Nick North", "member");
      notifier = await createAgent(relay, { name: "Notifier" });
      dm = await createDm(relay, [nick.id, notifier.agent.id], nora.key);
    });

    test("an agent's DM message notifies each person in the DM once; people's messages and channel posts notify no one", async () => {
      await postMessage(relay, dm, "hello agent", { key: nora.key });
      assert.deepEqual(await notifications(nora.key), [], "a person's message notifies no one");

      const sent = await agentPost(dm, "hello both");
      assert.deepEqual(sent.author, { id: notifier.agent.id, type: "agent", name: "Notifier" });
      for (const person of [nora, nick]) {
        const mine = await notifications(person.key);
        assert.equal(mine.length, 1, `${person.name} has one notification`);
        const [notification] = mine as [Notification];
        assert.equal(notification.type, "agent.dm");
        assert.match(notification.created_at, /^\d{4}-\d{2}-\d{2}T/);
        assert.equal(notification.message?.id, sent.id);
        assert.equal(notification.message?.text, "hello both");
        assert.deepEqual(notification.message?.conversation, { type: "dm", id: dm.id });
        assert.deepEqual(notification.message?.author, { id: notifier.agent.id, type: "agent", name: "Notifier" });
      }
      assert.deepEqual(await notifications(max.key), [], "someone outside the DM is not notified");

      const room = await createChannel(relay, "notifier-room", "public", nora.key);
      await addMember(relay, room.id, { user_id: nick.id }, nora.key);
      await addMember(relay, room.id, { agent_id: notifier.agent.id }, nora.key);
      await agentPost(room, "hello channel");
      assert.equal((await notifications(nora.key)).length, 1, "a channel post notifies no one");
      assert.equal((await notifications(nick.key)).length, 1, "a channel post notifies no one");
    });

    test("notifications page newest first with limit and before", async () => {
      const sent: string[] = [];
      for (let i = 1; i <= 4; i++) sent.push((await agentPost(dm, `update ${i}`)).id);
      const all = await notifications(nick.key);
      assert.equal(all.length, 5);
      assert.deepEqual(
        all.slice(0, 4).map((notification) => notification.message?.id),
        [...sent].reverse(),
      );

      const seen: string[] = [];
      const sizes: number[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await notifications(nick.key, `?limit=2${cursor ? `&before=${cursor}` : ""}`);
        if (page.length === 0) break;
        sizes.push(page.length);
        seen.push(...page.map((notification) => notification.id));
        cursor = page.at(-1)?.id;
        assert.ok(sizes.length <= 3, "paging ends");
      }
      assert.deepEqual(sizes, [2, 2, 1]);
      assert.deepEqual(
        seen,
        all.map((notification) => notification.id),
      );
      await expectError(await get("/notifications?limit=0", nick.key), 400, "VALIDATION_ERROR", /query\.limit/);
      await expectError(await get("/notifications?limit=101", nick.key), 400, "VALIDATION_ERROR", /query\.limit/);
    });
  });
});
