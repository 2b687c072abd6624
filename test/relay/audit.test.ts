import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import SqliteDatabase from "better-sqlite3";
import type {
  AgentCreated,
  AgentSigningSecretRotated,
  AgentTokenRotated,
  ApiKey,
  ApiKeyCreated,
  AuditEntry,
  Delivery,
  User,
  UserCreated,
} from "@tab-relay/shared/api";
import { newApiKeySecret } from "../../relay/src/auth/secrets";
import { createJsonLogger } from "../../relay/src/logger";
import { initWorkspace } from "../../relay/src/workspace/init";
import { dataOf, expectError, fakeClock, startTestRelay, type TestRelay } from "../support/relayHarness";

const START = Date.UTC(2026, 10, 24, 9, 0, 0);
const LOOPBACK = /^(?:127\.0\.0\.1|::ffff:127\.0\.0\.1|::1)$/;

async function auditOf(relay: TestRelay, query = "", key?: string): Promise<AuditEntry[]> {
  return dataOf<AuditEntry[]>(await relay.request(`/api/v1/audit${query}`, key === undefined ? {} : { key }), 200);
}

/** Every row of the audit table, as SQLite holds it. */
function storedRows(relay: TestRelay): Record<string, unknown>[] {
  const db = new SqliteDatabase(join(relay.dataDir, "relay.db"), { readonly: true });
  try {
    return db.prepare("select * from audit_log order by id").all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

describe("the audit log records every security-relevant change", () => {
  let relay: TestRelay;
  const clock = fakeClock(START);
  const secrets: string[] = [];
  /** What each step should have recorded, oldest first. */
  const expected: { action: string; at: string; user: string | null; via: string; target: string | null }[] = [];

  before(async () => {
    relay = await startTestRelay({
      clock,
      env: { TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true", TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" },
    });
    secrets.push(relay.apiKey);
  });
  after(() => relay.close());

  /** One second on, so each change has its own time. */
  const tick = () => {
    clock.advance(1000);
    return new Date(clock.now()).toISOString();
  };

  test("who, with which key or session, when, from where and what, for each kind of change", async () => {
    const ownerKeyId = (await dataOf<{ key: { id: string } }>(await relay.request("/api/v1/me"), 200)).key.id;
    const owner = relay.user.id;

    // Signing in: a success, then a key nobody has, well-formed and not.
    let at = tick();
    const signedIn = await relay.request("/api/v1/sessions", {
      method: "POST",
      key: null,
      json: { api_key: relay.apiKey },
    });
    assert.equal(signedIn.status, 201);
    const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0] as string;
    const csrf = ((await signedIn.json()) as { data: { csrf_token: string } }).data.csrf_token;
    secrets.push(cookie.slice(cookie.indexOf("=") + 1), csrf);
    expected.push({ action: "session.signed_in", at, user: owner, via: "api_key", target: null });
    const strangerKey = newApiKeySecret();
    secrets.push(strangerKey);
    tick();
    assert.equal(
      (await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: strangerKey } })).status,
      401,
    );
    // A key nobody has names no workspace: no tenant's log holds it (see "each workspace sees its own records").

    // A key made in the console session, revoked with the owner's key, then tried for a sign-in.
    at = tick();
    const made = await dataOf<ApiKeyCreated>(
      await relay.request("/api/v1/api-keys", {
        key: null,
        method: "POST",
        headers: { Cookie: cookie, "X-CSRF-Token": csrf },
        json: { name: "ci", scopes: ["tab.complete", "agents.read"] },
      }),
      201,
    );
    secrets.push(made.secret);
    expected.push({ action: "api_key.created", at, user: owner, via: "session", target: made.id });
    at = tick();
    await dataOf<ApiKey>(await relay.request(`/api/v1/api-keys/${made.id}`, { method: "DELETE" }), 200);
    expected.push({ action: "api_key.revoked", at, user: owner, via: "api_key", target: made.id });
    at = tick();
    assert.equal(
      (await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: made.secret } })).status,
      401,
    );
    expected.push({ action: "session.sign_in_failed", at, user: owner, via: "api_key", target: made.id });

    // People: added, re-roled; the new admin then connects and looks after an agent.
    at = tick();
    const added = await dataOf<UserCreated>(
      await relay.request("/api/v1/users", { method: "POST", json: { name: "Ari", role: "member" } }),
      201,
    );
    secrets.push(added.api_key.secret);
    expected.push({ action: "user.added", at, user: owner, via: "api_key", target: added.user.id });
    at = tick();
    await dataOf<User>(
      await relay.request(`/api/v1/users/${added.user.id}`, { method: "PATCH", json: { role: "admin" } }),
      200,
    );
    expected.push({ action: "user.role_changed", at, user: owner, via: "api_key", target: added.user.id });
    const ari = added.api_key.secret;
    const ariKeyId = added.api_key.id;

    at = tick();
    const agent = await dataOf<AgentCreated>(
      await relay.request("/api/v1/agents", {
        key: ari,
        method: "POST",
        json: { name: "Deployer", webhook_url: "http://127.0.0.1:9/hook?token=tok-SECRET-1#frag" },
      }),
      201,
    );
    secrets.push(agent.token, agent.signing_secret, "tok-SECRET-1");
    const agentId = agent.agent.id;
    expected.push({ action: "agent.created", at, user: added.user.id, via: "api_key", target: agentId });
    for (const action of ["pause", "resume"]) {
      at = tick();
      await dataOf(await relay.request(`/api/v1/agents/${agentId}/${action}`, { key: ari, method: "POST" }), 200);
      expected.push({
        action: action === "pause" ? "agent.paused" : "agent.resumed",
        at,
        user: added.user.id,
        via: "api_key",
        target: agentId,
      });
    }
    // Pausing a paused agent, or renaming one, changes nothing that matters to security: no record.
    tick();
    await dataOf(
      await relay.request(`/api/v1/agents/${agentId}`, {
        key: ari,
        method: "PATCH",
        json: { name: "Deployer 2", description: "ships" },
      }),
      200,
    );
    at = tick();
    await dataOf(
      await relay.request(`/api/v1/agents/${agentId}`, {
        key: ari,
        method: "PATCH",
        json: { webhook_url: "http://127.0.0.1:9/other?sig=sig-SECRET-2" },
      }),
      200,
    );
    secrets.push("sig-SECRET-2");
    expected.push({ action: "agent.webhook_url_changed", at, user: added.user.id, via: "api_key", target: agentId });
    at = tick();
    const token = await dataOf<AgentTokenRotated>(
      await relay.request(`/api/v1/agents/${agentId}/token`, { method: "POST" }),
      200,
    );
    secrets.push(token.token);
    expected.push({ action: "agent.token_replaced", at, user: owner, via: "api_key", target: agentId });
    at = tick();
    const signing = await dataOf<AgentSigningSecretRotated>(
      await relay.request(`/api/v1/agents/${agentId}/signing-secret`, { method: "POST" }),
      200,
    );
    secrets.push(signing.signing_secret);
    expected.push({ action: "agent.signing_secret_replaced", at, user: owner, via: "api_key", target: agentId });
    tick();
    const ping = await dataOf<Delivery>(
      await relay.request(`/api/v1/agents/${agentId}/test-event`, { method: "POST" }),
      202,
    );
    at = tick();
    await dataOf<Delivery>(
      await relay.request(`/api/v1/agents/${agentId}/deliveries/${ping.id}/redeliver`, { method: "POST" }),
      202,
    );
    expected.push({ action: "agent.redelivery_requested", at, user: owner, via: "api_key", target: ping.id });
    at = tick();
    await dataOf(await relay.request(`/api/v1/agents/${agentId}`, { key: ari, method: "DELETE" }), 200);
    expected.push({ action: "agent.removed", at, user: added.user.id, via: "api_key", target: agentId });
    at = tick();
    await dataOf(await relay.request(`/api/v1/users/${added.user.id}`, { method: "DELETE" }), 200);
    expected.push({ action: "user.removed", at, user: owner, via: "api_key", target: added.user.id });

    const log = await auditOf(relay, "?limit=100");
    assert.deepEqual(
      log.map((entry) => [entry.action, entry.at, entry.actor.user_id, entry.actor.via]),
      [...expected].reverse().map((e) => [e.action, e.at, e.user, e.via]),
    );
    const byAction = (action: string) => log.filter((entry) => entry.action === action);
    for (const entry of log) {
      assert.match(entry.actor.address, LOOPBACK, `${entry.action} names the client's address`);
      const wanted = expected.find((e) => e.at === entry.at);
      if (wanted?.target) assert.equal(entry.target?.id, wanted.target, `${entry.action}'s target`);
    }
    // The key or session used.
    const [signIn] = byAction("session.signed_in");
    assert.equal(signIn?.actor.via_id, ownerKeyId);
    assert.equal(signIn?.target?.type, "session");
    assert.equal(byAction("api_key.created")[0]?.actor.via_id, signIn?.target?.id, "the key was made in that session");
    assert.equal(byAction("agent.created")[0]?.actor.via_id, ariKeyId);
    assert.equal(byAction("api_key.revoked")[0]?.actor.via_id, ownerKeyId);
    // What changed.
    assert.deepEqual(
      byAction("session.sign_in_failed").map((entry) => [entry.details["reason"], entry.target]),
      [["revoked_key", { type: "api_key", id: made.id }]],
    );
    assert.deepEqual(byAction("api_key.created")[0]?.details, { name: "ci", scopes: ["tab.complete", "agents.read"] });
    assert.deepEqual(byAction("user.role_changed")[0]?.details, { from: "member", to: "admin" });
    assert.deepEqual(byAction("user.removed")[0]?.details, { role: "admin", paused_agent_ids: [] });
    assert.deepEqual(byAction("agent.created")[0]?.details, {
      name: "Deployer",
      webhook_url: "http://127.0.0.1:9/hook",
    });
    assert.deepEqual(byAction("agent.webhook_url_changed")[0]?.details, {
      from: "http://127.0.0.1:9/hook",
      to: "http://127.0.0.1:9/other",
    });
    assert.deepEqual(byAction("agent.redelivery_requested")[0]?.target, { type: "delivery", id: ping.id });
  });

  test("no secret, key, token, cookie or webhook credential is in any stored row or in the API's answer", async () => {
    assert.ok(secrets.length >= 12);
    const answer = await (await relay.request("/api/v1/audit?limit=100")).text();
    const stored = JSON.stringify(storedRows(relay));
    assert.ok(stored.includes("agent.signing_secret_replaced"), "the rows are there to search");
    for (const secret of secrets) {
      assert.ok(!answer.includes(secret), `the answer holds ${secret.slice(0, 10)}…`);
      assert.ok(!stored.includes(secret), `a stored row holds ${secret.slice(0, 10)}…`);
      // Not even the first characters the API shows as a key's hint.
      if (secret.startsWith("svc_") || secret.startsWith("whsec_"))
        assert.ok(!stored.includes(secret.slice(-8)), "a stored row holds the end of a secret");
    }
  });

  test("filters by actor, action and time, and pages newest first with limit and before", async () => {
    const all = await auditOf(relay, "?limit=100");
    const owner = relay.user.id;
    assert.deepEqual(
      (await auditOf(relay, `?actor=${owner}&limit=100`)).map((e) => e.id),
      all.filter((e) => e.actor.user_id === owner).map((e) => e.id),
    );
    assert.deepEqual(
      (await auditOf(relay, "?action=agent.paused")).map((e) => e.action),
      ["agent.paused"],
    );
    const since = new Date(START + 3000).toISOString();
    const until = new Date(START + 6000).toISOString();
    assert.deepEqual(
      (await auditOf(relay, `?since=${since}&until=${until}`)).map((e) => e.at),
      all.filter((e) => e.at >= since && e.at < until).map((e) => e.at),
    );
    assert.equal(
      (await auditOf(relay, `?since=${encodeURIComponent("2026-11-24T10:00:03+01:00")}&until=${until}`)).length,
      3,
      "an offset is read as the instant it names",
    );
    const first = await auditOf(relay, "?limit=4");
    const second = await auditOf(relay, `?limit=4&before=${first.at(-1)?.id}`);
    assert.deepEqual(
      [...first, ...second].map((e) => e.id),
      all.slice(0, 8).map((e) => e.id),
    );
    assert.equal((await auditOf(relay)).length, Math.min(50, all.length), "50 by default");
  });

  test("the query is checked at the edge, and the error names the parameter", async () => {
    await expectError(await relay.request("/api/v1/audit?since=yesterday"), 400, "VALIDATION_ERROR", /^query\.since: /);
    await expectError(
      await relay.request("/api/v1/audit?until=2026-13-01T00:00:00Z"),
      400,
      "VALIDATION_ERROR",
      /^query\.until: /,
    );
    await expectError(
      await relay.request("/api/v1/audit?action=key.stolen"),
      400,
      "VALIDATION_ERROR",
      /^query\.action: /,
    );
    await expectError(await relay.request("/api/v1/audit?limit=0"), 400, "VALIDATION_ERROR", /^query\.limit: /);
    await expectError(await relay.request("/api/v1/audit?limit=101"), 400, "VALIDATION_ERROR", /^query\.limit: /);
    await expectError(
      await relay.request(`/api/v1/audit?before=${"x".repeat(65)}`),
      400,
      "VALIDATION_ERROR",
      /^query\.before: /,
    );
  });

  test("records cannot be changed or deleted through the API", async () => {
    const before = await auditOf(relay, "?limit=100");
    const id = before[0]?.id ?? "";
    for (const [method, path] of [
      ["POST", "/api/v1/audit"],
      ["PUT", `/api/v1/audit/${id}`],
      ["PATCH", `/api/v1/audit/${id}`],
      ["DELETE", `/api/v1/audit/${id}`],
      ["DELETE", "/api/v1/audit"],
    ] as const) {
      const response = await relay.request(path, {
        method,
        ...(method === "DELETE" ? {} : { json: { action: "nothing" } }),
      });
      assert.equal(response.status, 404, `${method} ${path}`);
      await response.body?.cancel();
    }
    assert.deepEqual(await auditOf(relay, "?limit=100"), before);
  });
});

