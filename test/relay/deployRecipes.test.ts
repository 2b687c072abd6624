// docs/deploy/tab-relay.service checked by systemd's own tools (Debian 12's systemd-analyze), and the deploy recipes
// (the unit, its environment file, nginx.conf, Caddyfile) checked against each other and the relay's settings. No
// systemd is booted here: the sandbox options are checked by systemd-analyze, not run.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../relay/src/config";
import { CADDY_RECIPE, NGINX_RECIPE, REPO_ROOT } from "../support/reverseProxy";

const UNIT = join(REPO_ROOT, "docs/deploy/tab-relay.service");
const ENV_FILE = join(REPO_ROOT, "docs/deploy/tab-relay.env");
const ANALYZE = "/usr/bin/systemd-analyze";
/** Where `npm install -g tab-relay` puts the command with npm's default prefix (/usr/local). */
const INSTALLED_COMMAND = "/usr/local/bin/tab-relay";

/** `[Section]` → key → every value given (a key may repeat, as SystemCallFilter= does). */
function unitSettings(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current = new Map<string, string[]>();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const section = /^\[(.+)\]$/.exec(line);
    if (section) {
      current = new Map();
      sections.set(section[1] as string, current);
      continue;
    }
    const eq = line.indexOf("=");
    const key = line.slice(0, eq);
    current.set(key, [...(current.get(key) ?? []), line.slice(eq + 1)]);
  }
  return sections;
}

/** The KEY=value lines of an EnvironmentFile. */
function environmentFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (match) env[match[1] as string] = match[2] as string;
  }
  return env;
}

/** A systemd time span in seconds: `30s`, `2min`, `1min 30s` or a bare number of seconds. */
function seconds(span: string): number {
  const units: Record<string, number> = { s: 1, sec: 1, min: 60, m: 60, h: 3600 };
  let total = 0;
  for (const part of span.trim().split(/\s+/)) {
    const match = /^(\d+)([a-z]*)$/.exec(part);
    assert.ok(match, `not a time span: ${span}`);
    total += Number(match[1]) * (match[2] === "" ? 1 : (units[match[2] as string] ?? Number.NaN));
  }
  return total;
}

const analyzer = existsSync(ANALYZE);
const skipAnalyze =
  !analyzer && !process.env.CI ? `SKIPPED, NOT TESTED: ${ANALYZE} is missing (Debian's systemd package)` : false;
if (skipAnalyze) console.error(`\n${"!".repeat(100)}\n[deploy-recipes] ${skipAnalyze}\n${"!".repeat(100)}\n`);

describe("the deploy recipes (docs/deploy)", () => {
  const unit = readFileSync(UNIT, "utf8");
  const service = unitSettings(unit).get("Service") ?? new Map<string, string[]>();
  const one = (key: string) => {
    const values = service.get(key) ?? [];
    assert.equal(values.length, 1, `${key}= is set ${values.length} times in the unit`);
    return values[0] as string;
  };
  const env = environmentFile(readFileSync(ENV_FILE, "utf8"));
  const dir = mkdtempSync(join(tmpdir(), "tab-relay-unit-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * The unit as shipped, but for the installed command, which systemd-analyze verify requires to exist: this checkout's
   * bin run by this node stands in for /usr/local/bin/tab-relay.
   */
  const installed = () => {
    const path = join(dir, "tab-relay.service");
    const bin = join(REPO_ROOT, "relay/bin/tab-relay.js");
    writeFileSync(path, unit.split(`ExecStart=${INSTALLED_COMMAND} `).join(`ExecStart=${process.execPath} ${bin} `));
    return path;
  };

  test("systemd-analyze verify accepts the unit without a single warning", { skip: skipAnalyze }, () => {
    const verified = spawnSync(ANALYZE, ["verify", installed()], { encoding: "utf8", timeout: 30_000 });
    assert.equal(verified.status, 0, verified.stderr);
    // verify exits 0 on an unknown key or a bad value too, only saying so.
    assert.equal(`${verified.stdout}${verified.stderr}`.trim(), "");
  });

  test("systemd-analyze security rates the unit's exposure 2.0 or lower", { skip: skipAnalyze }, () => {
    const rated = spawnSync(ANALYZE, ["security", "--offline=true", "--no-pager", installed()], {
      encoding: "utf8",
      timeout: 30_000,
    });
    const exposure = /Overall exposure level for tab-relay\.service: ([\d.]+)/.exec(rated.stdout);
    assert.ok(exposure, `${rated.stdout}\n${rated.stderr}`);
    assert.ok(Number(exposure[1]) <= 2.0, `exposure ${exposure[1]}:\n${rated.stdout}`);
  });

  test("the unit stops the relay with SIGTERM and waits longer than its shutdown grace, restarts it on failure and reads its secrets from a file", () => {
    assert.equal(one("KillSignal"), "SIGTERM");
    assert.equal(one("Restart"), "on-failure");
    const grace = loadConfig({ TAB_RELAY_DATA: dir, ...env }).shutdownGraceMs;
    assert.ok(
      seconds(one("TimeoutStopSec")) * 1000 >= grace + 10_000,
      `TimeoutStopSec=${one("TimeoutStopSec")} against a ${grace} ms grace`,
    );
    assert.equal(one("EnvironmentFile"), "/etc/tab-relay/tab-relay.env");
    assert.ok(
      !unit.includes("Environment=TAB_RELAY_UPSTREAM_API_KEY"),
      "secrets stay out of the unit, which every user can read",
    );
  });

  test("the unit serves the data folder it gives the relay, 0700, and nothing else is writable", () => {
    assert.equal(one("StateDirectory"), "tab-relay");
    assert.equal(one("StateDirectoryMode"), "0700");
    assert.equal(one("UMask"), "0077");
    assert.equal(one("ExecStart"), `${INSTALLED_COMMAND} serve --data /var/lib/tab-relay`, "the installed command");
    assert.equal(one("ProtectSystem"), "strict");
    assert.equal(one("NoNewPrivileges"), "yes");
    assert.equal(service.has("MemoryDenyWriteExecute"), false, "V8's JIT needs writable, executable memory");
  });

  test("the environment file is a valid configuration that matches the proxies: the relay's address and port, nginx's address trusted, an https public URL", () => {
    const config = loadConfig({ TAB_RELAY_DATA: dir, ...env });
    assert.equal(config.host, "127.0.0.1");
    assert.deepEqual(config.trustProxy, ["127.0.0.1"]);
    assert.match(config.publicUrl ?? "", /^https:\/\//);
    const nginx = readFileSync(NGINX_RECIPE, "utf8");
    const caddy = readFileSync(CADDY_RECIPE, "utf8");
    assert.ok(nginx.includes(`server ${config.host}:${config.port};`), "nginx's upstream is the relay");
    assert.ok(caddy.includes(`reverse_proxy ${config.host}:${config.port} {`), "Caddy's upstream is the relay");
    const nginxBody = /client_max_body_size (\d+)m;/.exec(nginx);
    assert.ok(nginxBody, "nginx sets client_max_body_size in MiB");
    assert.ok(
      Number(nginxBody[1]) * 1024 * 1024 > config.maxBodyBytes,
      "nginx lets through every body the relay accepts, so the relay answers oversize ones",
    );
  });
});
