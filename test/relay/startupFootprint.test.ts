import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
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

test("the relay's bundle has no character above U+00FF, so V8 holds its source as one byte per character", () => {
  // A single one (a literal U+FF5C in a template esbuild cannot escape) doubled the 0.7 MB source string every relay
  // keeps in its heap (docs/benchmarks.md, issue 23).
  const source = readFileSync(join(root, "relay/dist/cli.js"), "utf8");
  const lines = source.split("\n");
  const wide = lines.flatMap((line, index) => (/[\u0100-\uffff]/.test(line) ? [`${index + 1}: ${line.trim()}`] : []));
  assert.deepEqual(wide, []);
});
