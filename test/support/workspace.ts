import type { AgentCreated, ChannelMemberAdded, Conversation, Message, UserCreated } from "@tab-relay/shared/api";
import type { TestRelay } from "./relayHarness";

/** Thin helpers over the real API for tests that need people, channels and agents. Each checks its status. */

async function ok<T>(response: Response, expected: number[] = [200, 201, 202]): Promise<T> {
  const text = await response.text();
  if (!expected.includes(response.status)) throw new Error(`unexpected ${response.status}: ${text}`);
  return (JSON.parse(text) as { data: T }).data;
}

export async function createAgent(
  relay: TestRelay,
  body: { name: string; webhook_url?: string | null; description?: string },
  key?: string,
): Promise<AgentCreated> {
  return ok(await relay.request("/api/v1/agents", { method: "POST", json: body, ...(key ? { key } : {}) }));
}

export async function createUser(relay: TestRelay, name: string, role: "owner" | "admin" | "member" | "guest") {
  const data = await ok<UserCreated>(await relay.request("/api/v1/users", { method: "POST", json: { name, role } }));
  return { ...data.user, key: data.api_key.secret };
}

export async function createChannel(
  relay: TestRelay,
  name: string,
  visibility: "public" | "private" = "public",
  key?: string,
) {
  return ok<Conversation & { type: "channel"; name: string }>(
    await relay.request("/api/v1/channels", { method: "POST", json: { name, visibility }, ...(key ? { key } : {}) }),
  );
}

export async function addMember(
  relay: TestRelay,
  channelId: string,
  member: { user_id: string } | { agent_id: string },
  key?: string,
) {
  return ok<ChannelMemberAdded>(
    await relay.request(`/api/v1/channels/${channelId}/members`, {
      method: "POST",
      json: member,
      ...(key ? { key } : {}),
    }),
  );
}

export async function createDm(relay: TestRelay, memberIds: string[], key?: string) {
  return ok<Conversation & { type: "dm" }>(
    await relay.request("/api/v1/dms", { method: "POST", json: { member_ids: memberIds }, ...(key ? { key } : {}) }),
  );
}

export async function postMessage(
  relay: TestRelay,
  conversation: { type: string; id: string },
  text: string,
  options: { thread_id?: string; key?: string } = {},
): Promise<Message> {
  const json = { text, ...(options.thread_id ? { thread_id: options.thread_id } : {}) };
  return ok(
    await relay.request(`/api/v1/conversations/${conversation.type}/${conversation.id}/messages`, {
      method: "POST",
      json,
      ...(options.key ? { key: options.key } : {}),
    }),
  );
}

/** Calls the Agent API with an agent token. */
export function agentRequest(
  relay: TestRelay,
  token: string | null,
  path: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<Response> {
  return relay.request(`/api/v1/agent-api${path}`, { ...init, key: token });
}
