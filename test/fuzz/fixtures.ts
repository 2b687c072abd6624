import { WEBHOOK_URL } from "./catalogue";
import { WORKSPACE_SLUG } from "./relay";

/**
 * Everything the fuzzer authenticates with and points at, made through the relay's own API before the attack, so
 * that mutated requests reach the handlers behind authentication. Resources that destructive routes act on (a user
 * to remove, a key to revoke, an agent to delete, a session to end) are separate from the credentials the fuzzer
 * keeps using, so a run never locks itself out.
 */
export interface Fixtures {
  slug: string;
  owner: { id: string; key: string };
  admin: { id: string; key: string };
  member: { id: string; key: string };
  guest: { id: string; key: string };
  /** Keys with one or two scopes. */
  narrow: Record<"tabOnly" | "messagesRead" | "keysWrite" | "agentsRead" | "workspaceRead", string>;
  revokedKey: string;
  /** The key `POST /sessions` is fuzzed with: signing in past the per-key session cap ends that key's oldest sessions. */
  signInKey: string;
  /** A user and a key that DELETE routes may remove and revoke. */
  victimUserId: string;
  victimKeyId: string;
  /** The agent whose token the Agent API and Socket Mode are fuzzed with; management routes never touch it. */
  agent: { id: string; token: string };
  /** The agent the management routes are fuzzed on (renamed, paused, rotated). */
  managedAgent: { id: string; deliveryId: string };
  /** The agent DELETE /agents/{id} is fuzzed on. */
  victimAgentId: string;
  channel: { id: string };
  privateChannel: { id: string };
  dm: { id: string };
  /** A message in `channel`, for `thread_id` and `before`. */
  message: { id: string };
  /** A message the agent posted in `dm`. */
  agentMessage: { id: string };
  session: { cookie: string; csrf: string };
  /** A session that DELETE /sessions/current may end. */
  victimSession: { cookie: string; csrf: string };
}

interface Call {
  key?: string;
  cookie?: string;
  csrf?: string;
  json?: unknown;
}

async function call<T>(
  base: string,
  method: string,
  path: string,
  init: Call,
  expected: number[] = [200, 201, 202],
): Promise<{ data: T; headers: Headers }> {
  const headers = new Headers();
  if (init.key !== undefined) headers.set("Authorization", `Bearer ${init.key}`);
  if (init.cookie !== undefined) headers.set("Cookie", init.cookie);
  if (init.csrf !== undefined) headers.set("X-CSRF-Token", init.csrf);
  if (init.json !== undefined) headers.set("Content-Type", "application/json");
  const response = await fetch(base + path, {
    method,
    headers,
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
  });
  const text = await response.text();
  if (!expected.includes(response.status))
    throw new Error(`fixture setup: ${method} ${path} answered ${response.status}: ${text}`);
  return { data: (JSON.parse(text) as { data: T }).data, headers: response.headers };
}

