import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { FIXTURE_DIR } from "../support/makeUpgradeFixture";
import { type CommandRun as Run, runCommand } from "../support/relayProcess";
import { REDIS_URL, createDatabase, dropDatabases, servicesProblem } from "../support/scaleOutServices";
import { startVllmStandIn } from "../support/standIns/vllm";

/**
 * `tab-relay doctor` checking a deployment, as an operator runs it: the built CLI in its own process, on a real data
 * folder, the local PostgreSQL and Redis. Each check's own cases are in relay/src/doctor/operator/operator.test.ts;
 * these check what the command prints, its exit code and its JSON. Needs a fresh `npm run build -w relay`.
 */

const BIN = fileURLToPath(new URL("../../relay/bin/tab-relay.js", import.meta.url));
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));

/** Asynchronous: a stand-in in this process must go on answering while doctor runs. */
function tabRelay(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return runCommand(process.execPath, [BIN, ...args], { env: { ...cleanEnv, ...env }, killAfterMs: 60_000 });
}

interface JsonCheck {
  name: string;
  status: string;
  summary: string;
  advice: string[];
}

function checksOf(run: Run): JsonCheck[] {
  return (JSON.parse(run.stdout) as { checks: JsonCheck[] }).checks;
}

describe("tab-relay doctor for a deployment", () => {
  const dirs: string[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  after(async () => {
    await Promise.all(closers.map((close) => close()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  function initialised(): string {
    const dir = mkdtempSync(join(tmpdir(), "tab-relay-doctor-"));
    dirs.push(dir);
    const data = join(dir, "data");
    const init = spawnSync(process.execPath, [BIN, "init", "--data", data, "--workspace", "acme", "--owner", "Ada"], {
      env: cleanEnv,
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(init.status, 0, init.stderr);
    return data;
  }

  test("a data folder as init leaves it passes every check; shared modes, an exposed address and the lifted webhook guard warn, each with what to fix, and exit 0", async () => {
    const data = initialised();
    const fine = await tabRelay(["doctor", "--data", data]);
    assert.equal(fine.status, 0, fine.stdout + fine.stderr);
    assert.match(
      fine.stdout,
      new RegExp(
        `^Data folder {2}ok {5}${data} \\(mode 700\\), relay\\.db \\(mode 600\\); no relay serves it now$`,
        "m",
      ),
    );
    assert.match(
      fine.stdout,
      /^Database {5}ok {5}SQLite .*relay\.db: 1 workspace, \d+ of \d+ migrations applied \(up to date\)$/m,
    );
    assert.match(
      fine.stdout,
      /^Public URL {3}ok {5}unset: links in events use http:\/\/127\.0\.0\.1:8787, which only this machine reaches$/m,
    );
    assert.match(fine.stdout, /^Clock {8}ok {5}nothing to compare with/m);
    assert.match(fine.stdout, /^Webhooks {5}ok {5}/m);
    assert.doesNotMatch(fine.stdout, /To do:/);

    chmodSync(data, 0o755);
    const exposed = await tabRelay(["doctor", "--data", data, "--host", "0.0.0.0", "--port", "8801"], {
      TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
    });
    assert.equal(exposed.status, 0, "warnings pass");
    assert.match(exposed.stdout, /^Data folder {2}warn {3}/m);
    assert.match(exposed.stdout, new RegExp(`^ {20}To do: The data folder ${data} .*run: chmod 700 ${data}$`, "m"));
    assert.match(
      exposed.stdout,
      /^Public URL {3}warn {3}unset while the relay listens on 0\.0\.0\.0, which other machines reach, in plain http$/m,
    );
    assert.match(exposed.stdout, /^ {20}links in webhook events use http:\/\/0\.0\.0\.0:8801, /m);
    assert.match(
      exposed.stdout,
      /^Webhooks {5}warn {3}TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true on a relay other machines reach$/m,
    );
    assert.match(exposed.stdout, /^ {20}To do: unset TAB_RELAY_WEBHOOK_ALLOW_PRIVATE/m);

    const json = await tabRelay(["doctor", "--data", data, "--json"], {
      TAB_RELAY_HOST: "0.0.0.0",
      TAB_RELAY_PUBLIC_URL: "https://relay.example.com",
      TAB_RELAY_TRUST_PROXY: "1",
    });
    assert.equal(json.status, 0);
    const checks = checksOf(json);
    assert.deepEqual(
      checks.map((check) => [check.name, check.status]),
      [
        ["data folder", "warn"],
        ["database", "ok"],
        ["public url", "warn"],
        ["clock", "ok"],
        ["webhook guard", "ok"],
      ],
    );
    assert.match(
      checks[2]?.advice[0] ?? "",
      /^listen on 127\.0\.0\.1 \(--host 127\.0\.0\.1\) when the proxy runs on this machine/,
    );
  });

  test("a world-writable data folder or database file fails the data folder check with the chmod that closes it, and exits 1", async () => {
    const data = initialised();
    chmodSync(join(data, "relay.db"), 0o646);
    const report = await tabRelay(["doctor", "--data", data]);
    assert.equal(report.status, 1, report.stdout + report.stderr);
    assert.match(report.stdout, /^Data folder {2}failed /m);
    assert.match(
      report.stdout,
      new RegExp(
        `^ {20}To do: The database file ${data}/relay\\.db is writable by every user on this machine \\(mode 646\\), .*run: chmod 600 ${data}/relay\\.db$`,
        "m",
      ),
    );
    chmodSync(join(data, "relay.db"), 0o600);
    chmodSync(data, 0o703);
    const json = await tabRelay(["doctor", "--data", data, "--json"]);
    assert.equal(json.status, 1);
    assert.equal(checksOf(json)[0]?.status, "failed");
  });

  test("with a model server too: its check comes first, then the deployment's, in one report", async () => {
    const vllm = await startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B", reply: "return a + b;" });
    closers.push(() => vllm.close());
    const run = await tabRelay(["doctor", "--upstream-url", vllm.origin, "--data", initialised(), "--json"]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.deepEqual(
      checksOf(run).map((check) => [check.name, check.status]),
      [
        ["upstream", "ok"],
        ["data folder", "ok"],
        ["database", "ok"],
        ["public url", "ok"],
        ["clock", "ok"],
        ["webhook guard", "ok"],
      ],
    );
  });

  test("PostgreSQL and Redis: the previous release's database warns with the migrate command, passes once migrated, and the clock is compared with both servers", async (t) => {
    const problem = await servicesProblem();
    if (problem) {
      console.error(`SKIPPED: ${problem}: doctor's PostgreSQL and Redis checks did not run as a process`);
      return t.skip(problem);
    }
    const database = await createDatabase("tab_relay_doctor");
    closers.push(() => dropDatabases([database.name]));
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(readFileSync(join(FIXTURE_DIR, "postgres.sql"), "utf8"));
    await client.end();

    const env = { TAB_RELAY_DATABASE_URL: database.url, TAB_RELAY_REDIS_URL: REDIS_URL };
    const before = await tabRelay(["doctor"], env);
    assert.equal(before.status, 0, before.stdout + before.stderr);
    assert.match(
      before.stdout,
      new RegExp(`^Database {5}warn {3}PostgreSQL ${database.url}: 1 workspace, 4 of \\d+ migrations applied$`, "m"),
    );
    assert.match(before.stdout, /^ {20}To do: run `tab-relay migrate --database URL` to apply 0005_sessions_by_key/m);
    assert.match(before.stdout, /^Redis {8}ok {5}redis:\/\/127\.0\.0\.1:6379 answered PING in \d+ ms$/m);
    assert.match(
      before.stdout,
      /^Clock {8}ok {5}within 2 s: \d+ ms (ahead of|behind) PostgreSQL's \(±\d+ ms\); \d+ ms (ahead of|behind) Redis's \(±\d+ ms\)$/m,
    );
    assert.doesNotMatch(before.stdout, /^Data folder/m, "PostgreSQL needs no data folder");

    assert.equal((await tabRelay(["migrate"], env)).status, 0);
    const after = await tabRelay(["doctor", "--json"], env);
    assert.equal(after.status, 0);
    assert.deepEqual(
      checksOf(after).map((check) => [check.name, check.status]),
      [
        ["database", "ok"],
        ["redis", "ok"],
        ["public url", "ok"],
        ["clock", "ok"],
        // The fixture's agent posts to http://127.0.0.1, which the guard refuses: doctor names it and the setting.
        ["webhook guard", "warn"],
      ],
    );
    const guard = checksOf(after).find((check) => check.name === "webhook guard");
    assert.match(JSON.stringify(guard), /Releasebot/);
    assert.match(JSON.stringify(guard), /TAB_RELAY_WEBHOOK_ALLOW_PRIVATE/);
  });

  test("nothing answering: exit 2, each saying what to fix, and the passwords in the URLs are never printed", async () => {
    const run = await tabRelay(["doctor"], {
      TAB_RELAY_DATABASE_URL: "postgres://tab:pg-s3cret-pw@127.0.0.1:1/tab",
      TAB_RELAY_REDIS_URL: "redis://:redis-s3cret-pw@127.0.0.1:1",
    });
    assert.equal(run.status, 2, run.stdout + run.stderr);
    assert.match(
      run.stdout,
      /^Database {5}unreachable PostgreSQL postgres:\/\/tab:\*\*\*@127\.0\.0\.1:1\/tab: no answer: connect ECONNREFUSED 127\.0\.0\.1:1$/m,
    );
    assert.match(run.stdout, /^ {20}To do: start PostgreSQL, or correct the host and port in TAB_RELAY_DATABASE_URL$/m);
    assert.match(run.stdout, /^Redis {8}unreachable redis:\/\/:\*\*\*@127\.0\.0\.1:1: connect ECONNREFUSED/m);
    for (const secret of ["pg-s3cret-pw", "redis-s3cret-pw"])
      assert.ok(!(run.stdout + run.stderr).includes(secret), secret);
    const json = await tabRelay(["doctor", "--json", "--database", "postgres://tab@127.0.0.1:1/tab"]);
    assert.deepEqual([(JSON.parse(json.stdout) as { exit_code: number }).exit_code, json.status], [2, 2]);
  });

  test("a bad setting exits 2 with every problem listed", async () => {
    const run = await tabRelay(["doctor", "--data", "x", "--port", "http", "--trust-proxy", "true"]);
    assert.equal(run.status, 2);
    assert.match(run.stderr, /TAB_RELAY_PORT \(--port\)/);
    assert.match(run.stderr, /TAB_RELAY_TRUST_PROXY \(--trust-proxy\): true would believe/);
  });
});
