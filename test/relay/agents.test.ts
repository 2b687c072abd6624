import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SECRET_PREFIXES, generateSecret, hasValidChecksum } from "@tab-relay/shared";
import type {
  Agent,
  AgentApiMe,
  AgentApiMessage,
  AgentCreated,
  AgentRemoved,
  AgentTokenRotated,
  ApiKeyCreated,
  Message,
} from "@tab-relay/shared/api";
import { fakeClock, startTestRelay, type TestRelay } from "../support/relayHarness";
import {
  addMember,
  agentRequest,
  createAgent,
  createChannel,
  createDm,
  createUser,
  postMessage,
} from "../support/workspace";

const TOKEN_SHAPE = /^svc_agent_[0-9A-Za-z]{36}$/;
const SIGNING_SECRET_SHAPE = /^whsec_([A-Za-z0-9+/]+={0,2})$/;
const MESSAGE_FIELDS_FOR_AGENTS = [
  "author",
  "conversation",
  "created_at",
  "id",
  "mentions",
  "text",
  "thread_id",
  "url",
];

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

type Person = { id: string; key: string };

async function read(response: Response): Promise<Reply> {
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

function dataOf<T>(reply: Reply, status = 200): T {
  assert.equal(reply.status, status, reply.text);
  return (reply.json as { data: T }).data;
}

/** Calls the Agent API and checks the rate-limit headers every answer must carry, successes and errors alike. */
async function agentCall(
  relay: TestRelay,
  token: string | null,
  path: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<Reply> {
  const reply = await read(await agentRequest(relay, token, path, init));
  const where = `${init.method ?? "GET"} ${path} → ${reply.status}`;
  for (const name of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) {
    assert.match(reply.headers.get(name) ?? "(missing)", /^\d+$/, `${name} on ${where}`);
  }
  assert.ok(Number(reply.headers.get("x-ratelimit-limit")) >= 1, where);
  return reply;
}

function postText(
  relay: TestRelay,
  token: string | null,
  conversation: { type: string; id: string },
  json: unknown,
): Promise<Reply> {
  return agentCall(relay, token, `/conversations/${conversation.type}/${conversation.id}/messages`, {
    method: "POST",
    json,
  });
}

/** Asserts the answer is exactly `{error: {code, message}}` with this status and code; returns the message. */
function assertError(reply: Reply, status: number, code: string): string {
  assert.equal(reply.status, status, reply.text);
  const body = reply.json as { error: { code: string; message: string } };
  assert.deepEqual(Object.keys(body), ["error"], reply.text);
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message"], reply.text);
  assert.equal(body.error.code, code, reply.text);
  assert.equal(typeof body.error.message, "string");
  assert.ok(body.error.message.length > 0);
  return body.error.message;
}

async function mainCall(
  relay: TestRelay,
  path: string,
  init: RequestInit & { key?: string | null; json?: unknown } = {},
): Promise<Reply> {
  return read(await relay.request(`/api/v1${path}`, init));
}

async function personMessages(
  relay: TestRelay,
  conversation: { type: string; id: string },
  query = "",
  key?: string,
): Promise<Message[]> {
  return dataOf<Message[]>(
    await mainCall(
      relay,
      `/conversations/${conversation.type}/${conversation.id}/messages${query}`,
      key ? { key } : {},
    ),
  );
}

async function agentMessages(
  relay: TestRelay,
  token: string,
  conversation: { type: string; id: string },
  query = "",
): Promise<AgentApiMessage[]> {
  return dataOf<AgentApiMessage[]>(
    await agentCall(relay, token, `/conversations/${conversation.type}/${conversation.id}/messages${query}`),
  );
}

let agentCount = 0;
/** A fresh agent per test, so one test's pause, rotation or removal never reaches another. */
function freshAgent(
  relay: TestRelay,
  prefix: string,
  key?: string,
  extra: { webhook_url?: string; description?: string } = {},
): Promise<AgentCreated> {
  agentCount += 1;
  return createAgent(relay, { name: `${prefix}-${agentCount}`, ...extra }, key);
}

function unknownWellFormedToken(): string {
  return generateSecret(SECRET_PREFIXES.agentToken);
}

describe("agent management and the Agent API", () => {
  let relay: TestRelay;
  let owner: Person;
  let admin: Person;
  let member: Person;
  let otherMember: Person;
  let guest: Person;

  before(async () => {
    // Main-API limits are raised because these tests make many calls with the owner key; agent limits stay default.
    relay = await startTestRelay({
      env: { TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true", TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" },
    });
    owner = { id: relay.user.id, key: relay.apiKey };
    admin = await createUser(relay, "Ada Admin", "admin");
    member = await createUser(relay, "Mia Member", "member");
    otherMember = await createUser(relay, "Otto Other", "member");
    guest = await createUser(relay, "Gus Guest", "guest");
  });
  after(() => relay.close());

  describe("who may connect and manage agents", () => {
    test("owners, admins and members create agents (201); guests get 403", async () => {
      for (const [label, person] of [
        ["owner", owner],
        ["admin", admin],
        ["member", member],
      ] as const) {
        const reply = await mainCall(relay, "/agents", {
          method: "POST",
          key: person.key,
          json: { name: `made-by-${label}` },
        });
        const data = dataOf<AgentCreated>(reply, 201);
        assert.equal(data.agent.owner_user_id, person.id, label);
        assert.equal(data.agent.can_manage, true, label);
      }
      const refused = await mainCall(relay, "/agents", {
        method: "POST",
        key: guest.key,
        json: { name: "made-by-guest" },
      });
      assertError(refused, 403, "FORBIDDEN");
      const names = dataOf<Agent[]>(await mainCall(relay, "/agents")).map((a) => a.name);
      assert.ok(!names.includes("made-by-guest"), "the guest's agent must not exist");
    });

    for (const actor of ["creating member", "owner", "admin"] as const) {
      test(`the ${actor} may patch, pause, resume, rotate and remove a member's agent`, async () => {
        const key = { "creating member": () => member.key, owner: () => owner.key, admin: () => admin.key }[actor]();
        const created = await freshAgent(relay, "managed", member.key, { description: "before" });
        const id = created.agent.id;

        const patched = dataOf<Agent>(
          await mainCall(relay, `/agents/${id}`, {
            method: "PATCH",
            key,
            json: { description: `changed by ${actor}` },
          }),
        );
        assert.equal(patched.description, `changed by ${actor}`);
        assert.equal(patched.can_manage, true);

        assert.equal(
          dataOf<Agent>(await mainCall(relay, `/agents/${id}/pause`, { method: "POST", key })).state,
          "paused",
        );
        assertError(await agentCall(relay, created.token, "/me"), 403, "AGENT_PAUSED");
        assert.equal(
          dataOf<Agent>(await mainCall(relay, `/agents/${id}/resume`, { method: "POST", key })).state,
          "active",
        );
        assert.equal((await agentCall(relay, created.token, "/me")).status, 200);

        const rotated = dataOf<AgentTokenRotated>(
          await mainCall(relay, `/agents/${id}/token`, { method: "POST", key }),
        );
        assert.match(rotated.token, TOKEN_SHAPE);
        assert.equal((await agentCall(relay, rotated.token, "/me")).status, 200);

        const removed = dataOf<AgentRemoved>(await mainCall(relay, `/agents/${id}`, { method: "DELETE", key }));
        assert.deepEqual(removed, { id, removed: true });
        assertError(await agentCall(relay, rotated.token, "/me"), 401, "INVALID_TOKEN");
        assertError(await mainCall(relay, `/agents/${id}`), 404, "NOT_FOUND");
      });
    }

    test("another member gets 403 on every change and the agent stays as it was", async () => {
      const created = await freshAgent(relay, "not-yours", member.key, {
        description: "original",
        webhook_url: "https://example.com/hook",
      });
      const id = created.agent.id;
      const other = { key: otherMember.key };

      assertError(
        await mainCall(relay, `/agents/${id}`, { method: "PATCH", ...other, json: { description: "hijacked" } }),
        403,
        "FORBIDDEN",
      );
      assertError(await mainCall(relay, `/agents/${id}/pause`, { method: "POST", ...other }), 403, "FORBIDDEN");
      assert.equal((await agentCall(relay, created.token, "/me")).status, 200, "still active after a refused pause");

      dataOf(await mainCall(relay, `/agents/${id}/pause`, { method: "POST", key: member.key }));
      assertError(await mainCall(relay, `/agents/${id}/resume`, { method: "POST", ...other }), 403, "FORBIDDEN");
      assertError(await agentCall(relay, created.token, "/me"), 403, "AGENT_PAUSED");
      dataOf(await mainCall(relay, `/agents/${id}/resume`, { method: "POST", key: member.key }));

      assertError(await mainCall(relay, `/agents/${id}/token`, { method: "POST", ...other }), 403, "FORBIDDEN");
      assertError(
        await mainCall(relay, `/agents/${id}/signing-secret`, { method: "POST", ...other }),
        403,
        "FORBIDDEN",
      );
      assertError(await mainCall(relay, `/agents/${id}`, { method: "DELETE", ...other }), 403, "FORBIDDEN");
      assertError(await mainCall(relay, `/agents/${id}/deliveries`, other), 403, "FORBIDDEN");

      const now = dataOf<Agent>(await mainCall(relay, `/agents/${id}`));
      assert.equal(now.description, "original");
      assert.equal(now.state, "active");
      assert.equal((await agentCall(relay, created.token, "/me")).status, 200, "the original token still works");
    });

    test("only managers see webhook_url, token_hint and last_delivery", async () => {
      const created = await freshAgent(relay, "private-bits", member.key, {
        webhook_url: "https://example.com/private-bits",
      });
      const id = created.agent.id;

      const seenByOther = await mainCall(relay, `/agents/${id}`, { key: otherMember.key });
      const otherView = dataOf<Agent>(seenByOther);
      assert.equal(otherView.can_manage, false);
      for (const field of ["webhook_url", "token_hint", "last_delivery"])
        assert.ok(!(field in otherView), `${field} shown to another member`);
      assert.ok(!seenByOther.text.includes("example.com/private-bits"));
      const listed = dataOf<Agent[]>(await mainCall(relay, "/agents", { key: otherMember.key })).find(
        (a) => a.id === id,
      );
      assert.ok(listed);
      assert.equal(listed.can_manage, false);
      assert.ok(!("webhook_url" in listed) && !("token_hint" in listed));

      for (const person of [member, owner, admin]) {
        const view = dataOf<Agent>(await mainCall(relay, `/agents/${id}`, { key: person.key }));
        assert.equal(view.can_manage, true);
        assert.equal(view.webhook_url, "https://example.com/private-bits");
        assert.ok(
          view.token_hint && created.token.startsWith(view.token_hint.split("…")[0] as string),
          `hint ${view.token_hint}`,
        );
      }
    });

    test("a key without agents.write cannot create or change agents, but can still list them", async () => {
      const keyReply = await mainCall(relay, "/api-keys", {
        method: "POST",
        json: { name: "read-only agents", scopes: ["agents.read", "messages.read"] },
      });
      const readOnly = dataOf<ApiKeyCreated>(keyReply, 201).secret;
      const created = await freshAgent(relay, "scoped");
      const id = created.agent.id;

      assertError(
        await mainCall(relay, "/agents", { method: "POST", key: readOnly, json: { name: "scoped-new" } }),
        403,
        "FORBIDDEN",
      );
      assertError(
        await mainCall(relay, `/agents/${id}`, { method: "PATCH", key: readOnly, json: { description: "x" } }),
        403,
        "FORBIDDEN",
      );
      assertError(await mainCall(relay, `/agents/${id}/pause`, { method: "POST", key: readOnly }), 403, "FORBIDDEN");
      assertError(await mainCall(relay, `/agents/${id}/token`, { method: "POST", key: readOnly }), 403, "FORBIDDEN");
      assertError(await mainCall(relay, `/agents/${id}`, { method: "DELETE", key: readOnly }), 403, "FORBIDDEN");
      assert.ok(dataOf<Agent[]>(await mainCall(relay, "/agents", { key: readOnly })).some((a) => a.id === id));
      assert.equal((await agentCall(relay, created.token, "/me")).status, 200);
    });
  });

  describe("creating an agent", () => {
    test("answers a checksummed svc_agent_ token and a whsec_ secret of 32 bytes", async () => {
      const created = await freshAgent(relay, "secrets");
      assert.match(created.token, TOKEN_SHAPE);
      assert.equal(hasValidChecksum(created.token, SECRET_PREFIXES.agentToken), true);
      const base64 = SIGNING_SECRET_SHAPE.exec(created.signing_secret)?.[1];
      assert.ok(base64, `signing secret ${created.signing_secret}`);
      assert.equal(Buffer.from(base64, "base64").length, 32);
      assert.equal(Buffer.from(base64, "base64").toString("base64"), base64, "canonical base64");

      const another = await freshAgent(relay, "secrets");
      assert.notEqual(another.token, created.token);
      assert.notEqual(another.signing_secret, created.signing_secret);
    });

    test("neither the token nor the signing secret is ever shown again", async () => {
      const created = await freshAgent(relay, "shown-once", undefined, { webhook_url: "https://example.com/once" });
      const base64 = created.signing_secret.slice("whsec_".length);
      const tokenBody = created.token.slice("svc_agent_".length);
      for (const path of ["/agents", `/agents/${created.agent.id}`]) {
        for (const key of [owner.key, otherMember.key]) {
          const reply = await mainCall(relay, path, { key });
          assert.equal(reply.status, 200);
          assert.ok(reply.text.includes(created.agent.id));
          for (const secret of [created.token, tokenBody, created.signing_secret, base64]) {
            assert.ok(!reply.text.includes(secret), `${path} shows a secret`);
          }
        }
      }
      const patched = await mainCall(relay, `/agents/${created.agent.id}`, {
        method: "PATCH",
        json: { description: "d" },
      });
      assert.equal(patched.status, 200);
      assert.ok(!patched.text.includes(tokenBody) && !patched.text.includes(base64));
    });

    test("a name already taken, in any case, is 409", async () => {
      await createAgent(relay, { name: "Twin" });
      for (const name of ["Twin", "twin", "  TWIN  "]) {
        assertError(await mainCall(relay, "/agents", { method: "POST", json: { name } }), 409, "CONFLICT");
      }
      const other = await freshAgent(relay, "renamed");
      assertError(
        await mainCall(relay, `/agents/${other.agent.id}`, { method: "PATCH", json: { name: "tWIN" } }),
        409,
        "CONFLICT",
      );
    });

    test("invalid name, description or webhook_url is 400 naming the field", async () => {
      const cases: Array<[unknown, string]> = [
        [{}, "name"],
        [{ name: "" }, "name"],
        [{ name: "   " }, "name"],
        [{ name: "x".repeat(81) }, "name"],
        [{ name: 42 }, "name"],
        [{ name: "valid-desc", description: "d".repeat(501) }, "description"],
        [{ name: "valid-desc", description: 7 }, "description"],
        [{ name: "valid-url", webhook_url: "not a url" }, "webhook_url"],
        [{ name: "valid-url", webhook_url: "ftp://example.com/hook" }, "webhook_url"],
        [{ name: "valid-url", webhook_url: `https://example.com/${"p".repeat(2100)}` }, "webhook_url"],
        [{ name: "valid-url", webhook_url: 12 }, "webhook_url"],
      ];
      for (const [body, field] of cases) {
        const message = assertError(
          await mainCall(relay, "/agents", { method: "POST", json: body }),
          400,
          "VALIDATION_ERROR",
        );
        assert.match(message, new RegExp(`\\b${field}\\b`), `${JSON.stringify(body).slice(0, 80)} → ${message}`);
      }
      assert.equal(
        dataOf<Agent[]>(await mainCall(relay, "/agents")).filter((a) => a.name.startsWith("valid-")).length,
        0,
      );
      const ok = dataOf<AgentCreated>(
        await mainCall(relay, "/agents", {
          method: "POST",
          json: { name: "x".repeat(80), description: "d".repeat(500) },
        }),
        201,
      );
      assert.equal(ok.agent.name, "x".repeat(80));
    });

    test("a PATCH that changes nothing and a body that is not an object are 400 naming the body", async () => {
      const created = await freshAgent(relay, "body-check");
      const empty = assertError(
        await mainCall(relay, `/agents/${created.agent.id}`, { method: "PATCH", json: {} }),
        400,
        "VALIDATION_ERROR",
      );
      assert.match(empty, /^body: give at least one of name, description, webhook_url/);
      for (const body of [[], null, "name", 7]) {
        const message = assertError(
          await mainCall(relay, "/agents", { method: "POST", json: body }),
          400,
          "VALIDATION_ERROR",
        );
        assert.match(message, /^body: /, `${JSON.stringify(body)} → ${message}`);
      }
    });

    test("with allow-private set, a plain-http loopback webhook URL is accepted", async () => {
      const created = await freshAgent(relay, "local-hook", undefined, { webhook_url: "http://127.0.0.1:9/hook" });
      assert.equal(created.agent.webhook_url, "http://127.0.0.1:9/hook");
    });
  });

  describe("Agent API: reading and posting", () => {
    test("GET /me describes the agent and its workspace", async () => {
      const created = await freshAgent(relay, "me", undefined, { description: "answers questions" });
      const reply = await agentCall(relay, created.token, "/me");
      const data = dataOf<AgentApiMe>(reply);
      const full = dataOf<Agent>(await mainCall(relay, `/agents/${created.agent.id}`));
      assert.deepEqual(data.agent, {
        id: created.agent.id,
        name: created.agent.name,
        description: "answers questions",
        state: "active",
        created_at: full.created_at,
      });
      assert.deepEqual(data.workspace, { slug: "acme", name: relay.workspace.name });
      assert.equal(reply.headers.get("x-ratelimit-limit"), "240");
    });

    test("GET /conversations lists only the channels and DMs the agent is in", async () => {
      const created = await freshAgent(relay, "lister");
      assert.deepEqual(dataOf(await agentCall(relay, created.token, "/conversations")), []);
      const joined = await createChannel(relay, "lister-joined");
      await createChannel(relay, "lister-public");
      await createChannel(relay, "lister-private", "private");
      await createDm(relay, [member.id]);
      await addMember(relay, joined.id, { agent_id: created.agent.id });
      const dm = await createDm(relay, [created.agent.id]);

      const list = dataOf<Array<{ type: string; id: string; name: string | null; members?: Array<{ id: string }> }>>(
        await agentCall(relay, created.token, "/conversations"),
      );
      assert.deepEqual(list.map((c) => `${c.type}:${c.id}`).sort(), [`channel:${joined.id}`, `dm:${dm.id}`].sort());
      assert.equal(list.find((c) => c.id === joined.id)?.name, "#lister-joined");
      const dmMembers = list
        .find((c) => c.id === dm.id)
        ?.members?.map((m) => m.id)
        .sort();
      assert.deepEqual(dmMembers, [created.agent.id, owner.id].sort());
    });

    test("the agent reads and posts where it is a member, and people see the post under its name", async () => {
      const created = await freshAgent(relay, "Poster");
      const channel = await createChannel(relay, "poster-room");
      await addMember(relay, channel.id, { agent_id: created.agent.id });
      const dm = await createDm(relay, [created.agent.id], member.key);
      const hello = await postMessage(relay, channel, "hello agent");
      const hi = await postMessage(relay, dm, "hi in private", { key: member.key });

      const inChannel = await agentMessages(relay, created.token, channel);
      assert.deepEqual(
        inChannel.map((m) => m.id),
        [hello.id],
      );
      assert.deepEqual(Object.keys(inChannel[0] as object).sort(), MESSAGE_FIELDS_FOR_AGENTS);
      assert.deepEqual(
        (await agentMessages(relay, created.token, dm)).map((m) => m.text),
        ["hi in private"],
      );

      const postedReply = await postText(relay, created.token, channel, { text: "hello people" });
      assert.equal(postedReply.headers.get("x-ratelimit-limit"), "60");
      const posted = dataOf<AgentApiMessage>(postedReply, 201);
      assert.deepEqual(posted.author, { id: created.agent.id, type: "agent", name: created.agent.name });
      assert.deepEqual(posted.conversation, { type: "channel", id: channel.id });
      assert.ok(!("aside" in posted));
      const inDm = dataOf<AgentApiMessage>(
        await postText(relay, created.token, dm, { text: "reply in private", thread_id: hi.id }),
        201,
      );
      assert.equal(inDm.thread_id, hi.id);

      const personView = await personMessages(relay, channel);
      assert.equal(personView[0]?.id, posted.id);
      assert.deepEqual(personView[0]?.author, { id: created.agent.id, type: "agent", name: created.agent.name });
      assert.equal(personView[0]?.text, "hello people");
      const memberView = await personMessages(relay, dm, "", member.key);
      assert.deepEqual(
        memberView.map((m) => [m.text, m.author.name]),
        [
          ["reply in private", created.agent.name],
          ["hi in private", "Mia Member"],
        ],
      );
    });

    test("asides from people are never shown to the agent but are to people", async () => {
      const created = await freshAgent(relay, "aside-reader");
      const channel = await createChannel(relay, "aside-room");
      await addMember(relay, channel.id, { agent_id: created.agent.id });
      const dm = await createDm(relay, [created.agent.id]);
      for (const conversation of [channel, dm]) {
        const first = await postMessage(relay, conversation, "before");
        const aside = await postMessage(relay, conversation, "/aside between us only");
        const threaded = await postMessage(relay, conversation, "/aside also secret", { thread_id: first.id });
        const last = await postMessage(relay, conversation, "after");

        const people = await personMessages(relay, conversation);
        assert.deepEqual(
          people.map((m) => m.id),
          [last.id, threaded.id, aside.id, first.id],
        );
        assert.equal(people.find((m) => m.id === aside.id)?.aside, true);
        assert.equal(people.find((m) => m.id === aside.id)?.text, "between us only");

        const raw = await agentCall(
          relay,
          created.token,
          `/conversations/${conversation.type}/${conversation.id}/messages`,
        );
        assert.deepEqual(
          dataOf<AgentApiMessage[]>(raw).map((m) => m.id),
          [last.id, first.id],
        );
        assert.ok(
          !raw.text.includes("between us") && !raw.text.includes("also secret") && !raw.text.includes('"aside"'),
        );
        assert.deepEqual(
          (await agentMessages(relay, created.token, conversation, `?thread_id=${first.id}`)).map((m) => m.id),
          [first.id],
        );
        assert.deepEqual(
          (await agentMessages(relay, created.token, conversation, `?limit=1&before=${last.id}`)).map((m) => m.id),
          [first.id],
        );
      }
    });

    test("messages page with limit, before and thread_id as in the main API", async () => {
      const created = await freshAgent(relay, "pager");
      const channel = await createChannel(relay, "paging-room");
      await addMember(relay, channel.id, { agent_id: created.agent.id });
      const sent: Message[] = [];
      for (let i = 0; i < 32; i++) sent.push(await postMessage(relay, channel, `m${i}`));
      const ids = sent.map((m) => m.id).reverse();

      assert.deepEqual(
        (await agentMessages(relay, created.token, channel)).map((m) => m.id),
        ids.slice(0, 30),
        "default limit 30, newest first",
      );
      assert.deepEqual(
        (await agentMessages(relay, created.token, channel, "?limit=2")).map((m) => m.id),
        ids.slice(0, 2),
      );
      assert.deepEqual(
        (await agentMessages(relay, created.token, channel, `?limit=3&before=${ids[1]}`)).map((m) => m.id),
        ids.slice(2, 5),
      );
      assert.deepEqual(
        (await agentMessages(relay, created.token, channel, `?limit=100&before=${ids[29]}`)).map((m) => m.id),
        ids.slice(30),
      );
      assert.deepEqual(await agentMessages(relay, created.token, channel, `?before=${ids[31]}`), []);

      const root = sent[5] as Message;
      const reply1 = await postMessage(relay, channel, "first reply", { thread_id: root.id });
      const agentReply = dataOf<AgentApiMessage>(
        await postText(relay, created.token, channel, { text: "agent reply", thread_id: reply1.id }),
        201,
      );
      assert.equal(agentReply.thread_id, root.id, "a reply to a reply continues the root thread");
      await postMessage(relay, channel, "not in the thread");
      const thread = [agentReply.id, reply1.id, root.id];
      assert.deepEqual(
        (await agentMessages(relay, created.token, channel, `?thread_id=${root.id}`)).map((m) => m.id),
        thread,
      );
      assert.deepEqual(
        (await agentMessages(relay, created.token, channel, `?thread_id=${root.id}&limit=1`)).map((m) => m.id),
        thread.slice(0, 1),
      );
      assert.deepEqual(
        (await agentMessages(relay, created.token, channel, `?thread_id=${root.id}&before=${reply1.id}`)).map(
          (m) => m.id,
        ),
        [root.id],
      );

      for (const query of [
        "",
        "?limit=1",
        "?limit=100",
        `?limit=4&before=${ids[3]}`,
        `?thread_id=${root.id}`,
        `?thread_id=${root.id}&limit=2&before=${agentReply.id}`,
      ]) {
        const agentIds = (await agentMessages(relay, created.token, channel, query)).map((m) => m.id);
        const personIds = (await personMessages(relay, channel, query)).map((m) => m.id);
        assert.deepEqual(agentIds, personIds, `same page for ${query || "(no query)"}`);
      }
    });
  });

  describe("Agent API: errors", () => {
    test("missing, malformed, foreign, mistyped and unknown tokens are 401 INVALID_TOKEN", async () => {
      const created = await freshAgent(relay, "tokens");
      const last = created.token.at(-1) === "a" ? "b" : "a";
      const badChecksum = created.token.slice(0, -1) + last;
      assert.equal(hasValidChecksum(badChecksum, SECRET_PREFIXES.agentToken), false);
      assert.equal(hasValidChecksum(`svc_agent_${"Ab3".repeat(12)}`, SECRET_PREFIXES.agentToken), false);
      const attempts: Array<[string, string | null, Record<string, string>]> = [
        ["no header", null, {}],
        ["Basic", null, { Authorization: "Basic x" }],
        ["Bearer alone", null, { Authorization: "Bearer" }],
        ["two tokens", null, { Authorization: `Bearer ${created.token} ${created.token}` }],
        ["bad checksum", badChecksum, {}],
        ["random with a bad checksum", `svc_agent_${"Ab3".repeat(12)}`, {}],
        ["unknown but well-formed", unknownWellFormedToken(), {}],
        ["an API key", owner.key, {}],
      ];
      for (const [label, token, headers] of attempts) {
        assertError(await agentCall(relay, token, "/me", { headers }), 401, "INVALID_TOKEN");
        const posted = await agentCall(relay, token, "/conversations/channel/ch_x/messages", {
          method: "POST",
          headers,
          json: { text: "x" },
        });
        assert.equal(assertError(posted, 401, "INVALID_TOKEN").length > 0, true, label);
      }
      assert.equal((await agentCall(relay, created.token, "/me")).status, 200);
    });

    test("a replaced token stops at once and the new one works", async () => {
      const created = await freshAgent(relay, "rotated");
      const rotated = dataOf<AgentTokenRotated>(
        await mainCall(relay, `/agents/${created.agent.id}/token`, { method: "POST" }),
      );
      assert.notEqual(rotated.token, created.token);
      assert.match(rotated.token, TOKEN_SHAPE);
      assert.equal(hasValidChecksum(rotated.token, SECRET_PREFIXES.agentToken), true);
      assertError(await agentCall(relay, created.token, "/me"), 401, "INVALID_TOKEN");
      assertError(await agentCall(relay, created.token, "/conversations"), 401, "INVALID_TOKEN");
      assert.equal(dataOf<AgentApiMe>(await agentCall(relay, rotated.token, "/me")).agent.id, created.agent.id);
      assert.ok(rotated.agent.token_hint && rotated.token.startsWith(rotated.agent.token_hint.split("…")[0] as string));
    });

    test("a removed agent's token is 401 INVALID_TOKEN", async () => {
      const created = await freshAgent(relay, "removed");
      const dm = await createDm(relay, [created.agent.id]);
      assert.equal((await agentCall(relay, created.token, "/me")).status, 200);
      dataOf(await mainCall(relay, `/agents/${created.agent.id}`, { method: "DELETE" }));
      assertError(await agentCall(relay, created.token, "/me"), 401, "INVALID_TOKEN");
      assertError(await agentCall(relay, created.token, `/conversations/dm/${dm.id}/messages`), 401, "INVALID_TOKEN");
      assertError(await postText(relay, created.token, dm, { text: "still here?" }), 401, "INVALID_TOKEN");
      assert.deepEqual(await personMessages(relay, dm), []);
    });

    test("a paused agent gets 403 AGENT_PAUSED on reads and posts until resumed", async () => {
      const created = await freshAgent(relay, "pausable");
      const channel = await createChannel(relay, "pause-room");
      await addMember(relay, channel.id, { agent_id: created.agent.id });
      dataOf(await mainCall(relay, `/agents/${created.agent.id}/pause`, { method: "POST" }));

      assertError(await agentCall(relay, created.token, "/me"), 403, "AGENT_PAUSED");
      assertError(await agentCall(relay, created.token, "/conversations"), 403, "AGENT_PAUSED");
      assertError(
        await agentCall(relay, created.token, `/conversations/channel/${channel.id}/messages`),
        403,
        "AGENT_PAUSED",
      );
      assertError(await postText(relay, created.token, channel, { text: "while paused" }), 403, "AGENT_PAUSED");
      assert.deepEqual(await personMessages(relay, channel), [], "nothing was posted while paused");

      dataOf(await mainCall(relay, `/agents/${created.agent.id}/resume`, { method: "POST" }));
      assert.equal((await agentCall(relay, created.token, "/me")).status, 200);
      assert.equal(
        (await agentCall(relay, created.token, `/conversations/channel/${channel.id}/messages`)).status,
        200,
      );
      assert.equal((await postText(relay, created.token, channel, { text: "back" })).status, 201);
    });

    test("conversations the agent is not in, or that do not exist, are 403 NOT_IN_CONVERSATION", async () => {
      const created = await freshAgent(relay, "outsider");
      const publicChannel = await createChannel(relay, "outsider-public");
      const privateChannel = await createChannel(relay, "outsider-private", "private");
      const peopleDm = await createDm(relay, [member.id]);
      await postMessage(relay, publicChannel, "people only");
      const targets = [
        publicChannel,
        privateChannel,
        peopleDm,
        { type: "channel", id: "ch_doesnotexist0000" },
        { type: "dm", id: "dm_doesnotexist0000" },
        { type: "channel", id: peopleDm.id },
      ];
      for (const target of targets) {
        const path = `/conversations/${target.type}/${target.id}/messages`;
        assertError(await agentCall(relay, created.token, path), 403, "NOT_IN_CONVERSATION");
        assertError(
          await agentCall(relay, created.token, path, { method: "POST", json: { text: "let me in" } }),
          403,
          "NOT_IN_CONVERSATION",
        );
      }
      assert.deepEqual(
        (await personMessages(relay, publicChannel)).map((m) => m.text),
        ["people only"],
      );
      assert.deepEqual(
        dataOf(await agentCall(relay, created.token, "/conversations")),
        [],
        "posting to a public channel does not join an agent",
      );
    });

    test("bad paths, queries and bodies are 400 VALIDATION_ERROR naming the field", async () => {
      const created = await freshAgent(relay, "validator");
      const channel = await createChannel(relay, "validation-room");
      const elsewhere = await createChannel(relay, "validation-elsewhere");
      const foreign = await postMessage(relay, elsewhere, "not here");
      await addMember(relay, channel.id, { agent_id: created.agent.id });
      const path = `/conversations/channel/${channel.id}/messages`;

      for (const method of ["GET", "POST"]) {
        const reply = await agentCall(relay, created.token, `/conversations/group/${channel.id}/messages`, {
          method,
          ...(method === "POST" ? { json: { text: "x" } } : {}),
        });
        assert.match(assertError(reply, 400, "VALIDATION_ERROR"), /\btype\b/);
      }
      for (const limit of ["0", "101", "x", "1.5", "-1"]) {
        assert.match(
          assertError(await agentCall(relay, created.token, `${path}?limit=${limit}`), 400, "VALIDATION_ERROR"),
          /\blimit\b/,
          `limit=${limit}`,
        );
      }
      for (const limit of ["1", "100"])
        assert.equal((await agentCall(relay, created.token, `${path}?limit=${limit}`)).status, 200);

      const badBodies: Array<[unknown, string]> = [
        [{}, "text"],
        [{ text: "" }, "text"],
        [{ text: "   \n\t" }, "text"],
        [{ text: 5 }, "text"],
        [{ text: "x".repeat(8001) }, "text"],
        [{ text: "reply", thread_id: "msg_unknown000000" }, "thread_id"],
        [{ text: "reply", thread_id: foreign.id }, "thread_id"],
      ];
      for (const [body, field] of badBodies) {
        const message = assertError(await postText(relay, created.token, channel, body), 400, "VALIDATION_ERROR");
        assert.match(message, new RegExp(`\\b${field}\\b`), `${JSON.stringify(body).slice(0, 60)} → ${message}`);
      }
      const notJson = await agentCall(relay, created.token, path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: "{text:",
      });
      assertError(notJson, 400, "VALIDATION_ERROR");
      assert.deepEqual(await personMessages(relay, channel), [], "no invalid post was stored");

      const longest = dataOf<AgentApiMessage>(
        await postText(relay, created.token, channel, { text: "y".repeat(8000) }),
        201,
      );
      assert.equal(longest.text.length, 8000);
    });

    test("a body over 64 KiB is 413 PAYLOAD_TOO_LARGE", async () => {
      const created = await freshAgent(relay, "big-body");
      const channel = await createChannel(relay, "big-room");
      await addMember(relay, channel.id, { agent_id: created.agent.id });
      assertError(
        await postText(relay, created.token, channel, { text: "z".repeat(64 * 1024) }),
        413,
        "PAYLOAD_TOO_LARGE",
      );
      assert.deepEqual(await personMessages(relay, channel), []);
    });

    test("unknown Agent API routes still carry rate-limit headers and the error envelope", async () => {
      const created = await freshAgent(relay, "wanderer");
      assertError(await agentCall(relay, created.token, "/nowhere"), 404, "NOT_FOUND");
    });
  });
});

describe("webhook URLs on a relay without allow-private", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay();
  });
  after(() => relay.close());

  const refused = [
    "http://example.com/hook",
    "https://127.0.0.1/hook",
    "https://10.1.2.3/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/hook",
    "https://localhost/hook",
    "https://LOCALHOST:8443/hook",
    "https://2130706433/hook",
    "https://[::ffff:127.0.0.1]/hook",
  ];
  for (const url of refused) {
    test(`refuses ${url} with 400 naming webhook_url`, async () => {
      const reply = await read(
        await relay.request("/api/v1/agents", { method: "POST", json: { name: "hooked", webhook_url: url } }),
      );
      assert.match(assertError(reply, 400, "VALIDATION_ERROR"), /\bwebhook_url\b/);
    });
  }

  test("accepts https://example.com without connecting, and refuses a private URL on PATCH", async () => {
    const created = await createAgent(relay, { name: "public-hook", webhook_url: "https://example.com" });
    assert.match(created.agent.webhook_url ?? "", /^https:\/\/example\.com\/?$/);
    const patch = await read(
      await relay.request(`/api/v1/agents/${created.agent.id}`, {
        method: "PATCH",
        json: { webhook_url: "https://192.168.1.10/hook" },
      }),
    );
    assert.match(assertError(patch, 400, "VALIDATION_ERROR"), /\bwebhook_url\b/);
    const view = (await read(await relay.request(`/api/v1/agents/${created.agent.id}`))).json as { data: Agent };
    assert.match(view.data.webhook_url ?? "", /^https:\/\/example\.com\/?$/);
    const names = ((await read(await relay.request("/api/v1/agents"))).json as { data: Agent[] }).data.map(
      (a) => a.name,
    );
    assert.deepEqual(names, ["public-hook"], "no refused agent was created");
  });
});

