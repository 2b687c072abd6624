import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AGENT_SOCKET_PATHS, LIVE_PATHS } from "../../relay/src/live/upgrade";
import { startRelayWithRoutes } from "../support/registeredRoutes";
import { PATTERN_ROUTES, SOCKET_ROUTES, catalogueKeys } from "./catalogue";
import type { Fixtures } from "./fixtures";

const fakeFixtures = {
  agent: { id: "agt_1" },
  channel: { id: "ch_1" },
  dm: { id: "dm_1" },
  message: { id: "msg_1" },
} as Fixtures;

describe("the fuzz suite's route catalogue", () => {
  let relay: Awaited<ReturnType<typeof startRelayWithRoutes>>;
  let registered: { keys: Set<string>; patterns: RegExp[] };

  before(async () => {
    relay = await startRelayWithRoutes();
    registered = relay.registered;
  });
  after(async () => {
    await relay?.close();
  });

  test("every route the relay registers has a sample in the catalogue", () => {
    const catalogued = catalogueKeys();
    const missing = [...registered.keys].filter((key) => !catalogued.has(key));
    assert.deepEqual(
      missing,
      [],
      `add these routes to test/fuzz/catalogue.ts with a valid sample request: ${missing.join(", ")}`,
    );
    assert.ok(
      registered.keys.size > 40,
      `only ${registered.keys.size} routes found: the walk missed the mounted routers`,
    );
  });

  test("the catalogue holds no route the relay does not serve", () => {
    const stale = [...catalogueKeys()].filter((key) => !registered.keys.has(key));
    assert.deepEqual(stale, [], `these catalogue entries match no registered route: ${stale.join(", ")}`);
  });

  test("each sample page matches the console's page pattern", () => {
    for (const route of PATTERN_ROUTES) {
      const pattern = registered.patterns.find((candidate) => candidate.source === route.source);
      assert.ok(pattern, `no registered pattern ${route.source}`);
      for (const path of route.samples(fakeFixtures)) assert.match(path, pattern, path);
    }
  });

  test("both WebSocket endpoints are catalogued under every path the upgrade handler accepts", () => {
    const catalogued = new Set(SOCKET_ROUTES.flatMap((route) => route.paths));
    assert.deepEqual([...catalogued].sort(), [...LIVE_PATHS, ...AGENT_SOCKET_PATHS].sort());
  });
});
