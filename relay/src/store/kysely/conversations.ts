import { sql } from "kysely";
import type { Db } from "../schema";
import type { ConversationType, MemberType, Store } from "../types";
import { compiledOnce } from "./compiledOnce";

const CONVERSATION_COLUMNS = [
  "c.id",
  "c.workspace_id",
  "c.type",
  "c.name",
  "c.visibility",
  "c.created_by",
  "c.created_at",
] as const;

export function conversationsStore(db: Db): Store["conversations"] {
  return {
    async create(input) {
      await db.insertInto("conversations").values(input).execute();
      const { dm_key: _dmKey, ...conversation } = input;
      return conversation;
    },
    async get(workspaceId, type, id) {
      const { rows } = await getConversation(db, workspaceId, type, id);
      return rows[0];
    },
    async byId(workspaceId, id) {
      const { rows } = await conversationById(db, workspaceId, id);
      return rows[0];
    },
    async findDm(workspaceId, dmKey) {
      return db
        .selectFrom("conversations as c")
        .select(CONVERSATION_COLUMNS)
        .where("c.workspace_id", "=", workspaceId)
        .where("c.dm_key", "=", dmKey)
        .executeTakeFirst();
    },
    async findChannel(workspaceId, name) {
      return db
        .selectFrom("conversations as c")
        .select(CONVERSATION_COLUMNS)
        .where("c.workspace_id", "=", workspaceId)
        .where("c.type", "=", "channel")
        .where("c.name", "=", name)
        .executeTakeFirst();
    },
    async listVisible(workspaceId, memberId, withPublic) {
      const rows = await db
        .selectFrom("conversations as c")
        .leftJoin("conversation_members as m", (join) =>
          join.onRef("m.conversation_id", "=", "c.id").on("m.member_id", "=", memberId),
        )
        .select([...CONVERSATION_COLUMNS, "m.member_id"])
        .where("c.workspace_id", "=", workspaceId)
        .where((eb) =>
          withPublic
            ? eb.or([
                eb("m.member_id", "is not", null),
                eb.and([eb("c.type", "=", "channel"), eb("c.visibility", "=", "public")]),
              ])
            : eb("m.member_id", "is not", null),
        )
        .orderBy("c.type")
        .orderBy("c.name")
        .orderBy("c.created_at")
        .orderBy("c.id")
        .execute();
      return rows.map(({ member_id, ...row }) => ({ ...row, is_member: member_id !== null }));
    },
    async addMember(conversationId, member, at) {
      const result = await addMember(db, conversationId, member.id, member.type, at);
      return Number(result.numAffectedRows ?? 0) > 0;
    },
    async isMember(conversationId, memberId) {
      const { rows } = await isMember(db, conversationId, memberId);
      return rows.length > 0;
    },
    async directory(workspaceId) {
      const rows = await db
        .selectFrom("users")
        .select(["id", "name", sql.lit("user").as("type")])
        .where("workspace_id", "=", workspaceId)
        .where("removed_at", "is", null)
        .unionAll(
          db
            .selectFrom("agents")
            .select(["id", "name", sql.lit("agent").as("type")])
            .where("workspace_id", "=", workspaceId)
            .where("removed_at", "is", null),
        )
        .execute();
      return rows.map((row) => ({ id: row.id, name: row.name, type: row.type as MemberType }));
    },
    async directoryVersion(workspaceId) {
      const { rows } = await directoryVersion(db, workspaceId);
      return Number(rows[0]?.directory_version ?? 0);
    },
    async members(conversationId) {
      const { rows } = await members(db, conversationId);
      return rows.map((row) => ({ id: row.member_id, type: row.member_type }));
    },
  };
}

/** The queries of every post, built and compiled once (compiledOnce.ts). */
const getConversation = compiledOnce(
  "conversations.get",
  (db: Db, workspaceId: string, type: ConversationType, id: string) =>
    db
      .selectFrom("conversations as c")
      .select(CONVERSATION_COLUMNS)
      .where("c.workspace_id", "=", workspaceId)
      .where("c.type", "=", type)
      .where("c.id", "=", id),
);

const conversationById = compiledOnce("conversations.byId", (db: Db, workspaceId: string, id: string) =>
  db
    .selectFrom("conversations as c")
    .select(CONVERSATION_COLUMNS)
    .where("c.workspace_id", "=", workspaceId)
    .where("c.id", "=", id),
);

const addMember = compiledOnce(
  "conversations.addMember",
  (db: Db, conversationId: string, memberId: string, memberType: MemberType, at: string) =>
    db
      .insertInto("conversation_members")
      .values({ conversation_id: conversationId, member_id: memberId, member_type: memberType, joined_at: at })
      .onConflict((oc) => oc.columns(["conversation_id", "member_id"]).doNothing()),
);

const isMember = compiledOnce("conversations.isMember", (db: Db, conversationId: string, memberId: string) =>
  db
    .selectFrom("conversation_members")
    .select("member_id")
    .where("conversation_id", "=", conversationId)
    .where("member_id", "=", memberId),
);

const directoryVersion = compiledOnce("workspaces.directoryVersion", (db: Db, workspaceId: string) =>
  db.selectFrom("workspaces").select("directory_version").where("id", "=", workspaceId),
);

const members = compiledOnce("conversations.members", (db: Db, conversationId: string) =>
  db
    .selectFrom("conversation_members")
    .select(["member_id", "member_type"])
    .where("conversation_id", "=", conversationId)
    .orderBy("joined_at")
    .orderBy("member_id"),
);