/** Makes the fixtures through the API with the owner key `tab-relay init` printed. */
export async function createFixtures(base: string, ownerKey: string): Promise<Fixtures> {
  const owner = ownerKey;
  const me = await call<{ user: { id: string } }>(base, "GET", "/api/v1/me", { key: owner });
  const user = async (name: string, role: string) => {
    const { data } = await call<{ user: { id: string }; api_key: { secret: string } }>(base, "POST", "/api/v1/users", {
      key: owner,
      json: { name, role },
    });
    return { id: data.user.id, key: data.api_key.secret };
  };
  const key = async (name: string, scopes: string[]) =>
    (
      await call<{ id: string; secret: string }>(base, "POST", "/api/v1/api-keys", {
        key: owner,
        json: { name, scopes },
      })
    ).data;
  const admin = await user("Ada Admin", "admin");
  const member = await user("Mel Member", "member");
  const guest = await user("Gus Guest", "guest");
  const victim = await user("Vic Victim", "member");
  const narrow = {
    tabOnly: (await key("editor", ["tab.complete"])).secret,
    messagesRead: (await key("reader", ["messages.read"])).secret,
    keysWrite: (await key("keys", ["keys.write"])).secret,
    agentsRead: (await key("agents", ["agents.read"])).secret,
    workspaceRead: (await key("workspace", ["workspace.read"])).secret,
  };
  const revoked = await key("revoked", ["workspace.read"]);
  await call(base, "DELETE", `/api/v1/api-keys/${revoked.id}`, { key: owner });
  const victimKey = await key("victim", ["workspace.read"]);
  const signInKey = (await key("sign-in", ["messages.read", "agents.read"])).secret;
  const consoleKey = (
    await key("console", [
      "workspace.read",
      "tab.complete",
      "messages.read",
      "messages.write",
      "agents.read",
      "agents.write",
      "users.write",
      "keys.write",
    ])
  ).secret;

  const agent = await call<{ agent: { id: string }; token: string }>(base, "POST", "/api/v1/agents", {
    key: owner,
    json: { name: "Fuzz Agent", description: "fuzzed" },
  });
  const managed = await call<{ agent: { id: string } }>(base, "POST", "/api/v1/agents", {
    key: owner,
    json: { name: "Managed Agent", webhook_url: WEBHOOK_URL },
  });
  const victimAgent = await call<{ agent: { id: string } }>(base, "POST", "/api/v1/agents", {
    key: owner,
    json: { name: "Victim Agent" },
  });
  const delivery = await call<{ id: string }>(base, "POST", `/api/v1/agents/${managed.data.agent.id}/test-event`, {
    key: owner,
  });

  const channel = await call<{ id: string }>(base, "POST", "/api/v1/channels", {
    key: owner,
    json: { name: "fuzzing", visibility: "public" },
  });
  const privateChannel = await call<{ id: string }>(base, "POST", "/api/v1/channels", {
    key: owner,
    json: { name: "secret", visibility: "private" },
  });
  for (const member_ of [{ agent_id: agent.data.agent.id }, { user_id: member.id }, { user_id: guest.id }]) {
    await call(base, "POST", `/api/v1/channels/${channel.data.id}/members`, { key: owner, json: member_ });
  }
  const dm = await call<{ id: string }>(base, "POST", "/api/v1/dms", {
    key: owner,
    json: { member_ids: [agent.data.agent.id] },
  });
  const message = await call<{ id: string }>(
    base,
    "POST",
    `/api/v1/conversations/channel/${channel.data.id}/messages`,
    { key: owner, json: { text: "hello @Fuzz Agent" } },
  );
  const agentMessage = await call<{ id: string }>(
    base,
    "POST",
    `/api/v1/agent-api/conversations/dm/${dm.data.id}/messages`,
    {
      key: agent.data.token,
      json: { text: "hello from the agent" },
    },
  );

  const signIn = async (apiKey: string) => {
    const { data, headers } = await call<{ csrf_token: string }>(base, "POST", "/api/v1/sessions", {
      json: { api_key: apiKey },
    });
    const cookie = (headers.get("set-cookie") ?? "").split(";")[0] ?? "";
    return { cookie, csrf: data.csrf_token };
  };
  return {
    slug: WORKSPACE_SLUG,
    owner: { id: me.data.user.id, key: owner },
    admin,
    member,
    guest,
    narrow,
    revokedKey: revoked.secret,
    signInKey,
    victimUserId: victim.id,
    victimKeyId: victimKey.id,
    agent: { id: agent.data.agent.id, token: agent.data.token },
    managedAgent: { id: managed.data.agent.id, deliveryId: delivery.data.id },
    victimAgentId: victimAgent.data.agent.id,
    channel: { id: channel.data.id },
    privateChannel: { id: privateChannel.data.id },
    dm: { id: dm.data.id },
    message: { id: message.data.id },
    agentMessage: { id: agentMessage.data.id },
    session: await signIn(consoleKey),
    victimSession: await signIn(consoleKey),
  };
}
