import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = fileURLToPath(new URL("../../relay/bin/tab-relay.js", import.meta.url));
const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_") && !name.startsWith("npm_")),
);
const parent = mkdtempSync(join(tmpdir(), "tab-relay-refused-"));
after(() => rmSync(parent, { recursive: true, force: true }));

/** `serve` on port 0 until it says where; the output so far is read through `out`. */
async function serve(data: string, env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, [BIN, "serve", "--data", data, "--port", "0"], {
    cwd: ROOT,
    env: { ...cleanEnv, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const match = /serving on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) {
        clearInterval(timer);
        resolve(match[1]);
      }
    }, 20);
    child.once("exit", () => {
      clearInterval(timer);
      reject(new Error(`exited: ${out}`));
    });
  });
  const stop = async () => {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  };
  return { url, out: () => out, stop };
}

test("an agent made under TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true: doctor and a start without the setting warn, naming the agent and the setting", async () => {
  const data = join(parent, "data");
  const init = spawnSync(
    process.execPath,
    [BIN, "init", "--data", data, "--workspace", "acme", "--owner", "Ada", "--json"],
    {
      encoding: "utf8",
      env: cleanEnv,
    },
  );
  assert.equal(init.status, 0, init.stderr);
  const key = (JSON.parse(init.stdout) as { api_key: string }).api_key;
  const lifted = await serve(data, { TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true" });
  const created = await fetch(`${lifted.url}/api/v1/agents`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ name: "Echo", webhook_url: "http://127.0.0.1:8788/webhook" }),
  });
  assert.equal(created.status, 201, await created.text());
  assert.doesNotMatch(lifted.out(), /will be refused/, "no warning while the setting holds");
  await lifted.stop();

  const doctor = spawnSync(process.execPath, [BIN, "doctor", "--data", data], { encoding: "utf8", env: cleanEnv });
  assert.equal(doctor.status, 0, doctor.stdout + doctor.stderr);
  const guard = doctor.stdout.split("\n").findIndex((line) => line.startsWith("Webhooks"));
  assert.match(doctor.stdout.split("\n")[guard] ?? "", /^Webhooks +warn +1 agent's webhook URL will be refused/);
  assert.match(doctor.stdout, /Echo \(agt_\w+, workspace acme\): Webhook URL points at 127\.0\.0\.1/);
  assert.match(
    doctor.stdout,
    /To do: for an agent on this machine or a private network, run the relay with TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true/,
  );
  const lifting = spawnSync(process.execPath, [BIN, "doctor", "--data", data], {
    encoding: "utf8",
    env: { ...cleanEnv, TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true" },
  });
  assert.match(lifting.stdout, /^Webhooks +ok /m);

  const guarded = await serve(data, {});
  const warning = guarded
    .out()
    .split("\n")
    .find((line) => line.includes("will be refused"));
  assert.ok(warning, guarded.out());
  assert.match(
    warning,
    /agent Echo \(agt_\w+, workspace acme\): its webhook URL http:\/\/127\.0\.0\.1:8788\/webhook will be refused/,
  );
  assert.match(warning, /TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true/);
  await guarded.stop();
});
