import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../relay/src/config";
import { AGENT_SOCKET_PATHS, LIVE_PATHS } from "../../relay/src/live/upgrade";
import { silentLogger } from "../../relay/src/logger";
import { type RunningRelay, openStore, startRelay } from "../../relay/src/main";
import { initWorkspace } from "../../relay/src/workspace/init";
import { PATTERN_ROUTES, SOCKET_ROUTES, catalogueKeys } from "./catalogue";
import type { Fixtures } from "./fixtures";

type PathSpec = string | RegExp | PathSpec[];
interface Layer {
  name: string;
  rawPath?: PathSpec;
  route?: { path: PathSpec; methods: Record<string, boolean | undefined> };
  handle: { stack?: Layer[] };
}
interface ExpressApp {
  router: { stack: Layer[] };
}

const flat = (spec: PathSpec | undefined): (string | RegExp)[] =>
  spec === undefined ? ["/"] : Array.isArray(spec) ? spec.flatMap(flat) : [spec];

/**
 * Every route an express app serves, as `METHOD /full/path` (a regular expression route as `METHOD re:source`, the
 * static file server as `GET static`), found by walking its router's layers and the routers mounted in them.
 * router 2.x keeps each layer's path as given (`rawPath`; node_modules/router/lib/layer.js).
 */
function registeredRoutes(app: ExpressApp): { keys: Set<string>; patterns: RegExp[] } {
  const keys = new Set<string>();
  const patterns: RegExp[] = [];
  const walk = (stack: Layer[], prefixes: string[]) => {
    for (const layer of stack) {
      if (layer.route) {
        const methods = Object.entries(layer.route.methods)
          .filter(([, on]) => on)
          .map(([method]) => method.toUpperCase());
        for (const path of flat(layer.route.path)) {
          for (const method of methods) {
            if (path instanceof RegExp) {
              patterns.push(path);
              keys.add(`${method} re:${path.source}`);
            } else for (const prefix of prefixes) keys.add(`${method} ${prefix}${path}`);
          }
        }
      } else if (Array.isArray(layer.handle.stack)) {
        const mounted = flat(layer.rawPath).map((path) => {
          if (path instanceof RegExp)
            throw new Error(`a router mounted at a regular expression (${path.source}) cannot be catalogued`);
          return path === "/" ? "" : path;
        });
        walk(
          layer.handle.stack,
          prefixes.flatMap((prefix) => mounted.map((path) => prefix + path)),
        );
      } else if (layer.name === "serveStatic") {
        keys.add("GET static");
      }
    }
  };
  walk(app.router.stack, [""]);
  return { keys, patterns };
}

const fakeFixtures = {
  agent: { id: "agt_1" },
  channel: { id: "ch_1" },
  dm: { id: "dm_1" },
  message: { id: "msg_1" },
} as Fixtures;

describe("the fuzz suite's route catalogue", () => {
  let relay: RunningRelay;
  let registered: { keys: Set<string>; patterns: RegExp[] };
  const dirs: string[] = [];

  before(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-catalogue-"));
    // A console of its own, so its routes are mounted whether or not the real console was built.
    const consoleDir = mkdtempSync(join(tmpdir(), "tab-relay-catalogue-console-"));
    writeFileSync(join(consoleDir, "index.html"), "<!doctype html>");
    dirs.push(dataDir, consoleDir);
    // The app is built inside startRelay; express's application prototype is where every app starts (init), so
    // that is where the one being built can be caught.
    const express = createRequire(fileURLToPath(new URL("../../relay/src/app.ts", import.meta.url)))("express") as {
      application: { init(): void };
    };
    const apps: ExpressApp[] = [];
    const init = express.application.init;
    express.application.init = function (this: ExpressApp) {
      apps.push(this);
      init.call(this);
    };
    try {
      const config = loadConfig({ TAB_RELAY_DATA: dataDir, TAB_RELAY_PORT: "0", TAB_RELAY_LOG_LEVEL: "silent" });
      const store = await openStore(config);
      await initWorkspace(store, { now: () => Date.now() }, { slug: "acme", ownerName: "Olive Owner" });
      relay = await startRelay(config, { store, logger: silentLogger, consoleDir });
    } finally {
      express.application.init = init;
    }
    assert.equal(apps.length, 1, "the relay builds one express app");
    registered = registeredRoutes(apps[0] as ExpressApp);
  });
  after(async () => {
    await relay?.close(0);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
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