describe("Agent API rate limits (agent_reads=8, agent_posts=4)", () => {
  // 20 s into a fixed window, so a burst never straddles a window boundary.
  const WINDOW_START = Date.UTC(2026, 10, 21, 12, 0, 0);
  const clock = fakeClock(WINDOW_START + 20_000);
  let relay: TestRelay;
  let channel: { type: "channel"; id: string };

  before(async () => {
    relay = await startTestRelay({
      clock,
      env: { TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true", TAB_RELAY_RATE_LIMITS: "agent_reads=8,agent_posts=4" },
    });
    channel = await createChannel(relay, "limited");
  });
  after(() => relay.close());

  async function joinedAgent(name: string): Promise<AgentCreated> {
    const created = await createAgent(relay, { name });
    await addMember(relay, channel.id, { agent_id: created.agent.id });
    return created;
  }

  function assertLimited(reply: Reply, limit: number): void {
    assertError(reply, 429, "RATE_LIMIT_EXCEEDED");
    assert.equal(reply.headers.get("x-ratelimit-limit"), String(limit));
    assert.equal(reply.headers.get("x-ratelimit-remaining"), "0");
    const retryAfter = reply.headers.get("retry-after") ?? "(missing)";
    assert.match(retryAfter, /^\d+$/);
    assert.ok(Number(retryAfter) >= 1);
    const reset = Number(reply.headers.get("x-ratelimit-reset"));
    assert.equal(Number(retryAfter), reset - Math.floor(clock.now() / 1000));
  }

  test("reads over agent_reads get 429 with Retry-After; posts and other agents are unaffected", async () => {
    clock.set(WINDOW_START + 60_000 + 20_000);
    const reader = await joinedAgent("reader");
    const neighbour = await joinedAgent("neighbour");
    const paths = [
      "/me",
      "/conversations",
      `/conversations/channel/${channel.id}/messages`,
      `/conversations/channel/${channel.id}/messages?limit=0`,
    ];
    const remaining: string[] = [];
    for (let i = 0; i < 8; i++) {
      const reply = await agentCall(relay, reader.token, paths[i % paths.length] as string);
      assert.equal(reply.headers.get("x-ratelimit-limit"), "8");
      assert.equal(reply.headers.get("x-ratelimit-reset"), String((WINDOW_START + 120_000) / 1000));
      remaining.push(reply.headers.get("x-ratelimit-remaining") ?? "");
    }
    assert.deepEqual(remaining, ["7", "6", "5", "4", "3", "2", "1", "0"], "errors count too");
    assertLimited(await agentCall(relay, reader.token, "/me"), 8);
    assertLimited(await agentCall(relay, reader.token, `/conversations/channel/${channel.id}/messages`), 8);

    const post = await postText(relay, reader.token, channel, { text: "reads spent, posts not" });
    assert.equal(post.status, 201, post.text);
    assert.equal(post.headers.get("x-ratelimit-limit"), "4");
    assert.equal(post.headers.get("x-ratelimit-remaining"), "3");
    assert.equal((await agentCall(relay, neighbour.token, "/me")).status, 200, "limits are per agent");

    clock.set(WINDOW_START + 120_000);
    assert.equal((await agentCall(relay, reader.token, "/me")).status, 200, "a new window restores reads");
  });

  test("posts over agent_posts get 429 with Retry-After and are not stored; reads are unaffected", async () => {
    clock.set(WINDOW_START + 180_000 + 20_000);
    const poster = await joinedAgent("poster");
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const reply = await postText(relay, poster.token, channel, { text: `post ${i}` });
      assert.equal(reply.headers.get("x-ratelimit-limit"), "4");
      statuses.push(reply.status);
    }
    assert.deepEqual(statuses, [201, 201, 201, 201]);
    const over = await postText(relay, poster.token, channel, { text: "one too many" });
    assertLimited(over, 4);
    const invalidOver = await postText(relay, poster.token, channel, { text: "" });
    assertLimited(invalidOver, 4);

    const read = await agentCall(relay, poster.token, `/conversations/channel/${channel.id}/messages`);
    assert.equal(read.headers.get("x-ratelimit-limit"), "8");
    assert.equal(read.headers.get("x-ratelimit-remaining"), "7");
    const mine = dataOf<AgentApiMessage[]>(read).filter((m) => m.author.id === poster.agent.id);
    assert.deepEqual(
      mine.map((m) => m.text),
      ["post 3", "post 2", "post 1", "post 0"],
    );
  });

  test("unauthenticated requests are limited too and still answer the headers", async () => {
    clock.set(WINDOW_START + 240_000 + 20_000);
    for (let i = 0; i < 8; i++) assertError(await agentCall(relay, null, "/me"), 401, "INVALID_TOKEN");
    assertLimited(await agentCall(relay, null, "/me"), 8);
  });
});
