import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Me, User, UserCreated, UserRemoved } from "@tab-relay/shared/api";
import { dataOf, expectError, startTestRelay, type TestRelay } from "../support/relayHarness";
import { createUser } from "../support/workspace";

describe("changing a person's role: PATCH /users/{id}", () => {
  let relay: TestRelay;
  const setRole = (id: string, role: unknown, key?: string) =>
    relay.request(`/api/v1/users/${id}`, { method: "PATCH", json: { role }, ...(key === undefined ? {} : { key }) });
  const roleOf = async (id: string) =>
    (await dataOf<User[]>(await relay.request("/api/v1/users"), 200)).find((user) => user.id === id)?.role;

  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" } });
  });
  after(() => relay.close());

  test("an owner makes a member an admin and back; the answer and the list show the new role", async () => {
    const mel = await createUser(relay, "Mel Member", "member");
    const changed = await dataOf<User>(await setRole(mel.id, "admin"), 200);
    assert.deepEqual(
      [changed.id, changed.name, changed.role, changed.created_at],
      [mel.id, "Mel Member", "admin", mel.created_at],
    );
    assert.equal(await roleOf(mel.id), "admin");
    assert.equal((await dataOf<User>(await setRole(mel.id, "member"), 200)).role, "member");
    assert.equal(await roleOf(mel.id), "member");
  });

  test("a demoted admin's key loses what the new role may not hold on the very next request", async () => {
    const ari = await createUser(relay, "Ari Admin", "admin");
    await dataOf(
      await relay.request("/api/v1/users", {
        key: ari.key,
        method: "POST",
        json: { name: "Gil Guest", role: "guest" },
      }),
      201,
    );
    await dataOf<User>(await setRole(ari.id, "member"), 200);
    await expectError(
      await relay.request("/api/v1/users", {
        key: ari.key,
        method: "POST",
        json: { name: "Gia Guest", role: "guest" },
      }),
      403,
      "FORBIDDEN",
      /users\.write/,
    );
    const me = await dataOf<Me>(await relay.request("/api/v1/me", { key: ari.key }), 200);
    assert.equal(me.user.role, "member");
    assert.ok(!me.key.scopes.includes("users.write"));
  });

  test("an admin may re-role members and guests, but may not make or unmake an owner", async () => {
    const admin = await createUser(relay, "Ada Admin", "admin");
    const guest = await createUser(relay, "Gus Guest", "guest");
    assert.equal((await dataOf<User>(await setRole(guest.id, "member", admin.key), 200)).role, "member");
    await expectError(
      await setRole(guest.id, "owner", admin.key),
      403,
      "FORBIDDEN",
      /^role: only an owner can make or unmake an owner/,
    );
    await expectError(await setRole(admin.id, "owner", admin.key), 403, "FORBIDDEN", /^role: only an owner/);
    await expectError(await setRole(relay.user.id, "admin", admin.key), 403, "FORBIDDEN", /^role: only an owner/);
    assert.equal(await roleOf(relay.user.id), "owner");
    assert.equal(await roleOf(guest.id), "member");
  });

  test("a member's key has no users.write, so it changes no role", async () => {
    const member = await createUser(relay, "Moe Member", "member");
    const guest = await createUser(relay, "Gay Guest", "guest");
    await expectError(await setRole(guest.id, "member", member.key), 403, "FORBIDDEN", /users\.write/);
    assert.equal(await roleOf(guest.id), "guest");
  });

  test("the body, the path and the person are checked, and the error names the field", async () => {
    const member = await createUser(relay, "Val Member", "member");
    await expectError(await setRole(member.id, "superuser"), 400, "VALIDATION_ERROR", /^role: /);
    await expectError(
      await relay.request(`/api/v1/users/${member.id}`, { method: "PATCH", json: {} }),
      400,
      "VALIDATION_ERROR",
      /^role(: | is required)/,
    );
    await expectError(await setRole("usr_nobody", "admin"), 404, "NOT_FOUND", /^path\.id: no user usr_nobody/);
    await dataOf<UserRemoved>(await relay.request(`/api/v1/users/${member.id}`, { method: "DELETE" }), 200);
    await expectError(await setRole(member.id, "admin"), 404, "NOT_FOUND", /^path\.id: /);
  });

  test("the same role again changes nothing and answers the person", async () => {
    const member = await createUser(relay, "Sam Same", "member");
    assert.equal((await dataOf<User>(await setRole(member.id, "member"), 200)).role, "member");
  });
});

