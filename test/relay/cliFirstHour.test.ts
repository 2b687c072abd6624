import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { runCommand } from "../support/relayProcess";

const BIN = fileURLToPath(new URL("../../relay/bin/tab-relay.js", import.meta.url));
const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_") && !name.startsWith("npm_")),
);
const cwd = mkdtempSync(join(tmpdir(), "tab-relay-cli-"));
after(() => rmSync(cwd, { recursive: true, force: true }));
const cli = (args: string[]) =>
  runCommand(process.execPath, [BIN, ...args], { cwd, env: cleanEnv, killAfterMs: 30_000 });

test("every subcommand answers --help with the usage, exit 0", async () => {
  for (const args of [
    ["start", "--help"],
    ["serve", "--help"],
    ["init", "-h"],
    ["migrate", "--help"],
    ["keys", "create", "--help"],
    ["doctor", "--help"],
    ["backup", "--help"],
    ["restore", "--help"],
  ]) {
    const run = await cli(args);
    assert.equal(run.status, 0, `${args.join(" ")}: ${run.stderr}`);
    assert.match(run.stdout, /^tab-relay: the self-hostable relay/, args.join(" "));
    assert.equal(run.stderr, "", args.join(" "));
  }
  assert.equal(existsSync(join(cwd, "data")), false, "--help starts nothing");
});

test("keys create without --data works on ./data, the folder start uses, and says so", async () => {
  const init = await cli(["init", "--data", "data", "--workspace", "acme", "--owner", "Ada"]);
  assert.equal(init.status, 0, init.stderr);
  const made = await cli(["keys", "create", "--owner"]);
  assert.equal(made.status, 0, made.stderr);
  assert.equal(
    made.stderr,
    `tab-relay keys create: using the data folder ${join(cwd, "data")} (the one npm start uses; --data DIR for another)\n`,
  );
  assert.match(made.stdout, /^Created an API key in workspace acme /);
  const doctor = await cli(["doctor"]);
  assert.match(doctor.stdout, new RegExp(`^Data folder +ok +${join(cwd, "data")} `, "m"));
});

test("migrate on a folder that does not exist is an error naming the path, and creates nothing", async () => {
  const run = await cli(["migrate", "--data", "dta"]);
  assert.equal(run.status, 2);
  assert.equal(
    run.stderr,
    `tab-relay: migrate: --data: no database at ${join(cwd, "dta", "relay.db")}; check the path (\`tab-relay init\` or \`npm start\` creates one)\n`,
  );
  assert.equal(existsSync(join(cwd, "dta")), false);
});
