import { RelayError, type MessageCreatedEvent } from "@tab-relay/shared";
import type { Clock } from "../clock";
import type { Links } from "../links";
import type { SortableIds } from "../store/sortableIds";
import type { Agent, Conversation, Member, Message, Store, StoredEvent, Workspace } from "../store/types";
import { type MentionIndex, findMentions, mentionIndex } from "./mentions";

/** The longest message text people and agents may post, in characters (Slack allows 40,000; chat UIs show far less). */
export const MAX_MESSAGE_CHARS = 8000;

const ASIDE = /^\/aside(?:\s+|$)/;

export interface ConversationServiceDeps {
  store: Store;
  clock: Clock;
  ids: SortableIds;
  links: Links;
  /** Called after a transaction that queued events has committed, with the agents it queued them for. */
  eventsQueued(agentIds: readonly string[]): void;
  /** Called after every posted message has committed (live updates). */
  posted(conversation: Conversation, message: Message): void;
}

export interface PostInput {
  workspace: Workspace;
  conversation: Conversation;
  author: Member;
  text: string;
  threadId?: string | undefined;
}

export function createConversationService(deps: ConversationServiceDeps) {
  const iso = () => new Date(deps.clock.now()).toISOString();
  // Reading every member on every message would cost more than the rest of posting, and so would indexing their
  // names; the version in the workspace row says when a cached index is stale, even when another process changed it.
  const directories = new Map<string, { version: number; index: MentionIndex }>();
  const nobody = mentionIndex([]);

  async function directory(store: Store, workspaceId: string): Promise<MentionIndex> {
    const version = await store.conversations.directoryVersion(workspaceId);
    const cached = directories.get(workspaceId);
    if (cached?.version === version) return cached.index;
    const index = mentionIndex(await store.conversations.directory(workspaceId));
    directories.set(workspaceId, { version, index });
    return index;
  }

  /**
   * Posts a message and, in the same transaction, everything it causes: joining a public channel, the agents a
   * person's message addresses (each gets a `message.created` event in the outbox) and the notifications of an
   * agent's DM. A crash at any point leaves either all of it or none.
   */
  async function post(input: PostInput): Promise<Message> {
    const { workspace, conversation, author } = input;
    let text = input.text;
    // Only people can hide a message from agents; an agent's "/aside" is just text.
    const aside = author.type === "user" && ASIDE.test(text);
    if (aside) {
      text = text.replace(ASIDE, "");
      if (text.trim() === "") throw new RelayError("VALIDATION_ERROR", "text: an /aside needs a message after it");
    }
    let queued: string[] = [];
    const message = await deps.store.transaction(async (tx) => {
      const threadId = input.threadId === undefined ? null : await threadRoot(tx, conversation.id, input.threadId);
      // Every mention has an "@", so most messages need not read the directory at all.
      const members = text.includes("@") ? await directory(tx, workspace.id) : nobody;
      const now = iso();
      const message: Message = {
        id: deps.ids("msg"),
        workspace_id: workspace.id,
        conversation_id: conversation.id,
        thread_id: threadId,
        author,
        text,
        aside,
        mentions: findMentions(text, members),
        created_at: now,
      };
      await tx.messages.create(message);
      // Writing in a public channel joins it, as in Slack.
      if (author.type === "user") await tx.conversations.addMember(conversation.id, author, now);
      if (author.type === "user" && !aside) queued = await queueEvents(tx, workspace, conversation, message, now);
      if (author.type === "agent" && conversation.type === "dm") await notifyDm(tx, conversation, message, now);
      return message;
    });
    if (queued.length > 0) deps.eventsQueued(queued);
    deps.posted(conversation, message);
    return message;
  }

  async function threadRoot(store: Store, conversationId: string, threadId: string): Promise<string> {
    const parent = await store.messages.get(conversationId, threadId);
    if (!parent) throw new RelayError("VALIDATION_ERROR", `thread_id: no message ${threadId} in this conversation`);
    // Replying to a reply continues the same thread.
    return parent.thread_id ?? parent.id;
  }

  async function queueEvents(
    tx: Store,
    workspace: Workspace,
    conversation: Conversation,
    message: Message,
    now: string,
  ): Promise<string[]> {
    const mentioned = new Set(message.mentions.filter((member) => member.type === "agent").map((member) => member.id));
    const addressed = new Set<string>();
    if (conversation.type === "dm") {
      // A DM names its agent by being with it: every agent in it is addressed.
      for (const member of await tx.conversations.members(conversation.id))
        if (member.type === "agent") addressed.add(member.id);
    } else {
      // A channel can have hundreds of members and a post names a few agents: each of those is looked up by its key
      // rather than every member read and sorted on every post.
      const isMember = (id: string) => tx.conversations.isMember(conversation.id, id);
      for (const id of mentioned) {
        if (await isMember(id)) addressed.add(id);
        else if (conversation.visibility === "public") {
          // A mention brings the agent into a public channel; a private one needs someone to add it.
          await tx.conversations.addMember(conversation.id, { id, type: "agent" }, now);
          addressed.add(id);
        }
      }
      if (message.thread_id !== null) {
        for (const id of await tx.messages.agentAuthorsInThread(conversation.id, message.thread_id)) {
          if (addressed.has(id) || (await isMember(id))) addressed.add(id);
        }
      }
    }
    const queued: string[] = [];
    for (const agentId of addressed) {
      const agent = await tx.agents.get(workspace.id, agentId);
      // A paused or removed agent gets nothing, not even later.
      if (!agent || agent.state !== "active") continue;
      const payload = messageCreated(workspace, agent, conversation, message, {
        mentioned: mentioned.has(agentId),
        now,
      });
      await tx.events.create(
        newEvent(payload.id, workspace.id, agent.id, payload.type, JSON.stringify(payload), now, 1, "scheduled"),
      );
      queued.push(agent.id);
    }
    return queued;
  }

  function messageCreated(
    workspace: Workspace,
    agent: Agent,
    conversation: Conversation,
    message: Message,
    context: { mentioned: boolean; now: string },
  ): MessageCreatedEvent {
    const dm = conversation.type === "dm";
    return {
      id: deps.ids("evt"),
      type: "message.created",
      created_at: context.now,
      workspace: { slug: workspace.slug, name: workspace.name },
      agent: { id: agent.id, name: agent.name },
      conversation: {
        type: conversation.type,
        id: conversation.id,
        name: dm ? message.author.name : `#${conversation.name ?? ""}`,
      },
      message: {
        id: message.id,
        text: message.text,
        thread_id: message.thread_id,
        author: { id: message.author.id, name: message.author.name },
        mentioned: context.mentioned,
        direct: dm,
        url: deps.links.message(conversation.type, conversation.id, message.id),
      },
      reply: {
        url: deps.links.agentMessages(conversation.type, conversation.id),
        thread_id: dm ? null : (message.thread_id ?? message.id),
      },
    };
  }

  async function notifyDm(tx: Store, conversation: Conversation, message: Message, now: string): Promise<void> {
    for (const member of await tx.conversations.members(conversation.id)) {
      if (member.type !== "user") continue;
      await tx.notifications.create({
        id: deps.ids("ntf"),
        workspace_id: conversation.workspace_id,
        user_id: member.id,
        type: "agent.dm",
        conversation_id: conversation.id,
        message_id: message.id,
        created_at: now,
        read_at: null,
      });
    }
  }

  return { post };
}

export function newEvent(
  id: string,
  workspaceId: string,
  agentId: string,
  type: string,
  payload: string,
  now: string,
  retries: number,
  trigger: StoredEvent["next_trigger"],
): StoredEvent {
  return {
    id,
    workspace_id: workspaceId,
    agent_id: agentId,
    type,
    payload,
    status: "pending",
    attempts: 0,
    next_attempt_at: now,
    next_trigger: trigger,
    retries,
    sending: false,
    created_at: now,
    updated_at: now,
  };
}

export type ConversationService = ReturnType<typeof createConversationService>;