describe("the last owner stays an owner", () => {
  let relay: TestRelay;
  const setRole = (id: string, role: string, key?: string) =>
    relay.request(`/api/v1/users/${id}`, { method: "PATCH", json: { role }, ...(key === undefined ? {} : { key }) });

  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" } });
  });
  after(() => relay.close());

  test("the only owner cannot step down; once another owner exists, they can", async () => {
    await expectError(await setRole(relay.user.id, "admin"), 409, "CONFLICT", /^role: .*last owner/);
    const oona = await createUser(relay, "Oona Owner", "owner");
    assert.equal((await dataOf<User>(await setRole(relay.user.id, "admin"), 200)).role, "admin");
    // Now Oona is the last owner, and the demoted first owner can no longer touch her role.
    await expectError(await setRole(oona.id, "member", oona.key), 409, "CONFLICT", /last owner/);
    await expectError(await setRole(oona.id, "member"), 403, "FORBIDDEN", /only an owner/);
    assert.equal((await dataOf<User>(await setRole(relay.user.id, "owner", oona.key), 200)).role, "owner");
  });

  /** The workspace's one owner after the test before. */
  let lastOwner = { id: "", key: "" };

  /** Leaves `keep` the workspace's only owners, demoting every other owner with the first kept one's key. */
  async function onlyOwners(keep: { id: string; key: string }[]): Promise<void> {
    const [first] = keep;
    assert.ok(first);
    const people = await dataOf<User[]>(await relay.request("/api/v1/users", { key: first.key }), 200);
    for (const person of people) {
      if (person.role === "owner" && !keep.some((kept) => kept.id === person.id))
        await dataOf<User>(await setRole(person.id, "member", first.key), 200);
    }
  }

  async function addOwner(name: string, key: string): Promise<{ id: string; key: string }> {
    const created = await dataOf<UserCreated>(
      await relay.request("/api/v1/users", { key, method: "POST", json: { name, role: "owner" } }),
      201,
    );
    return { id: created.user.id, key: created.api_key.secret };
  }

  async function ownerCount(key: string): Promise<number> {
    return (await dataOf<User[]>(await relay.request("/api/v1/users", { key }), 200)).filter(
      (user) => user.role === "owner",
    ).length;
  }

  // Both requests may pass authentication before either changes anything: only the count taken in the change's own
  // transaction keeps an owner. The loser is refused as the last owner (409), or as no owner any more (403).
  test("two owners demoting each other at once leave exactly one owner", async () => {
    let survivor: { id: string; key: string } = await createUser(relay, "Ann Owner", "owner");
    await onlyOwners([survivor]);
    lastOwner = survivor;
    for (let round = 0; round < 5; round++) {
      const rival = await addOwner(`Rival ${round}`, survivor.key);
      const answers = await Promise.all([
        setRole(rival.id, "member", survivor.key),
        setRole(survivor.id, "member", rival.key),
      ]);
      const statuses = answers.map((answer) => answer.status);
      assert.equal(
        statuses.filter((status) => status === 200).length,
        1,
        `one demotion goes through: ${statuses.join()}`,
      );
      assert.ok(
        statuses.every((status) => [200, 403, 409].includes(status)),
        statuses.join(),
      );
      if (statuses[1] === 200) survivor = rival;
      assert.equal(await ownerCount(survivor.key), 1);
      lastOwner = survivor;
    }
  });

  test("two owners removing each other at once leave one of them, still an owner", async () => {
    let survivor = await addOwner("Cy Owner", lastOwner.key);
    await onlyOwners([survivor]);
    for (let round = 0; round < 5; round++) {
      const rival = await addOwner(`Remover ${round}`, survivor.key);
      const answers = await Promise.all([
        relay.request(`/api/v1/users/${rival.id}`, { key: survivor.key, method: "DELETE" }),
        relay.request(`/api/v1/users/${survivor.id}`, { key: rival.key, method: "DELETE" }),
      ]);
      const statuses = answers.map((answer) => answer.status);
      assert.equal(
        statuses.filter((status) => status === 200).length,
        1,
        `one removal goes through: ${statuses.join()}`,
      );
      assert.ok(
        statuses.every((status) => [200, 403, 409].includes(status)),
        statuses.join(),
      );
      if (statuses[1] === 200) survivor = rival;
      assert.equal(await ownerCount(survivor.key), 1);
    }
  });
});