describe("who may read the audit log", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" } });
  });
  after(() => relay.close());

  async function person(role: "admin" | "member" | "guest"): Promise<string> {
    return (
      await dataOf<UserCreated>(
        await relay.request("/api/v1/users", { method: "POST", json: { name: `A ${role}`, role } }),
        201,
      )
    ).api_key.secret;
  }

  test("owners and admins read it; members and guests, and keys without users.write, get 403", async () => {
    const [admin, member, guest] = [await person("admin"), await person("member"), await person("guest")];
    assert.equal((await auditOf(relay)).length, 3);
    assert.equal((await auditOf(relay, "", admin)).length, 3);
    await expectError(await relay.request("/api/v1/audit", { key: member }), 403, "FORBIDDEN", /users\.write/);
    await expectError(await relay.request("/api/v1/audit", { key: guest }), 403, "FORBIDDEN", /users\.write/);
    const narrow = await dataOf<ApiKeyCreated>(
      await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "reader", scopes: ["agents.read"] } }),
      201,
    );
    await expectError(await relay.request("/api/v1/audit", { key: narrow.secret }), 403, "FORBIDDEN", /users\.write/);
    await expectError(await relay.request("/api/v1/audit", { key: null }), 401, "UNAUTHORIZED", /Authorization/);
  });

  test("a change whose record cannot be written fails with 500 and is not made", async () => {
    const keysBefore = await dataOf<ApiKey[]>(await relay.request("/api/v1/api-keys"), 200);
    const db = new SqliteDatabase(join(relay.dataDir, "relay.db"));
    db.pragma("busy_timeout = 5000");
    db.exec("alter table audit_log rename to audit_log_away");
    try {
      await expectError(
        await relay.request("/api/v1/api-keys", {
          method: "POST",
          json: { name: "untraced", scopes: ["tab.complete"] },
        }),
        500,
        "INTERNAL_ERROR",
        /./,
      );
      assert.deepEqual(await dataOf<ApiKey[]>(await relay.request("/api/v1/api-keys"), 200), keysBefore);
    } finally {
      db.exec("alter table audit_log_away rename to audit_log");
      db.close();
    }
  });
});

