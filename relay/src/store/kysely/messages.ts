import type { Db, MessagesTable } from "../schema";
import type { Member, MemberType, Message, Store } from "../types";
import { compiledOnce } from "./compiledOnce";

function toMessage(row: MessagesTable): Message {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    conversation_id: row.conversation_id,
    thread_id: row.thread_id,
    author: { id: row.author_id, type: row.author_type, name: row.author_name },
    text: row.text,
    aside: row.aside === 1,
    mentions: JSON.parse(row.mentions) as Member[],
    created_at: row.created_at,
  };
}

export function messagesStore(db: Db): Store["messages"] {
  return {
    async create(message) {
      await insertMessage(
        db,
        message.id,
        message.workspace_id,
        message.conversation_id,
        message.thread_id,
        message.author.id,
        message.author.type,
        message.author.name,
        message.text,
        message.aside ? 1 : 0,
        JSON.stringify(message.mentions),
        message.created_at,
      );
      return message;
    },
    async get(conversationId, id) {
      const row = await db
        .selectFrom("messages")
        .selectAll()
        .where("conversation_id", "=", conversationId)
        .where("id", "=", id)
        .executeTakeFirst();
      return row && toMessage(row);
    },
    async list(conversationId, query) {
      let q = db.selectFrom("messages").selectAll().where("conversation_id", "=", conversationId);
      if (query.threadId !== undefined) {
        const threadId = query.threadId;
        q = q.where((eb) => eb.or([eb("id", "=", threadId), eb("thread_id", "=", threadId)]));
      }
      if (query.before !== undefined) q = q.where("id", "<", query.before);
      if (!query.includeAsides) q = q.where("aside", "=", 0);
      const rows = await q.orderBy("id", "desc").limit(query.limit).execute();
      return rows.map(toMessage);
    },
    async agentAuthorsInThread(conversationId, threadId) {
      const rows = await db
        .selectFrom("messages")
        .select("author_id")
        .distinct()
        .where("conversation_id", "=", conversationId)
        .where((eb) => eb.or([eb("id", "=", threadId), eb("thread_id", "=", threadId)]))
        .where("author_type", "=", "agent")
        .execute();
      return rows.map((row) => row.author_id);
    },
  };
}

/** Every post writes one; built and compiled once (compiledOnce.ts). */
const insertMessage = compiledOnce(
  "messages.create",
  (
    db: Db,
    id: string,
    workspaceId: string,
    conversationId: string,
    threadId: string | null,
    authorId: string,
    authorType: MemberType,
    authorName: string,
    text: string,
    aside: number,
    mentions: string,
    createdAt: string,
  ) =>
    db.insertInto("messages").values({
      id,
      workspace_id: workspaceId,
      conversation_id: conversationId,
      thread_id: threadId,
      author_id: authorId,
      author_type: authorType,
      author_name: authorName,
      text,
      aside,
      mentions,
      created_at: createdAt,
    }),
);
