import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { AGENT_SOCKET_PATHS, LIVE_PATHS } from "../../relay/src/live/upgrade";
import { openApiDocument, openApiPath } from "../../relay/src/openapi/document";
import { NOT_OPERATIONS, OPERATIONS, isUpgrade, operationKeys } from "../../relay/src/openapi/operations";
import { packageVersion } from "../../relay/src/version";
import { runCommand } from "../support/relayProcess";
import { startRelayWithRoutes } from "../support/registeredRoutes";

/**
 * The OpenAPI 3.1 document (relay/src/openapi/): served at /api/v1/openapi.json without a key, valid by a real
 * validator (Redocly CLI's recommended-strict rules, test/openapi/redocly.yaml), and complete: every route the relay's
 * express app registers is an operation in it, and every operation is a route the relay serves.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const REDOCLY = join(ROOT, "node_modules/.bin/redocly");

describe("the OpenAPI document", () => {
  let relay: Awaited<ReturnType<typeof startRelayWithRoutes>>;
  const dir = mkdtempSync(join(tmpdir(), "tab-relay-openapi-"));

  before(async () => {
    relay = await startRelayWithRoutes();
  });
  after(async () => {
    await relay?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("is served at /api/v1/openapi.json and /v1/openapi.json without a key, as built, with the package's version", async () => {
    for (const path of ["/api/v1/openapi.json", "/v1/openapi.json"]) {
      const response = await fetch(`${relay.relay.url}${path}`);
      assert.equal(response.status, 200, path);
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
      const document = (await response.json()) as { openapi: string; info: { version: string } };
      assert.deepEqual(document, openApiDocument(packageVersion()));
      assert.equal(document.openapi, "3.1.0");
      assert.equal(document.info.version, packageVersion());
    }
  });

  test("passes redocly lint with the recommended-strict rules", async () => {
    const file = join(dir, "openapi.json");
    writeFileSync(file, JSON.stringify(openApiDocument(packageVersion()), null, 2));
    const lint = await runCommand(
      REDOCLY,
      ["lint", file, "--config", join(ROOT, "test/openapi/redocly.yaml"), "--format=stylish"],
      {
        cwd: dir,
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
        killAfterMs: 120_000,
      },
    );
    assert.equal(lint.status, 0, `${lint.stdout}\n${lint.stderr}`);
    assert.match(lint.stdout + lint.stderr, /Your API description is valid/);
  });

  test("describes every route the relay registers", () => {
    const documented = new Set(OPERATIONS.flatMap(operationKeys));
    const missing = [...relay.registered.keys].filter(
      (key) => !documented.has(key) && !NOT_OPERATIONS.some((skipped) => key.startsWith(skipped)),
    );
    assert.deepEqual(
      missing,
      [],
      `add these routes to OPERATIONS in relay/src/openapi/operations.ts (with the schemas their handlers parse): ${missing.join(", ")}`,
    );
    assert.ok(relay.registered.keys.size > 40, "the walk found the mounted routers");
  });

  test("holds no operation the relay does not serve", () => {
    const stale = OPERATIONS.filter((operation) => !isUpgrade(operation))
      .flatMap(operationKeys)
      .filter((key) => !relay.registered.keys.has(key));
    assert.deepEqual(stale, [], `these operations match no registered route: ${stale.join(", ")}`);
    const sockets = OPERATIONS.filter(isUpgrade).flatMap((operation) =>
      operationKeys(operation).map((key) => key.replace(/^GET /, "")),
    );
    assert.deepEqual(sockets.sort(), [...LIVE_PATHS, ...AGENT_SOCKET_PATHS].sort(), "the WebSocket endpoints");
  });

  test("names each operation once, and each path's parameters after its pattern", () => {
    const ids = OPERATIONS.map((operation) => operation.operationId);
    assert.deepEqual(
      ids.filter((id, index) => ids.indexOf(id) !== index),
      [],
    );
    for (const operation of OPERATIONS) {
      const names = [...operation.path.matchAll(/:([A-Za-z_]+)/g)].map((match) => match[1]).sort();
      const declared = Object.keys(operation.params?.shape ?? {}).sort();
      assert.deepEqual(declared, names, `${operation.method} ${openApiPath(operation)}`);
    }
  });
});
