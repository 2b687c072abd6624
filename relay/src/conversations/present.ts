import type { Links } from "../links";
import type { Conversation, Member, Message, Notification } from "../store/types";

export interface Viewer {
  /** Agents never see asides, so their view of a message has no `aside` field. */
  kind: "person" | "agent";
}

export function presentMessage(message: Message, conversation: Conversation, links: Links, viewer: Viewer) {
  return {
    id: message.id,
    conversation: { type: conversation.type, id: conversation.id },
    thread_id: message.thread_id,
    text: message.text,
    author: presentMember(message.author),
    mentions: message.mentions.map(presentMember),
    created_at: message.created_at,
    url: links.message(conversation.type, conversation.id, message.id),
    ...(viewer.kind === "person" ? { aside: message.aside } : {}),
  };
}

export function presentMember(member: Member) {
  return { id: member.id, type: member.type, name: member.name };
}

export function presentConversation(conversation: Conversation, extra: { is_member?: boolean; members?: Member[] } = {}) {
  return {
    type: conversation.type,
    id: conversation.id,
    name: conversation.type === "channel" ? `#${conversation.name ?? ""}` : null,
    visibility: conversation.visibility,
    created_at: conversation.created_at,
    ...(extra.is_member !== undefined ? { is_member: extra.is_member } : {}),
    ...(extra.members ? { members: extra.members.map(presentMember) } : {}),
  };
}

export function presentNotification(notification: Notification, message: ReturnType<typeof presentMessage> | undefined) {
  return {
    id: notification.id,
    type: notification.type,
    created_at: notification.created_at,
    message: message ?? null,
  };
}
