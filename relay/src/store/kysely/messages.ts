import type { Db, MessagesTable } from "../schema";
import type { Member, Message, Store } from "../types";

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
      await db
        .insertInto("messages")
        .values({
          id: message.id,
          workspace_id: message.workspace_id,
          conversation_id: message.conversation_id,
          thread_id: message.thread_id,
          author_id: message.author.id,
          author_type: message.author.type,
          author_name: message.author.name,
          text: message.text,
          aside: message.aside ? 1 : 0,
          mentions: JSON.stringify(message.mentions),
          created_at: message.created_at,
        })
        .execute();
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
