import type { Api } from "@tab-relay/shared";
import type { Links } from "../links";
import type { Conversation, Member, Message, Notification } from "../store/types";

export interface Viewer {
  /** Agents never see asides, so their view of a message has no `aside` field. */
  kind: "person" | "agent";
}

export function presentMessage(
  message: Message,
  conversation: Conversation,
  links: Links,
  viewer: { kind: "person" },
): Api.Message;
export function presentMessage(
  message: Message,
  conversation: Conversation,
  links: Links,
  viewer: { kind: "agent" },
): Api.AgentApiMessage;
export function presentMessage(
  message: Message,
  conversation: Conversation,
  links: Links,
  viewer: Viewer,
): Api.Message | Api.AgentApiMessage {
  const shown: Api.AgentApiMessage = {
    id: message.id,
    conversation: { type: conversation.type, id: conversation.id },
    thread_id: message.thread_id,
    text: message.text,
    author: presentMember(message.author),
    mentions: message.mentions.map(presentMember),
    created_at: message.created_at,
    url: links.message(conversation.type, conversation.id, message.id),
  };
  return viewer.kind === "person" ? { ...shown, aside: message.aside } : shown;
}

export function presentMember(member: Member): Api.Member {
  return { id: member.id, type: member.type, name: member.name };
}

function conversationFields(conversation: Conversation): Omit<Api.AgentApiConversation, "members"> {
  return {
    type: conversation.type,
    id: conversation.id,
    name: conversation.type === "channel" ? `#${conversation.name ?? ""}` : null,
    visibility: conversation.visibility,
    created_at: conversation.created_at,
  };
}

/** A conversation as people see it: whether they are in it, and its members where the route lists them. */
export function presentConversation(
  conversation: Conversation,
  extra: { is_member: boolean; members?: Member[] | undefined },
): Api.Conversation {
  const shown: Api.Conversation = { ...conversationFields(conversation), is_member: extra.is_member };
  return extra.members ? { ...shown, members: extra.members.map(presentMember) } : shown;
}

/** A conversation as the Agent API shows it (the agent is in it, so there is no `is_member`). */
export function presentAgentApiConversation(conversation: Conversation, members?: Member[]): Api.AgentApiConversation {
  const shown = conversationFields(conversation);
  return members ? { ...shown, members: members.map(presentMember) } : shown;
}

export function presentNotification(notification: Notification, message: Api.Message | undefined): Api.Notification {
  return {
    id: notification.id,
    type: notification.type,
    created_at: notification.created_at,
    message: message ?? null,
  };
}
