/**
 * The routes a relay's express app really registers, found by walking its router: what the catalogues (the fuzz
 * suite's, test/fuzz/catalogue.test.ts, and the OpenAPI document's, test/openapi/document.test.ts) are checked against.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../relay/src/config";
import { silentLogger } from "../../relay/src/logger";
import { type RunningRelay, openStore, startRelay } from "../../relay/src/main";
import { initWorkspace } from "../../relay/src/workspace/init";

type PathSpec = string | RegExp | PathSpec[];
interface Layer {
  name: string;
  rawPath?: PathSpec;
  route?: { path: PathSpec; methods: Record<string, boolean | undefined> };
  handle: { stack?: Layer[] };
}
export interface ExpressApp {
  router: { stack: Layer[] };
}

const flat = (spec: PathSpec | undefined): (string | RegExp)[] =>
  spec === undefined ? ["/"] : Array.isArray(spec) ? spec.flatMap(flat) : [spec];

/**
 * Every route an express app serves, as `METHOD /full/path` (a regular expression route as `METHOD re:source`, the
 * static file server as `GET static`), found by walking its router's layers and the routers mounted in them.
 * router 2.x keeps each layer's path as given (`rawPath`; node_modules/router/lib/layer.js).
 */
export function registeredRoutes(app: ExpressApp): { keys: Set<string>; patterns: RegExp[] } {
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

/**
 * A relay on a fresh data folder (with a console of its own, so the console's routes are mounted whether or not the
 * real one was built), and the routes its express app registers.
 */
export async function startRelayWithRoutes(): Promise<{
  relay: RunningRelay;
  registered: { keys: Set<string>; patterns: RegExp[] };
  close(): Promise<void>;
}> {
  const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-catalogue-"));
  const consoleDir = mkdtempSync(join(tmpdir(), "tab-relay-catalogue-console-"));
  writeFileSync(join(consoleDir, "index.html"), "<!doctype html>");
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
  let relay: RunningRelay;
  try {
    const config = loadConfig({ TAB_RELAY_DATA: dataDir, TAB_RELAY_PORT: "0", TAB_RELAY_LOG_LEVEL: "silent" });
    const store = await openStore(config);
    await initWorkspace(store, { now: () => Date.now() }, { slug: "acme", ownerName: "Olive Owner" });
    relay = await startRelay(config, { store, logger: silentLogger, consoleDir });
  } finally {
    express.application.init = init;
  }
  assert.equal(apps.length, 1, "the relay builds one express app");
  return {
    relay,
    registered: registeredRoutes(apps[0] as ExpressApp),
    async close() {
      await relay.close(0);
      for (const dir of [dataDir, consoleDir]) rmSync(dir, { recursive: true, force: true });
    },
  };
}
