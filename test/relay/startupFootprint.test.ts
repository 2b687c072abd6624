import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { runCommand } from "../support/relayProcess";

/**
 * What a relay loads to start: pg, ioredis and undici are loaded when a setting needs them, not by every relay
 * (together some 20 MB of resident memory on a relay that never uses them; docs/benchmarks.md), and ws with the
 * first WebSocket upgrade (test/relay/upgrade.test.ts and socketMode.test.ts upgrade through it).
 * better-sqlite3 is the control: it is always loaded, so a package the check cannot see would show there.
 */

const root = fileURLToPath(new URL("../..", import.meta.url));

interface Footprint {
  loaded: string[];
  threadsBefore: number;
  threadsAfter: number;
  promptTokens?: number;
}

async function footprint(mode: "local" | "upstream"): Promise<Footprint> {
  const run = await runCommand(process.execPath, ["--import", "tsx", "test/support/startupFootprint.ts", mode], {
    cwd: root,
    env: process.env,
    killAfterMs: 60_000,
  });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout.trim().split("\n").at(-1) as string) as Footprint;
}

test("a relay on SQLite without Redis, on the local engine, loads neither pg nor ioredis nor undici nor ws", async () => {
  assert.deepEqual((await footprint("local")).loaded, ["better-sqlite3"]);
});

test("a relay with an upstream loads its HTTP client right after listening, before its first completion", async () => {
  assert.deepEqual((await footprint("upstream")).loaded, ["better-sqlite3", "undici"]);
});

test("a non-streamed completion counts its prompt tokens without starting a thread (a worker's second tokenizer)", async () => {
  const { threadsBefore, threadsAfter, promptTokens } = await footprint("local");
  assert.equal(promptTokens, 5);
  assert.equal(threadsAfter, threadsBefore);
});
