// Setup, the wrong-workspace diagnosis and recovery from an unreachable relay, against a real relay over real HTTP:
// the extension core asks GET /api/v1/me what the relay knows about the key.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { systemClock } from "@tab-relay/shared";
import { CompletionSession } from "../../extension/src/core/completionSession";
import { checkConnection, describeConnection } from "../../extension/src/core/connection";
import { DEFAULT_SETTINGS } from "../../extension/src/core/settings";
import { StatusController, initialStatus, type Notice } from "../../extension/src/core/status";
import { describeNotice } from "../../extension/src/core/statusView";
import { inputAt } from "../../extension/src/core/testing/fixtures";
import { startTestRelay, type TestRelay } from "../support/relayHarness";

const deps = { fetch: (url: string, init: Parameters<typeof fetch>[1]) => fetch(url, init), clock: systemClock };

async function waitUntil<T>(what: string, timeoutMs: number, check: () => T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function freePort(): Promise<number> {
  const spare = createServer();
  await new Promise<void>((resolve) => spare.listen(0, "127.0.0.1", resolve));
  const { port } = spare.address() as AddressInfo;
  await new Promise<void>((resolve) => spare.close(() => resolve()));
  return port;
}

describe("setup and diagnosis against the relay's GET /me", () => {
  let relay: TestRelay;
  before(async () => {
    relay = await startTestRelay({ slug: "acme" });
  });
  after(() => relay.close());

  test("a good key and workspace: connected, naming the workspace, the person and their role", async () => {
    const check = await checkConnection(deps, {
      relayUrl: relay.url,
      apiKey: relay.apiKey,
      workspaceSlug: "acme",
      timeoutMs: 5_000,
    });
    assert.equal(check.kind, "connected");
    const { name } = relay.user;
    const workspace = relay.workspace.name === "acme" ? "workspace acme" : `workspace ${relay.workspace.name} (acme)`;
    assert.equal(describeConnection(check, relay.url), `Connected to ${workspace} as ${name} (owner).`);
  });

  test("a good key for another workspace is told apart from a bad key, and names the key's workspace", async () => {
    const wrong = await checkConnection(deps, {
      relayUrl: relay.url,
      apiKey: relay.apiKey,
      workspaceSlug: "other",
      timeoutMs: 5_000,
    });
    assert.equal(wrong.kind, "wrongWorkspace");
    assert.match(describeConnection(wrong, relay.url), /belongs to workspace .*acme.*, not "other"/);
    const bad = await checkConnection(deps, {
      relayUrl: relay.url,
      apiKey: `${relay.apiKey.slice(0, -3)}xyz`,
      workspaceSlug: "acme",
      timeoutMs: 5_000,
    });
    assert.equal(bad.kind, "unauthorized");
  });

  test("a completion refused for a wrong workspace shows wrongWorkspace with the key's workspace, not unauthorized", async () => {
    const status = new StatusController(systemClock, initialStatus(true, []));
    const notices: Notice[] = [];
    status.onNotice((notice) => notices.push(notice));
    const session = new CompletionSession({
      clock: systemClock,
      fetch: deps.fetch,
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
      getSettings: () => ({ ...DEFAULT_SETTINGS, relayUrl: relay.url, workspaceSlug: "other", debounceMs: 0 }),
      getApiKey: () => Promise.resolve(relay.apiKey),
      status,
    });
    assert.equal(await session.provide(inputAt("const a = █")), undefined);
    assert.equal(status.kind, "wrongWorkspace");
    assert.equal(notices.length, 1, JSON.stringify(notices));
    const [notice] = notices;
    assert.equal(notice?.keyWorkspace?.slug, "acme");
    const view = describeNotice("wrongWorkspace", notice?.message ?? "", relay.url, notice?.keyWorkspace, "other");
    assert.match(view.message, /belongs to workspace .*acme.*, not "other"/);
    assert.deepEqual(view.actions[0], "useKeyWorkspace");
    // No second request is sent while the workspace is wrong.
    assert.equal(await session.provide(inputAt("const a = 1█")), undefined);
    assert.equal(session.stats.requestsStarted, 1);
  });

  test("a relay that is not listening is unreachable, within the time given", async () => {
    const port = await freePort();
    const check = await checkConnection(deps, {
      relayUrl: `http://127.0.0.1:${port}`,
      apiKey: relay.apiKey,
      workspaceSlug: "acme",
      timeoutMs: 5_000,
    });
    assert.equal(check.kind, "unreachable");
    assert.match(
      describeConnection(check, `http://127.0.0.1:${port}`),
      /Cannot reach the relay at http:\/\/127\.0\.0\.1/,
    );
  });
});

test("after a relay restart the status returns to ready by itself, probing on the backoff schedule, no keystroke", async () => {
  const first = await startTestRelay({ slug: "acme" });
  const port = Number(new URL(first.url).port);
  let relay: TestRelay | undefined;
  const settings = { ...DEFAULT_SETTINGS, relayUrl: first.url, workspaceSlug: "acme", debounceMs: 0 };
  let probes = 0;
  const status = new StatusController(systemClock, initialStatus(true, []), async () => {
    probes++;
    const check = await checkConnection(deps, { ...settings, apiKey: first.apiKey, timeoutMs: 2_000 });
    return { reachable: check.kind !== "unreachable", message: check.kind === "unreachable" ? check.message : "" };
  });
  const session = new CompletionSession({
    clock: systemClock,
    fetch: deps.fetch,
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
    getSettings: () => settings,
    getApiKey: () => Promise.resolve(first.apiKey),
    status,
  });
  try {
    await first.relay.close();
    assert.equal(await session.provide(inputAt("const a = █")), undefined);
    assert.equal(status.kind, "unreachable");
    // The first probe (1 s later) finds it still down.
    await waitUntil("a probe of the stopped relay", 5_000, () => (probes >= 1 ? true : undefined));
    assert.equal(status.kind, "unreachable");
    relay = await startTestRelay({ reuse: first, env: { TAB_RELAY_PORT: String(port) } });
    const requestsBefore = session.stats.requestsStarted;
    await waitUntil("the status to return to ready", 10_000, () => (status.kind === "ready" ? true : undefined));
    assert.equal(session.stats.requestsStarted, requestsBefore, "a completion request was needed to recover");
    assert.ok(probes >= 2, `probes: ${probes}`);
  } finally {
    status.dispose();
    await relay?.close();
  }
});
