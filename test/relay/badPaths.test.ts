import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { systemClock } from "../../relay/src/clock";
import { loadConfig } from "../../relay/src/config";
import { silentLogger } from "../../relay/src/logger";
import { type RunningRelay, openStore, startRelay } from "../../relay/src/main";
import { initWorkspace } from "../../relay/src/workspace/init";

/**
 * Sends `path` byte for byte (fetch would leave it alone too, but node:http makes that plain) and reads the answer.
 */
function raw(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"]), body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("a path with a broken %-escape", () => {
  let relay: RunningRelay;
  let dataDir: string;
  let consoleDir: string;
  let ownerKey: string;
  let agentToken: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "tab-relay-paths-"));
    // A console of its own, so the static family is served whether or not the real console was built.
    consoleDir = mkdtempSync(join(tmpdir(), "tab-relay-paths-console-"));
    writeFileSync(join(consoleDir, "index.html"), "<!doctype html><title>console</title>");
    mkdirSync(join(consoleDir, "assets"));
    writeFileSync(join(consoleDir, "assets", "app.js"), "export {};");
    const config = loadConfig({ TAB_RELAY_DATA: dataDir, TAB_RELAY_PORT: "0", TAB_RELAY_LOG_LEVEL: "silent" });
    const store = await openStore(config);
    const clock = systemClock;
    const init = await initWorkspace(store, clock, { slug: "acme", ownerName: "Olive Owner" });
    ownerKey = init.apiKey;
    relay = await startRelay(config, { store, clock, logger: silentLogger, consoleDir });
    const created = await fetch(`${relay.url}/api/v1/agents`, {
      method: "POST",
      headers: { Authorization: `Bearer ${ownerKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "pathfinder" }),
    });
    assert.equal(created.status, 201);
    agentToken = ((await created.json()) as { data: { token: string } }).data.token;
  });
  after(async () => {
    await relay.close(0);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(consoleDir, { recursive: true, force: true });
  });

  const cases: { family: string; method: string; path: string; as: "owner" | "agent" | "nobody" }[] = [
    { family: "main API, a route parameter", method: "GET", path: "/api/v1/agents/%ZZ", as: "owner" },
    { family: "main API, a truncated UTF-8 escape", method: "DELETE", path: "/api/v1/users/%E0%A4%A", as: "owner" },
    { family: "main API under /v1", method: "GET", path: "/v1/agents/%ZZ", as: "owner" },
    { family: "main API, no credentials", method: "GET", path: "/api/v1/agents/%ZZ", as: "nobody" },
    {
      family: "main API, a byte that is not UTF-8",
      method: "GET",
      path: "/api/v1/conversations/channel/%FF/messages",
      as: "owner",
    },
    { family: "Agent API", method: "GET", path: "/api/v1/agent-api/conversations/channel/%ZZ/messages", as: "agent" },
    {
      family: "Agent API under /v1",
      method: "POST",
      path: "/v1/agent-api/conversations/channel/%ZZ/messages",
      as: "agent",
    },
    {
      family: "Agent API, no token",
      method: "GET",
      path: "/api/v1/agent-api/conversations/channel/%ZZ/messages",
      as: "nobody",
    },
    { family: "sign-in", method: "POST", path: "/api/v1/sessions/%ZZ", as: "nobody" },
    { family: "sessions with a key", method: "DELETE", path: "/api/v1/sessions/%ZZ", as: "owner" },
    { family: "console page", method: "GET", path: "/%ZZ", as: "nobody" },
    { family: "console asset", method: "GET", path: "/assets/%E0", as: "nobody" },
    { family: "console route", method: "GET", path: "/conversations/channel/%ZZ", as: "nobody" },
    { family: "health", method: "GET", path: "/healthz%ZZ", as: "nobody" },
    {
      family: "completion, a spelling beside the canonical path",
      method: "POST",
      path: "/api/v1/tab/chat/completions%ZZ",
      as: "owner",
    },
  ];

  for (const { family, method, path, as } of cases) {
    test(`${family}: ${method} ${path} answers 400 VALIDATION_ERROR naming the path`, async () => {
      const token = as === "owner" ? ownerKey : as === "agent" ? agentToken : undefined;
      const headers: Record<string, string> = { Accept: "text/html, application/json" };
      if (token) headers["Authorization"] = `Bearer ${token}`;
      const answer = await raw(relay.url, method, `${path}?limit=5`, headers);
      assert.equal(answer.status, 400, answer.body);
      assert.match(answer.type, /^application\/json/);
      const body = JSON.parse(answer.body) as { error: { code: string; message: string } };
      assert.deepEqual(Object.keys(body), ["error"]);
      assert.equal(body.error.code, "VALIDATION_ERROR");
      assert.ok(body.error.message.startsWith(`path: "${path}" `), body.error.message);
    });
  }

  test("an escape that decodes still reaches its route, and the relay keeps serving", async () => {
    const missing = await raw(relay.url, "GET", "/api/v1/agents/agt_%41BC", { Authorization: `Bearer ${ownerKey}` });
    assert.equal(missing.status, 404, missing.body);
    assert.equal((await raw(relay.url, "GET", "/healthz")).status, 200);
    assert.equal((await raw(relay.url, "GET", "/assets/app%2Ejs")).status, 200);
  });
});
