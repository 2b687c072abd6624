/**
 * Run as its own process by test/relay/startupFootprint.test.ts, so its module cache is the relay's alone: starts a
 * relay on a fresh SQLite folder without Redis (with the local engine, or an upstream when the argument is
 * `upstream`), lets the work it schedules after listening run, prints which CommonJS packages are loaded and, on the
 * local engine, how many threads the process has before and after a non-streamed completion (which counts prompt
 * tokens for `usage`), and stops.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../../relay/src/clock";
import { loadConfig } from "../../relay/src/config";
import { silentLogger } from "../../relay/src/logger";
import { openStore, startRelay } from "../../relay/src/main";
import { initWorkspace } from "../../relay/src/workspace/init";

const WATCHED = ["better-sqlite3", "pg", "ioredis", "undici", "ws"] as const;

const upstream = process.argv[2] === "upstream";
const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-footprint-"));
try {
  const config = loadConfig({
    TAB_RELAY_DATA: dataDir,
    TAB_RELAY_PORT: "0",
    TAB_RELAY_LOG_LEVEL: "silent",
    ...(upstream
      ? {
          TAB_RELAY_PROVIDER: "openai",
          TAB_RELAY_UPSTREAM_URL: "http://127.0.0.1:9/v1",
          TAB_RELAY_UPSTREAM_MODEL: "none",
        }
      : {}),
  });
  const store = await openStore(config);
  const { apiKey } = await initWorkspace(store, systemClock, { slug: "acme", ownerName: "Olive Owner" });
  const relay = await startRelay(config, { store, logger: silentLogger, consoleDir: null });
  // After the relay's own immediate (the warm-up it schedules once listening).
  await new Promise((resolve) => setImmediate(resolve));
  const paths = Object.keys(createRequire(import.meta.url).cache);
  const loaded = WATCHED.filter((name) => paths.some((path) => path.includes(`/node_modules/${name}/`)));
  const threads = () => readdirSync("/proc/self/task").length;
  const threadsBefore = threads();
  let promptTokens: number | undefined;
  if (!upstream) {
    const tab_context = {
      surface: "code",
      workspace_slug: "acme",
      entity_id: "a.ts",
      document_type: "plaintext",
      active_text_before_cursor: "const a = ",
      active_text_after_cursor: "\n",
    };
    const response = await fetch(`${relay.url}/api/v1/tab/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tab-v1", tab_context }),
    });
    promptTokens = ((await response.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
  }
  process.stdout.write(`${JSON.stringify({ loaded, threadsBefore, threadsAfter: threads(), promptTokens })}\n`);
  await relay.close(0);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