describe("what else is recorded", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" } });
  });
  after(() => relay.close());

  test("a sign-in refused for a removed person or an editor-only key says why, naming the key and its holder", async () => {
    const gone = await dataOf<UserCreated>(
      await relay.request("/api/v1/users", { method: "POST", json: { name: "Gone", role: "member" } }),
      201,
    );
    await dataOf(await relay.request(`/api/v1/users/${gone.user.id}`, { method: "DELETE" }), 200);
    assert.equal(
      (await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: gone.api_key.secret } }))
        .status,
      403,
    );
    const editor = await dataOf<ApiKeyCreated>(
      await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "editor", scopes: ["tab.complete"] } }),
      201,
    );
    assert.equal(
      (await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: editor.secret } })).status,
      403,
    );
    const failed = await auditOf(relay, "?action=session.sign_in_failed");
    assert.deepEqual(
      failed.map((entry) => [entry.details["reason"], entry.actor.user_id, entry.actor.via_id, entry.target?.id]),
      [
        ["no_console_scope", relay.user.id, editor.id, editor.id],
        ["removed_user", gone.user.id, gone.api_key.id, gone.api_key.id],
      ],
    );
  });

  test("removing a person records the pause of each agent they owned, as well as the removal", async () => {
    const mel = await dataOf<UserCreated>(
      await relay.request("/api/v1/users", { method: "POST", json: { name: "Mel", role: "member" } }),
      201,
    );
    const agent = await dataOf<AgentCreated>(
      await relay.request("/api/v1/agents", { key: mel.api_key.secret, method: "POST", json: { name: "Mel's bot" } }),
      201,
    );
    await dataOf(await relay.request(`/api/v1/users/${mel.user.id}`, { method: "DELETE" }), 200);
    const [removal, pause] = (await auditOf(relay, "?limit=2")).reverse();
    assert.deepEqual(
      [removal?.action, removal?.target?.id, removal?.details["paused_agent_ids"]],
      ["user.removed", mel.user.id, [agent.agent.id]],
    );
    assert.deepEqual(
      [pause?.action, pause?.target?.id, pause?.details, pause?.actor.user_id],
      ["agent.paused", agent.agent.id, { owner_removed: mel.user.id }, relay.user.id],
    );
  });
});

