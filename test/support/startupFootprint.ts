/**
 * Run as its own process by test/relay/startupFootprint.test.ts, so its module cache is the relay's alone: starts a
 * relay on a fresh SQLite folder without Redis (with the local engine, or an upstream when the argument is
 * `upstream`), lets the work it schedules after listening run, prints which CommonJS packages are loaded, and stops.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../../relay/src/clock";
import { loadConfig } from "../../relay/src/config";
import { silentLogger } from "../../relay/src/logger";
import { openStore, startRelay } from "../../relay/src/main";
import { initWorkspace } from "../../relay/src/workspace/init";

const WATCHED = ["better-sqlite3", "pg", "ioredis", "undici"] as const;

const upstream = process.argv[2] === "upstream";
const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-footprint-"));
try {
  const config = loadConfig({
    TAB_RELAY_DATA: dataDir,
    TAB_RELAY_PORT: "0",
    TAB_RELAY_LOG_LEVEL: "silent",
    ...(upstream ? { TAB_RELAY_PROVIDER: "openai", TAB_RELAY_UPSTREAM_URL: "http://127.0.0.1:9/v1", TAB_RELAY_UPSTREAM_MODEL: "none" } : {}),
  });
  const store = await openStore(config);
  await initWorkspace(store, systemClock, { slug: "acme", ownerName: "Olive Owner" });
  const relay = await startRelay(config, { store, logger: silentLogger, consoleDir: null });
  // After the relay's own immediate (the warm-up it schedules once listening).
  await new Promise((resolve) => setImmediate(resolve));
  const paths = Object.keys(createRequire(import.meta.url).cache);
  const loaded = WATCHED.filter((name) => paths.some((path) => path.includes(`/node_modules/${name}/`)));
  process.stdout.write(`${JSON.stringify({ loaded })}\n`);
  await relay.close(0);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
