import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import type { User, UserCreated } from "@tab-relay/shared/api";
import { dataOf, expectError, startTestRelay, type TestRelay } from "../support/relayHarness";
import { createDatabase, dropDatabases, postgresProblem } from "../support/scaleOutServices";

/**
 * "Only an owner removes an owner" holds as the roles stand inside the removal's transaction, not as they stood when
 * the request was read: on PostgreSQL, where requests run side by side, an admin's removal of a member being made an
 * owner at that moment is refused.
 */
const problem = await postgresProblem();

describe("removing a person while they are being made an owner", { skip: problem ?? false }, () => {
  let relay: TestRelay;
  let database: { name: string; url: string };

  before(async () => {
    database = await createDatabase("tab_relay_owner_removal");
    relay = await startTestRelay({
      env: { TAB_RELAY_DATABASE_URL: database.url, TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" },
    });
  });
  after(async () => {
    await relay?.close();
    await dropDatabases([database.name]);
  });

  test("an admin's DELETE /users/:id that waits on the promotion is refused once the person is an owner", async () => {
    const add = async (name: string, role: string) =>
      dataOf<UserCreated>(await relay.request("/api/v1/users", { method: "POST", json: { name, role } }), 201);
    const admin = await add("Ada Admin", "admin");
    const member = await add("Max Member", "member");

    // The promotion, as another relay's PATCH would make it: the workspace held (as counting owners holds it), the
    // role changed, not yet committed.
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query("SELECT id FROM workspaces WHERE id = $1 FOR UPDATE", [relay.workspace.id]);
      await other.query("UPDATE users SET role = 'owner' WHERE id = $1", [member.user.id]);
      const removal = relay.request(`/api/v1/users/${member.user.id}`, {
        method: "DELETE",
        key: admin.api_key.secret,
      });
      // The removal has passed its first look (a member then) and waits for a lock inside its transaction.
      for (let waited = 0; ; waited += 20) {
        const { rows } = await other.query<{ n: string }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'",
          [database.name],
        );
        if (Number(rows[0]?.n) > 0) break;
        assert.ok(waited < 5000, "the removal never waited on the promotion");
        await sleep(20);
      }
      await other.query("COMMIT");
      await expectError(await removal, 403, "FORBIDDEN", /owner/);
    } finally {
      await other.end();
    }
    const people = await dataOf<User[]>(await relay.request("/api/v1/users"), 200);
    assert.equal(people.find((person) => person.id === member.user.id)?.role, "owner", "still there, an owner");
  });
});