describe("webhook URLs in the audit log", () => {
  // Slack's and Discord's path layouts, on a local address (nothing here reaches the internet).
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({
      env: { TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true", TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" },
    });
  });
  after(() => relay.close());

  test("a webhook URL with a secret in its path (Slack's, Discord's) is kept with those segments masked", async () => {
    const slackToken = "abcDEF123ghiJKL456mnoPQR";
    const discordToken = "abcDEF-123_ghiJKL456mnoPQR789stuVWX012yzaBCD345efgHIJ678klmNOP901q";
    const agent = await dataOf<AgentCreated>(
      await relay.request("/api/v1/agents", {
        method: "POST",
        json: { name: "Notifier", webhook_url: `http://127.0.0.1:9/services/T0ABCDEF1/B0ABCDEF2/${slackToken}` },
      }),
      201,
    );
    await dataOf(
      await relay.request(`/api/v1/agents/${agent.agent.id}`, {
        method: "PATCH",
        json: { webhook_url: `http://127.0.0.1:9/api/webhooks/123456789012345678/${discordToken}` },
      }),
      200,
    );
    const log = await auditOf(relay, `?limit=2`);
    assert.deepEqual(
      log.map((entry) => [entry.action, entry.details]),
      [
        [
          "agent.webhook_url_changed",
          {
            from: "http://127.0.0.1:9/services/T0ABCDEF1/B0ABCDEF2/***",
            to: "http://127.0.0.1:9/api/webhooks/***/***",
          },
        ],
        ["agent.created", { name: "Notifier", webhook_url: "http://127.0.0.1:9/services/T0ABCDEF1/B0ABCDEF2/***" }],
      ],
    );
    const stored = JSON.stringify(storedRows(relay));
    assert.ok(!stored.includes(slackToken) && !stored.includes(discordToken), "no token in any stored row");
  });

  test("a Slack token that happens to hold no digit (about one in 70) is masked too; a path of words is kept", async () => {
    const slackToken = "abcDEFghiJKLmnoPQRstuVWX";
    for (const [n, url] of [
      `http://127.0.0.1:9/services/T0ABCDEF1/B0ABCDEF2/${slackToken}`,
      "http://127.0.0.1:9/hooks/tab-relay-notifications/incoming_events",
    ].entries())
      await dataOf(
        await relay.request("/api/v1/agents", { method: "POST", json: { webhook_url: url, name: `Hook${n}` } }),
        201,
      );
    const log = await auditOf(relay, `?limit=2`);
    assert.deepEqual(
      log.map((entry) => entry.details?.["webhook_url"]),
      [
        "http://127.0.0.1:9/hooks/tab-relay-notifications/incoming_events",
        "http://127.0.0.1:9/services/T0ABCDEF1/B0ABCDEF2/***",
      ],
    );
    assert.ok(!JSON.stringify(storedRows(relay)).includes(slackToken), "no token in any stored row");
  });
});

