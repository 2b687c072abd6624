import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { completionBody } from "../support/relayHarness";
import { startUpstreamStandIn } from "../support/upstreamStandIn";

const BIN = fileURLToPath(new URL("../../relay/bin/tab-relay.js", import.meta.url));
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));

function cli(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", env: { ...cleanEnv, ...env }, timeout: 20_000 });
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "tab-relay-cli-"));
}

interface Served {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  exited: Promise<number | null>;
}

/** Runs `tab-relay serve` on port 0 and waits until it says where it listens. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [BIN, "serve", "--port", "0", ...args], { env: { ...cleanEnv, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`relay did not start: ${stderr}`)), 15_000);
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /serving on (http:\/\/\S+)/.exec(stderr);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.on("exit", () => reject(new Error(`relay exited: ${stderr}`)));
  });
  return { child, url, stdout: () => stdout, exited };
}

describe("tab-relay CLI", () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  test("init --json prints the workspace, the owner and an all-scopes key once", () => {
    const data = tempDir();
    dirs.push(data);
    const result = cli(["init", "--data", data, "--workspace", "acme", "--owner", "Ada", "--json"]);
    assert.equal(result.status, 0, result.stderr);
    const lines = result.stdout.trim().split("\n");
    assert.equal(lines.length, 1);
    const out = JSON.parse(lines[0] as string) as { workspace: { slug: string }; user: { name: string; role: string }; api_key: string };
    assert.equal(out.workspace.slug, "acme");
    assert.deepEqual([out.user.name, out.user.role], ["Ada", "owner"]);
    assert.match(out.api_key, /^svc_ws_[0-9A-Za-z]{36}$/);
    assert.ok(existsSync(join(data, "relay.db")));

    const again = cli(["init", "--data", data, "--workspace", "acme", "--owner", "Ada"]);
    assert.equal(again.status, 2);
    assert.match(again.stderr, /already exists/);
  });

  test("init names what is missing", () => {
    const result = cli(["init", "--data", tempDir()]);
    assert.equal(result.status, 2);
    assert.match(result.stderr, /--workspace SLUG and --owner NAME/);
  });

  test("bad configuration fails at start with every problem listed", () => {
    const result = cli(["serve", "--port", "http", "--log-level", "loud"], { TAB_RELAY_RATE_LIMITS: "reads=x" });
    assert.equal(result.status, 2);
    for (const problem of [/TAB_RELAY_DATA/, /TAB_RELAY_PORT/, /TAB_RELAY_LOG_LEVEL/, /TAB_RELAY_RATE_LIMITS/]) assert.match(result.stderr, problem);
  });

  test("serve refuses a data folder that was never initialised", () => {
    const result = cli(["serve", "--data", tempDir(), "--port", "0"]);
    assert.equal(result.status, 2);
    assert.match(result.stderr, /tab-relay init/);
  });

  test("serve answers /healthz, logs JSON lines without secrets, and on SIGTERM lets a stream finish", async () => {
    const data = tempDir();
    dirs.push(data);
    const { api_key: key } = JSON.parse(cli(["init", "--data", data, "--workspace", "acme", "--owner", "Ada", "--json"]).stdout) as { api_key: string };
    const upstream = await startUpstreamStandIn({ behaviour: { kind: "reply", text: ["\n", "  return", " a", " + b;", "\n}"], chunkDelayMs: 150 } });
    try {
      const relay = await serve(["--data", data], { TAB_RELAY_UPSTREAM_URL: upstream.url, TAB_RELAY_UPSTREAM_MODEL: "m" });
      assert.equal((await fetch(`${relay.url}/healthz`)).status, 200);

      const response = await fetch(`${relay.url}/api/v1/tab/chat/completions`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify(completionBody({}, { stream: true })),
      });
      assert.equal(response.status, 200);
      relay.child.kill("SIGTERM");
      const body = await response.text();
      assert.ok(body.trimEnd().endsWith("data: [DONE]"), body);
      assert.equal(await relay.exited, 0);

      const lines = relay.stdout().trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.ok(lines.some((line) => line["msg"] === "request" && line["route"] === "/api/v1/tab/chat/completions" && line["status"] === 200));
      assert.ok(lines.some((line) => line["msg"] === "relay stopped" && line["streams_finished"] === 1));
      assert.ok(!relay.stdout().includes(key), "the API key never reaches the log");
    } finally {
      await upstream.close();
    }
  });

  test("a second relay on a data folder that one already serves is refused; once it stops, the folder serves again", async () => {
    const data = tempDir();
    dirs.push(data);
    assert.equal(cli(["init", "--data", data, "--workspace", "acme", "--owner", "Ada"]).status, 0);
    const first = await serve(["--data", data]);
    const second = cli(["serve", "--data", data, "--port", "0"]);
    assert.equal(second.status, 2, second.stderr);
    assert.match(second.stderr, new RegExp(`Another tab-relay \\(process ${first.child.pid}\\) is serving`));
    assert.equal((await fetch(`${first.url}/healthz`)).status, 200, "the first relay is untouched");
    first.child.kill("SIGTERM");
    assert.equal(await first.exited, 0);
    assert.equal(existsSync(join(data, "relay.pid")), false, "a clean stop gives the folder back");

    const again = await serve(["--data", data]);
    assert.equal((await fetch(`${again.url}/healthz`)).status, 200);
    again.child.kill("SIGKILL");
    await again.exited;
    // A relay killed outright leaves its file behind; the next one sees that process is gone and takes over.
    const afterCrash = await serve(["--data", data]);
    assert.equal((await fetch(`${afterCrash.url}/healthz`)).status, 200);
    afterCrash.child.kill("SIGTERM");
    await afterCrash.exited;
  });
});
