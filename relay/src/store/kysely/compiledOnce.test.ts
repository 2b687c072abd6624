import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import SqliteDatabase from "better-sqlite3";
import { type CompiledQuery, Kysely, PostgresDialect, type PostgresPoolClient, SqliteDialect } from "kysely";
import type { Database, Db } from "../schema";
import { compiledOnce } from "./compiledOnce";

describe("compiledOnce", () => {
  const sqlite = new SqliteDatabase(":memory:");
  const prepared: string[] = [];
  let db: Kysely<Database>;

  before(async () => {
    sqlite.exec(
      "create table conversation_members (conversation_id text, member_id text, member_type text, joined_at text)",
    );
    db = new Kysely<Database>({
      dialect: new SqliteDialect({
        database: {
          close: () => sqlite.close(),
          prepare: (sql: string) => {
            prepared.push(sql);
            return sqlite.prepare(sql);
          },
        },
      }),
    });
    for (const [member, type] of [
      ["usr_1", "user"],
      ["agt_1", "agent"],
      ["agt_2", "agent"],
      ["agt_3", "agent"],
    ] as const)
      await db
        .insertInto("conversation_members")
        .values({ conversation_id: "cnv_1", member_id: member, member_type: type, joined_at: "2026-01-01" })
        .execute();
  });
  after(async () => await db.destroy());

  const byType = (db: Db, conversationId: string, type: "user" | "agent", ids: readonly string[]) => {
    let query = db
      .selectFrom("conversation_members")
      .select("member_id")
      .where("conversation_id", "=", conversationId)
      .where("member_type", "=", type);
    if (ids.length > 0) query = query.where("member_id", "in", ids);
    return query.orderBy("member_id");
  };
  const members = compiledOnce("test.members", byType);

  it("runs the builder's own SQL with each call's arguments", async () => {
    prepared.length = 0;
    const agents = await members(db, "cnv_1", "agent", []);
    const users = await members(db, "cnv_1", "user", []);
    assert.deepEqual(
      agents.rows.map((row) => row.member_id),
      ["agt_1", "agt_2", "agt_3"],
    );
    assert.deepEqual(
      users.rows.map((row) => row.member_id),
      ["usr_1"],
    );
    assert.deepEqual(prepared, [
      byType(db, "cnv_1", "agent", []).compile().sql,
      byType(db, "x", "user", []).compile().sql,
    ]);
    assert.equal(prepared[0], prepared[1]);
  });

  it("compiles a query again for each length of an array argument, which may change its shape", async () => {
    const two = await members(db, "cnv_1", "agent", ["agt_3", "agt_1"]);
    const one = await members(db, "cnv_1", "agent", ["agt_2"]);
    const none = await members(db, "cnv_1", "agent", []);
    assert.deepEqual(
      two.rows.map((row) => row.member_id),
      ["agt_1", "agt_3"],
    );
    assert.deepEqual(
      one.rows.map((row) => row.member_id),
      ["agt_2"],
    );
    assert.equal(none.rows.length, 3);
  });

  it("runs inside a transaction on the transaction's connection", async () => {
    const insert = compiledOnce("test.insert", (db: Db, memberId: string, joinedAt: string) =>
      db
        .insertInto("conversation_members")
        .values({ conversation_id: "cnv_2", member_id: memberId, member_type: "agent", joined_at: joinedAt }),
    );
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        const result = await insert(trx, "agt_9", "2026-01-02");
        assert.equal(result.numAffectedRows, 1n);
        throw new Error("roll back");
      }),
      /roll back/,
    );
    assert.equal((await members(db, "cnv_2", "agent", [])).rows.length, 0);
    await insert(db, "agt_9", "2026-01-02");
    assert.deepEqual(
      (await members(db, "cnv_2", "agent", [])).rows.map((row) => row.member_id),
      ["agt_9"],
    );
  });

  it("keeps each dialect's SQL apart", async () => {
    const seen: CompiledQuery[] = [];
    // Only what Kysely's PostgreSQL driver calls for a plain query; the cursor overload is never used here.
    const client = {
      query: async (sql: string, parameters: readonly unknown[]) => {
        seen.push({ sql, parameters } as unknown as CompiledQuery);
        return { rows: [], command: "SELECT", rowCount: 0 };
      },
      release: () => undefined,
    } as unknown as PostgresPoolClient;
    const postgres = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: { connect: async () => client, end: async () => undefined } }),
    });
    await members(postgres, "cnv_1", "agent", ["agt_1"]);
    await members(db, "cnv_1", "agent", ["agt_1"]);
    assert.deepEqual(seen, [
      {
        sql: 'select "member_id" from "conversation_members" where "conversation_id" = $1 and "member_type" = $2 and "member_id" in ($3) order by "member_id"',
        parameters: ["cnv_1", "agent", "agt_1"],
      },
    ]);
    assert.equal(prepared.at(-1), byType(db, "cnv_1", "agent", ["agt_1"]).compile().sql);
  });

  it("refuses a builder that does not bind an argument as a parameter", () => {
    const branching = compiledOnce("test.branching", (db: Db, conversationId: string, type: "user" | "agent") =>
      db
        .selectFrom("conversation_members")
        .select("member_id")
        .where("conversation_id", "=", type === "user" ? "cnv_users" : conversationId),
    );
    assert.throws(() => branching(db, "cnv_1", "agent"), /does not bind each of its 2 arguments/);
  });
});