describe("each workspace sees its own records", () => {
  test("a failed sign-in naming no workspace is in no workspace's log, but in the server log and a metric; everything else only in its own", async () => {
    const lines: string[] = [];
    const logger = createJsonLogger({ level: "warn", write: (line) => lines.push(line), now: Date.now });
    const relay = await startTestRelay({ logger, env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000" } });
    try {
      const beta = await initWorkspace(
        relay.relay.store,
        { now: () => Date.now() },
        { slug: "beta", ownerName: "Bea" },
      );
      await dataOf(
        await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "acme's", scopes: ["tab.complete"] } }),
        201,
      );
      const betas = await dataOf<ApiKeyCreated>(
        await relay.request("/api/v1/api-keys", {
          key: beta.apiKey,
          method: "POST",
          json: { name: "beta's", scopes: ["tab.complete"] },
        }),
        201,
      );
      const stranger = newApiKeySecret();
      assert.equal(
        (await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: stranger } })).status,
        401,
      );
      // A key that names beta: refused, and recorded in beta's log only.
      assert.equal(
        (await relay.request("/api/v1/sessions", { method: "POST", key: null, json: { api_key: betas.secret } }))
          .status,
        403,
      );
      const actions = (log: AuditEntry[]) =>
        log.map((entry) => `${entry.action} ${entry.details["name"] ?? entry.details["reason"]}`);
      assert.deepEqual(actions(await auditOf(relay)), ["api_key.created acme's"]);
      assert.deepEqual(actions(await auditOf(relay, "", beta.apiKey)), [
        "session.sign_in_failed no_console_scope",
        "api_key.created beta's",
      ]);
      const refused = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      const unknown = refused.filter((line) => line["msg"] === "sign-in refused: unknown key");
      assert.equal(unknown.length, 1);
      assert.match(String(unknown[0]?.["client"]), LOOPBACK);
      assert.ok(!lines.join("").includes(stranger), "the key tried is never logged");
      const metrics = await (await relay.request("/metrics", { key: null })).text();
      assert.match(metrics, /^tab_relay_sign_ins_refused_total\{reason="unknown_key"\} 1$/m);
      assert.match(metrics, /^tab_relay_sign_ins_refused_total\{reason="no_console_scope"\} 1$/m);
    } finally {
      await relay.close();
    }
  });
});

