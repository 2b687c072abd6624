import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, beforeEach, describe, test } from "node:test";
import { openSqliteStore } from "../store/sqlite";
import type { Store } from "../store/types";
import { DEFAULT_RECOVERY_KEY_NAME, createRecoveryKey } from "./recovery";
import { ROLE_SCOPES } from "./scopes";
import { hashSecret } from "./secrets";

const clock = { now: () => Date.UTC(2026, 0, 1) };
const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString();

describe("createRecoveryKey", () => {
  let dir: string;
  let store: Store;
  let databases = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "tab-relay-recovery-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  // A fresh database file per test, as the CLI would find one.
  beforeEach(async () => {
    store = await openSqliteStore(join(dir, `relay-${++databases}.db`));
    await store.workspaces.create({ id: "ws_acme", slug: "acme", name: "Acme", createdAt: at(0) });
    await store.users.create({
      id: "usr_first",
      workspaceId: "ws_acme",
      name: "First Owner",
      role: "owner",
      createdAt: at(1),
    });
    await store.users.create({
      id: "usr_second",
      workspaceId: "ws_acme",
      name: "Second Owner",
      role: "owner",
      createdAt: at(2),
    });
    await store.users.create({
      id: "usr_guest",
      workspaceId: "ws_acme",
      name: "Gus Guest",
      role: "guest",
      createdAt: at(3),
    });
  });
  afterEach(() => store.close());
  /** How many keys the database holds: a refusal must add none. */
  async function keyCount(): Promise<number> {
    let count = 0;
    for (const id of ["usr_first", "usr_second", "usr_guest", "usr_other"])
      count += (await store.apiKeys.listForUser("ws_acme", id)).length;
    return count;
  }

  async function refused(request: Parameters<typeof createRecoveryKey>[2], message: RegExp): Promise<void> {
    const before = await keyCount();
    await assert.rejects(createRecoveryKey(store, clock, request), (error: Error) => {
      assert.equal(error.name, "RecoveryKeyError");
      assert.match(error.message, message);
      return true;
    });
    assert.equal(await keyCount(), before);
  }

  test("--owner is the earliest-added owner still in the workspace, with every scope of the role", async () => {
    const made = await createRecoveryKey(store, clock, { user: "owner" });
    assert.deepEqual(
      [made.workspace.slug, made.user.id, made.key.name],
      ["acme", "usr_first", DEFAULT_RECOVERY_KEY_NAME],
    );
    assert.deepEqual(made.key.scopes, [...ROLE_SCOPES.owner]);
    const found = await store.apiKeys.findOwnerByHash(hashSecret(made.secret));
    assert.deepEqual([found?.key.id, found?.user.id], [made.key.id, "usr_first"]);

    await store.users.remove("ws_acme", "usr_first", at(10));
    assert.equal((await createRecoveryKey(store, clock, { user: "owner" })).user.id, "usr_second");
  });

  test("the key is in the audit log as made at the command line, without its secret; a refusal records nothing", async () => {
    await refused({ user: { id: "usr_nobody" } }, /^--user: /);
    assert.deepEqual(await store.audit.list("ws_acme", { limit: 10 }), []);
    const made = await createRecoveryKey(store, clock, {
      user: { id: "usr_guest" },
      scopes: ["tab.complete"],
      name: "laptop",
    });
    const records = await store.audit.list("ws_acme", { limit: 10 });
    assert.deepEqual(
      records.map(({ id: _id, ...record }) => record),
      [
        {
          workspace_id: "ws_acme",
          at: at(0),
          action: "api_key.created",
          actor_user_id: null,
          via: "cli",
          via_id: null,
          address: "local",
          target_type: "api_key",
          target_id: made.key.id,
          details: JSON.stringify({ name: "laptop", scopes: ["tab.complete"], holder_user_id: "usr_guest" }),
        },
      ],
    );
    assert.ok(!JSON.stringify(records).includes(made.secret.slice(-8)));
  });

  test("--user gets the role's scopes by default; --scopes are kept in the catalogue's order, each once", async () => {
    assert.deepEqual((await createRecoveryKey(store, clock, { user: { id: "usr_guest" } })).key.scopes, [
      ...ROLE_SCOPES.guest,
    ]);
    const named = await createRecoveryKey(store, clock, {
      user: { id: "usr_guest" },
      scopes: ["messages.read ", "tab.complete", "", "messages.read"],
      name: "  Laptop ",
    });
    assert.deepEqual([named.key.scopes, named.key.name], [["tab.complete", "messages.read"], "Laptop"]);
  });

  test("scopes beyond the role, unknown or none at all are refused, naming --scopes", async () => {
    await refused(
      { user: { id: "usr_guest" }, scopes: ["tab.complete", "keys.write", "users.write"] },
      /^--scopes: Gus Guest is a guest, who cannot hold users\.write, keys\.write$/,
    );
    await refused(
      { user: "owner", scopes: ["tab.complete", "root"] },
      /^--scopes: unknown scope "root"; the scopes are workspace\.read, apps\.read/,
    );
    await refused({ user: "owner", scopes: [" ", ""] }, /^--scopes: name at least one of workspace\.read, /);
  });

  test("an unknown, removed or foreign user is refused, naming --user", async () => {
    await refused({ user: { id: "usr_nobody" } }, /^--user: no user usr_nobody in workspace acme$/);
    await store.users.remove("ws_acme", "usr_guest", at(20));
    await refused(
      { user: { id: "usr_guest" } },
      new RegExp(
        `^--user: usr_guest \\(Gus Guest\\) was removed from workspace acme at ${at(20).replace(/\./g, "\\.")}; a removed person's keys are refused$`,
      ),
    );
    await store.workspaces.create({ id: "ws_other", slug: "other", name: "Other", createdAt: at(30) });
    await store.users.create({
      id: "usr_other",
      workspaceId: "ws_other",
      name: "Oona",
      role: "owner",
      createdAt: at(31),
    });
    await refused({ workspace: "acme", user: { id: "usr_other" } }, /^--user: no user usr_other in workspace acme$/);
  });

  test("a workspace with no owner left is refused, naming --owner", async () => {
    await store.users.remove("ws_acme", "usr_first", at(10));
    await store.users.remove("ws_acme", "usr_second", at(11));
    await refused({ user: "owner" }, /^--owner: workspace acme has no owner left; name someone with --user ID$/);
  });

  test("--workspace is needed only when the database holds several, and must name one of them", async () => {
    await refused({ workspace: "globex", user: "owner" }, /^--workspace: no workspace "globex" in the database$/);
    await store.workspaces.create({ id: "ws_other", slug: "other", name: "Other", createdAt: at(30) });
    await store.users.create({
      id: "usr_other",
      workspaceId: "ws_other",
      name: "Oona",
      role: "owner",
      createdAt: at(31),
    });
    await refused(
      { user: "owner" },
      /^--workspace: the database holds 2 workspaces \(acme, other\); name one with --workspace SLUG$/,
    );
    assert.equal((await createRecoveryKey(store, clock, { workspace: "other", user: "owner" })).user.id, "usr_other");
  });

  test("a name of 1-100 characters is required", async () => {
    await refused({ user: "owner", name: "  " }, /^--name: must be 1-100 characters$/);
    await refused({ user: "owner", name: "x".repeat(101) }, /^--name: must be 1-100 characters$/);
  });

  test("an empty database is refused with what to run", async () => {
    const empty = await openSqliteStore(join(dir, "empty.db"));
    try {
      await assert.rejects(
        createRecoveryKey(empty, clock, { user: "owner" }),
        /^RecoveryKeyError: no workspace in the database: run `tab-relay init` first$/,
      );
    } finally {
      await empty.close();
    }
  });
});
