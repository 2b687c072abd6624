import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SECRET_PREFIXES, generateSecret } from "@tab-relay/shared";
import { createApiKey } from "../../relay/src/auth/apiKeys";
import { newId } from "../../relay/src/auth/secrets";
import { completionBody, errorOf, startTestRelay, type TestRelay } from "../support/relayHarness";

describe("API keys and authentication", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay();
  });
  after(() => relay.close());

  test("GET /me answers the key's user, workspace and scopes", async () => {
    const response = await relay.request("/api/v1/me");
    assert.equal(response.status, 200);
    const { data } = (await response.json()) as {
      data: {
        key: { scopes: string[]; hint: string };
        user: { name: string; role: string };
        workspace: { slug: string };
      };
    };
    assert.equal(data.workspace.slug, "acme");
    assert.equal(data.user.role, "owner");
    assert.equal(data.user.name, "Olive Owner");
    assert.ok(data.key.scopes.includes("tab.complete") && data.key.scopes.includes("keys.write"));
    assert.ok(!JSON.stringify(data).includes(relay.apiKey), "the secret is never echoed");
  });

  test("a missing Authorization header is 401 saying the API key is missing", async () => {
    const response = await relay.request("/api/v1/me", { key: null });
    assert.equal(response.status, 401);
    const error = await errorOf(response);
    assert.equal(error.code, "UNAUTHORIZED");
    assert.equal(
      error.message,
      "Missing API key: there is no Authorization header; send `Authorization: Bearer <API key>`",
    );
  });

  for (const header of ["", "Bearer", "Bearer   ", "bearer"]) {
    test(`an Authorization header with no key in it (${JSON.stringify(header)}, as \`Bearer $KEY\` with KEY unset sends) is 401 saying the API key is missing`, async () => {
      const response = await fetch(`${relay.url}/api/v1/tab/chat/completions`, {
        method: "POST",
        headers: { Authorization: header, "Content-Type": "application/json" },
        body: JSON.stringify(completionBody()),
      });
      assert.equal(response.status, 401);
      const error = await errorOf(response);
      assert.equal(error.code, "UNAUTHORIZED");
      assert.match(error.message, /^Missing API key: the Authorization header holds none /);
    });
  }

  for (const header of ["Basic abc", "bearer KEY", "Bearer  KEY", "Bearer KEY extra", "KEY"]) {
    test(`a malformed Authorization header (${JSON.stringify(header)}) is 401`, async () => {
      const value = header.replace("KEY", relay.apiKey);
      const response = await fetch(`${relay.url}/api/v1/me`, { headers: { Authorization: value } });
      assert.equal(response.status, 401);
      assert.match((await errorOf(response)).message, /Bearer/);
    });
  }

  test("an unknown key with a valid checksum is 401", async () => {
    const response = await relay.request("/api/v1/me", { key: generateSecret(SECRET_PREFIXES.apiKey) });
    assert.equal(response.status, 401);
    assert.equal(
      (await errorOf(response)).message,
      "API key not recognised: it is not a key of this relay (check it was copied whole)",
    );
  });

  test("a key with a broken checksum is 401", async () => {
    const broken = relay.apiKey.slice(0, -1) + (relay.apiKey.endsWith("A") ? "B" : "A");
    const response = await relay.request("/api/v1/me", { key: broken });
    assert.equal(response.status, 401);
  });

  test("created keys are shown once, listed without secrets, and revoked at once", async () => {
    const created = await relay.request("/api/v1/api-keys", {
      method: "POST",
      json: { name: "CI", scopes: ["tab.complete"] },
    });
    assert.equal(created.status, 201);
    const { data } = (await created.json()) as {
      data: { id: string; name: string; scopes: string[]; created_at: string; secret: string };
    };
    assert.match(data.secret, /^svc_ws_[0-9A-Za-z]{36}$/);
    assert.deepEqual(data.scopes, ["tab.complete"]);
    assert.ok(!Number.isNaN(Date.parse(data.created_at)));

    const list = (await (await relay.request("/api/v1/api-keys")).json()) as { data: Record<string, unknown>[] };
    const listed = list.data.find((k) => k["id"] === data.id);
    assert.ok(listed);
    assert.equal(listed["secret"], undefined);
    assert.ok(!JSON.stringify(list).includes(data.secret));

    assert.equal((await relay.request("/api/v1/me", { key: data.secret })).status, 200);
    const revoked = await relay.request(`/api/v1/api-keys/${data.id}`, { method: "DELETE" });
    assert.equal(revoked.status, 200);
    const after = await relay.request("/api/v1/me", { key: data.secret });
    assert.equal(after.status, 401);
    assert.match((await errorOf(after)).message, /revoked/);
    const completion = await relay.request("/api/v1/tab/chat/completions", {
      key: data.secret,
      method: "POST",
      json: completionBody(),
    });
    assert.equal(completion.status, 401);
  });

  test("a key cannot create a key with scopes it does not hold", async () => {
    const narrow = (await (
      await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "narrow", scopes: ["keys.write"] } })
    ).json()) as { data: { secret: string } };
    const response = await relay.request("/api/v1/api-keys", {
      key: narrow.data.secret,
      method: "POST",
      json: { name: "wider", scopes: ["tab.complete"] },
    });
    assert.equal(response.status, 403);
    assert.match((await errorOf(response)).message, /tab\.complete/);
  });

  test("creating a key validates its body and names the field", async () => {
    const response = await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "x", scopes: ["root"] } });
    assert.equal(response.status, 400);
    const error = await errorOf(response);
    assert.equal(error.code, "VALIDATION_ERROR");
    assert.match(error.message, /^scopes\.0/);
  });

  test("a key without tab.complete gets 403 on completions", async () => {
    const created = (await (
      await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "reader", scopes: ["workspace.read"] } })
    ).json()) as { data: { secret: string } };
    const response = await relay.request("/api/v1/tab/chat/completions", {
      key: created.data.secret,
      method: "POST",
      json: completionBody(),
    });
    assert.equal(response.status, 403);
    const error = await errorOf(response);
    assert.equal(error.code, "FORBIDDEN");
    assert.match(error.message, /tab\.complete/);
  });

  test("a key used against another workspace is 401", async () => {
    const response = await relay.request("/api/v1/tab/chat/completions", {
      method: "POST",
      json: completionBody({ workspace_slug: "globex" }),
    });
    assert.equal(response.status, 401);
    assert.match((await errorOf(response)).message, /different workspace/);
  });

  test("a key whose user was removed from the workspace gets 403", async () => {
    const now = new Date().toISOString();
    const store = relay.relay.store;
    const user = await store.users.create({
      id: newId("usr"),
      workspaceId: relay.workspace.id,
      name: "Gus Guest",
      role: "guest",
      createdAt: now,
    });
    const { secret } = await createApiKey(
      store,
      { now: () => Date.now() },
      { workspaceId: relay.workspace.id, user, name: "guest", scopes: ["tab.complete"] },
    );
    assert.equal((await relay.request("/api/v1/me", { key: secret })).status, 200);
    await store.users.remove(relay.workspace.id, user.id, now);
    const response = await relay.request("/api/v1/me", { key: secret });
    assert.equal(response.status, 403);
    assert.match((await errorOf(response)).message, /removed/);
  });

  test("a guest key cannot be created with scopes beyond the guest role", async () => {
    const store = relay.relay.store;
    const user = await store.users.create({
      id: newId("usr"),
      workspaceId: relay.workspace.id,
      name: "Gina Guest",
      role: "guest",
      createdAt: new Date().toISOString(),
    });
    await assert.rejects(
      createApiKey(
        store,
        { now: () => Date.now() },
        { workspaceId: relay.workspace.id, user, name: "g", scopes: ["users.write"] },
      ),
      /cannot hold the scopes: users\.write/,
    );
  });

  test("only owners and admins may revoke another user's key", async () => {
    const store = relay.relay.store;
    const member = await store.users.create({
      id: newId("usr"),
      workspaceId: relay.workspace.id,
      name: "Mo Member",
      role: "member",
      createdAt: new Date().toISOString(),
    });
    const { secret } = await createApiKey(
      store,
      { now: () => Date.now() },
      { workspaceId: relay.workspace.id, user: member, name: "m", scopes: ["keys.write"] },
    );
    const me = (await (await relay.request("/api/v1/me")).json()) as { data: { key: { id: string } } };
    const response = await relay.request(`/api/v1/api-keys/${me.data.key.id}`, { key: secret, method: "DELETE" });
    assert.equal(response.status, 403);
    assert.equal((await relay.request("/api/v1/me")).status, 200, "the owner key still works");
  });

  test("revoking an unknown key id is 404", async () => {
    const response = await relay.request("/api/v1/api-keys/key_doesnotexist", { method: "DELETE" });
    assert.equal(response.status, 404);
    assert.equal((await errorOf(response)).code, "NOT_FOUND");
  });

  test("the same API answers under /v1 without the /api prefix", async () => {
    const response = await relay.request("/v1/tab/models");
    assert.equal(response.status, 200);
  });

  test("every response carries a request id", async () => {
    const ok = await relay.request("/api/v1/me");
    const failed = await relay.request("/api/v1/me", { key: null });
    assert.match(ok.headers.get("x-request-id") ?? "", /^req_/);
    assert.match(failed.headers.get("x-request-id") ?? "", /^req_/);
  });
});