describe("the address recorded is the client's, behind the proxies the relay trusts", () => {
  for (const [trust, recorded] of [
    ["1", /^203\.0\.113\.9$/],
    [undefined, LOOPBACK],
  ] as const) {
    test(`with TAB_RELAY_TRUST_PROXY=${trust ?? "unset"}`, async () => {
      const relay = await startTestRelay({ env: { ...(trust === undefined ? {} : { TAB_RELAY_TRUST_PROXY: trust }) } });
      try {
        const headers = { "X-Forwarded-For": "203.0.113.9" };
        const editorKey = await dataOf<ApiKeyCreated>(
          await relay.request("/api/v1/api-keys", {
            method: "POST",
            headers,
            json: { name: "from afar", scopes: ["tab.complete"] },
          }),
          201,
        );
        assert.equal(
          (
            await relay.request("/api/v1/sessions", {
              method: "POST",
              key: null,
              headers,
              json: { api_key: editorKey.secret },
            })
          ).status,
          403,
        );
        const log = await auditOf(relay, "?limit=2");
        assert.deepEqual(
          log.map((entry) => entry.action),
          ["session.sign_in_failed", "api_key.created"],
        );
        for (const entry of log) assert.match(entry.actor.address, recorded);
      } finally {
        await relay.close();
      }
    });
  }
});

describe("retention: TAB_RELAY_USAGE_RETENTION_DAYS", () => {
  test("a relay started after records passed the retention has deleted them by the time it is up; newer ones stay", async () => {
    const DAY = 24 * 60 * 60 * 1000;
    const clock = fakeClock(START);
    const first = await startTestRelay({ clock, env: { TAB_RELAY_USAGE_RETENTION_DAYS: "2" } });
    let relay: TestRelay | undefined;
    try {
      await dataOf(
        await first.request("/api/v1/api-keys", { method: "POST", json: { name: "old", scopes: ["tab.complete"] } }),
        201,
      );
      clock.advance(DAY);
      await dataOf(
        await first.request("/api/v1/api-keys", { method: "POST", json: { name: "newer", scopes: ["tab.complete"] } }),
        201,
      );
      assert.equal((await auditOf(first)).length, 2);
      await first.relay.close(0);
      clock.advance(DAY + 1);
      relay = await startTestRelay({ clock, reuse: first, env: { TAB_RELAY_USAGE_RETENTION_DAYS: "2" } });
      assert.deepEqual(
        (await auditOf(relay)).map((entry) => entry.details["name"]),
        ["newer"],
      );
    } finally {
      await (relay ?? first).close();
    }
  });
});
