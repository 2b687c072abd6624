import { RelayError } from "@tab-relay/shared";
import type { AgentCaller, Caller } from "../http/context";
import type { Conversation, ConversationType, Member, Store } from "../store/types";

/**
 * The conversation a person asks for: one they are in, or a public channel (guests see only what they are in).
 * Unknown ids are 404; conversations the person may not see are 403.
 */
export async function conversationForPerson(
  store: Store,
  caller: Caller,
  type: ConversationType,
  id: string,
): Promise<Conversation> {
  const conversation = await store.conversations.get(caller.workspace.id, type, id);
  if (!conversation) throw new RelayError("NOT_FOUND", `path.id: no ${type} ${id} in this workspace`);
  if (await store.conversations.isMember(conversation.id, caller.user.id)) return conversation;
  if (conversation.type === "channel" && conversation.visibility === "public" && caller.user.role !== "guest")
    return conversation;
  throw new RelayError("FORBIDDEN", `You are not in this ${type}`);
}

/** The conversation an agent asks for: only one it is in. Unknown ids get the same answer, so nothing leaks. */
export async function conversationForAgent(
  store: Store,
  caller: AgentCaller,
  type: ConversationType,
  id: string,
): Promise<Conversation> {
  const conversation = await store.conversations.get(caller.workspace.id, type, id);
  if (!conversation || !(await store.conversations.isMember(conversation.id, caller.agent.id))) {
    throw new RelayError(
      "NOT_IN_CONVERSATION",
      `The agent is not in ${type} ${id}; someone must add it or message it first`,
    );
  }
  return conversation;
}

/** The members of a conversation with their current names. */
export async function membersOf(store: Store, workspaceId: string, conversationId: string): Promise<Member[]> {
  return (await membersOfEach(store, workspaceId, [conversationId])).get(conversationId) ?? [];
}

/**
 * The members of each conversation with their current names, reading the workspace's directory once: a list of
 * conversations names the members of every DM in it, and a directory read per DM cost (DMs × people) per request.
 */
export async function membersOfEach(
  store: Store,
  workspaceId: string,
  conversationIds: readonly string[],
): Promise<Map<string, Member[]>> {
  if (conversationIds.length === 0) return new Map();
  const [refs, everyone] = await Promise.all([
    Promise.all(conversationIds.map((id) => store.conversations.members(id))),
    store.conversations.directory(workspaceId),
  ]);
  const byId = new Map(everyone.map((member) => [member.id, member]));
  return new Map(
    conversationIds.map((id, index) => [id, (refs[index] ?? []).flatMap((ref) => byId.get(ref.id) ?? [])]),
  );
}
