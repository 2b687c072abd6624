import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import SqliteDatabase from "better-sqlite3";
import { openSqliteStore } from "../../relay/src/store/sqlite";
import { completionBody } from "../support/relayHarness";
import { createDatabase, dropDatabases, postgresProblem } from "../support/scaleOutServices";
import { startUpstreamStandIn } from "../support/upstreamStandIn";

const BIN = fileURLToPath(new URL("../../relay/bin/tab-relay.js", import.meta.url));
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));

function cli(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    env: { ...cleanEnv, ...env },
    timeout: 20_000,
  });
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "tab-relay-cli-"));
}

interface Served {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Runs `tab-relay serve` on port 0 and waits until it says where it listens. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [BIN, "serve", "--port", "0", ...args], {
    env: { ...cleanEnv, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
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
  return { child, url, stdout: () => stdout, stderr: () => stderr, exited };
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
    const out = JSON.parse(lines[0] as string) as {
      workspace: { slug: string };
      user: { name: string; role: string };
      api_key: string;
    };
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
    for (const problem of [/TAB_RELAY_DATA/, /TAB_RELAY_PORT/, /TAB_RELAY_LOG_LEVEL/, /TAB_RELAY_RATE_LIMITS/])
      assert.match(result.stderr, problem);
  });

  test("serve refuses a data folder that was never initialised", () => {
    const result = cli(["serve", "--data", tempDir(), "--port", "0"]);
    assert.equal(result.status, 2);
    assert.match(result.stderr, /tab-relay init/);
  });

  test("serve answers /healthz, logs JSON lines without secrets, and on SIGTERM lets a stream finish", async () => {
    const data = tempDir();
    dirs.push(data);
    const { api_key: key } = JSON.parse(
      cli(["init", "--data", data, "--workspace", "acme", "--owner", "Ada", "--json"]).stdout,
    ) as { api_key: string };
    const upstream = await startUpstreamStandIn({
      behaviour: { kind: "reply", text: ["\n", "  return", " a", " + b;", "\n}"], chunkDelayMs: 150 },
    });
    try {
      const relay = await serve(["--data", data], {
        TAB_RELAY_UPSTREAM_URL: upstream.url,
        TAB_RELAY_UPSTREAM_MODEL: "m",
      });
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

      const lines = relay
        .stdout()
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.ok(
        lines.some(
          (line) =>
            line["msg"] === "request" && line["route"] === "/api/v1/tab/chat/completions" && line["status"] === 200,
        ),
      );
      assert.ok(lines.some((line) => line["msg"] === "relay stopped" && line["streams_finished"] === 1));
      assert.ok(!relay.stdout().includes(key), "the API key never reaches the log");
    } finally {
      await upstream.close();
    }
  });

  test(
    "init creates the data folder 0700 and the database 0600, and SQLite gives its -wal and -shm files the same",
    { skip: process.platform === "win32" },
    async () => {
      const parent = tempDir();
      dirs.push(parent);
      const data = join(parent, "new", "data");
      assert.equal(cli(["init", "--data", data, "--workspace", "acme", "--owner", "Ada"]).status, 0);
      const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
      assert.equal(mode(data), "700");
      assert.equal(mode(join(parent, "new")), "700", "folders created on the way are private too");
      assert.equal(mode(join(data, "relay.db")), "600");
      const relay = await serve(["--data", data]);
      assert.equal((await fetch(`${relay.url}/healthz`)).status, 200);
      assert.deepEqual([mode(join(data, "relay.db-wal")), mode(join(data, "relay.db-shm"))], ["600", "600"]);
      assert.ok(!relay.stdout().includes('"level":"warn"'), relay.stdout());
      relay.child.kill("SIGTERM");
      assert.equal(await relay.exited, 0);
    },
  );

  test(
    "serve warns about a data folder and database that other users can read, naming the chmod, and leaves them as they are",
    { skip: process.platform === "win32" },
    async () => {
      const data = tempDir();
      dirs.push(data);
      assert.equal(cli(["init", "--data", data, "--workspace", "acme", "--owner", "Ada"]).status, 0);
      chmodSync(data, 0o755);
      chmodSync(join(data, "relay.db"), 0o644);
      const relay = await serve(["--data", data]);
      relay.child.kill("SIGTERM");
      assert.equal(await relay.exited, 0);
      const warnings = relay
        .stdout()
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { level: string; msg: string })
        .filter((line) => line.level === "warn")
        .map((line) => line.msg);
      assert.ok(
        warnings.some(
          (msg) => msg.startsWith(`The data folder ${data} `) && msg.endsWith(`(mode 755); run: chmod 700 ${data}`),
        ),
        warnings.join("\n"),
      );
      assert.ok(
        warnings.some((msg) => msg.endsWith(`(mode 644); run: chmod 600 ${join(data, "relay.db")}`)),
        warnings.join("\n"),
      );
      assert.equal((statSync(data).mode & 0o777).toString(8), "755");
    },
  );

  test(
    "serve and start refuse a world-writable data folder or database file, naming the chmod, unless TAB_RELAY_ALLOW_INSECURE_DATA_FOLDER is true",
    { skip: process.platform === "win32" },
    async () => {
      const data = tempDir();
      dirs.push(data);
      assert.equal(cli(["init", "--data", data, "--workspace", "acme", "--owner", "Ada"]).status, 0);
      chmodSync(data, 0o777);
      chmodSync(join(data, "relay.db"), 0o666);
      for (const command of ["serve", "start"]) {
        const refused = cli([command, "--data", data, "--port", "0"]);
        assert.equal(refused.status, 2, `${command}: ${refused.stdout}${refused.stderr}`);
        assert.match(refused.stderr, /The data folder .* is writable by every user on this machine \(mode 777\)/);
        assert.ok(
          refused.stderr.includes(
            `(mode 666), so anyone could replace the database; run: chmod 600 ${join(data, "relay.db")}`,
          ),
          refused.stderr,
        );
        assert.match(refused.stderr, /TAB_RELAY_ALLOW_INSECURE_DATA_FOLDER=true/);
        assert.ok(!existsSync(join(data, "relay.pid")), "a refused relay leaves no lock behind");
      }
      const relay = await serve(["--data", data], { TAB_RELAY_ALLOW_INSECURE_DATA_FOLDER: "true" });
      assert.equal((await fetch(`${relay.url}/healthz`)).status, 200);
      relay.child.kill("SIGTERM");
      assert.equal(await relay.exited, 0);
      assert.ok(relay.stdout().includes("served anyway: TAB_RELAY_ALLOW_INSECURE_DATA_FOLDER"), relay.stdout());
    },
  );

  test("serving plain http on an address other machines reach logs a warning at start; an https public URL or loopback does not", async () => {
    const data = tempDir();
    dirs.push(data);
    assert.equal(cli(["init", "--data", data, "--workspace", "acme", "--owner", "Ada"]).status, 0);
    const warningsOf = async (args: string[]) => {
      const relay = await serve(["--data", data, ...args]);
      relay.child.kill("SIGTERM");
      assert.equal(await relay.exited, 0);
      return relay
        .stdout()
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { level: string; msg: string })
        .filter((line) => line.level === "warn" && line.msg.startsWith("Serving plain http"));
    };
    const exposed = await warningsOf(["--host", "0.0.0.0"]);
    assert.equal(exposed.length, 1);
    assert.match(exposed[0]?.msg ?? "", /^Serving plain http on 0\.0\.0\.0, .*TAB_RELAY_PUBLIC_URL/);
    assert.deepEqual(await warningsOf(["--host", "0.0.0.0", "--public-url", "https://relay.example.com"]), []);
    assert.deepEqual(await warningsOf(["--host", "127.0.0.1"]), []);
  });

  test("secrets given as flags are warned about, naming the variable to use instead, and no printed line holds them", async () => {
    const data = tempDir();
    dirs.push(data);
    const { api_key: key } = JSON.parse(
      cli(["init", "--data", data, "--workspace", "acme", "--owner", "Ada", "--json"]).stdout,
    ) as { api_key: string };
    const upstreamKey = "sk-upstream-7f3a9c1e5b";
    const upstream = await startUpstreamStandIn({ behaviour: { kind: "reply", text: ["return a + b;"] } });
    try {
      const relay = await serve([
        "--data",
        data,
        "--upstream-url",
        upstream.url,
        "--upstream-model",
        "m",
        "--upstream-api-key",
        upstreamKey,
      ]);
      const response = await fetch(`${relay.url}/api/v1/tab/chat/completions`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify(completionBody()),
      });
      assert.equal(response.status, 200, await response.text());
      relay.child.kill("SIGTERM");
      assert.equal(await relay.exited, 0);
      assert.match(
        relay.stderr(),
        /tab-relay: warning: --upstream-api-key puts the upstream API key on the command line, .*; set TAB_RELAY_UPSTREAM_API_KEY instead\n/,
      );
      assert.ok(
        !relay.stderr().includes(upstreamKey) && !relay.stdout().includes(upstreamKey),
        "the key is never printed",
      );
    } finally {
      await upstream.close();
    }

    // A URL's password is warned about before anything else runs, here before the bad port stops the command.
    const passwords = ["pg-pw-31415", "redis-pw-27182"];
    const failed = cli([
      "serve",
      "--data",
      data,
      "--port",
      "http",
      "--database",
      `postgres://relay:${passwords[0]}@127.0.0.1:5432/relay`,
      "--redis",
      `redis://:${passwords[1]}@127.0.0.1:6379`,
    ]);
    assert.equal(failed.status, 2);
    assert.match(
      failed.stderr,
      /tab-relay: warning: --database puts a database password on the command line, .*; set TAB_RELAY_DATABASE_URL instead/,
    );
    assert.match(
      failed.stderr,
      /tab-relay: warning: --redis puts a Redis password on the command line, .*; set TAB_RELAY_REDIS_URL instead/,
    );
    for (const password of passwords)
      assert.ok(!failed.stderr.includes(password) && !failed.stdout.includes(password), password);

    const fromEnvironment = cli(["serve", "--data", data, "--port", "http"], {
      TAB_RELAY_UPSTREAM_API_KEY: upstreamKey,
      TAB_RELAY_DATABASE_URL: `postgres://relay:${passwords[0]}@127.0.0.1:5432/relay`,
    });
    assert.equal(fromEnvironment.status, 2);
    assert.doesNotMatch(fromEnvironment.stderr, /warning/, "the environment is where secrets belong");
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

describe("tab-relay keys create", () => {
  const dirs: string[] = [];
  const servers: Served[] = [];
  after(async () => {
    for (const server of servers) server.child.kill("SIGKILL");
    await Promise.all(servers.map((server) => server.exited));
    dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
  });

  interface Made {
    workspace: { id: string; slug: string; name: string };
    user: { id: string; name: string; role: string };
    api_key: { id: string; name: string; scopes: string[]; created_at: string; secret: string };
  }

  function initialised(slug = "acme"): { data: string; key: string } {
    const data = tempDir();
    dirs.push(data);
    const result = cli(["init", "--data", data, "--workspace", slug, "--owner", "Ada", "--json"]);
    assert.equal(result.status, 0, result.stderr);
    return { data, key: (JSON.parse(result.stdout) as { api_key: string }).api_key };
  }

  function made(args: string[]): Made {
    const result = cli(["keys", "create", ...args, "--json"]);
    assert.equal(result.status, 0, result.stderr);
    const lines = result.stdout.trim().split("\n");
    assert.equal(lines.length, 1);
    return JSON.parse(lines[0] as string) as Made;
  }

  /** Exit 2, stdout empty and exactly one line on stderr, which is returned. */
  function refused(args: string[]): string {
    const result = cli(["keys", "create", ...args]);
    assert.equal(result.status, 2, `${result.stdout}${result.stderr}`);
    assert.equal(result.stdout, "");
    const lines = result.stderr.trim().split("\n");
    assert.equal(lines.length, 1, result.stderr);
    return lines[0] as string;
  }

  function call(
    url: string,
    key: string,
    path: string,
    init: { method?: string; json?: unknown } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { Authorization: `Bearer ${key}` };
    if (init.json !== undefined) headers["Content-Type"] = "application/json";
    return fetch(`${url}/api/v1${path}`, {
      method: init.method ?? "GET",
      headers,
      ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
    });
  }

  async function dataOf<T>(response: Response, status = 200): Promise<T> {
    const text = await response.text();
    assert.equal(response.status, status, text);
    return (JSON.parse(text) as { data: T }).data;
  }

  test("beside a relay serving the folder, the owner's lost access comes back: the new key works on that relay at once", async () => {
    const { data, key } = initialised();
    const relay = await serve(["--data", data]);
    servers.push(relay);
    const me = await dataOf<{ key: { id: string }; user: { id: string } }>(await call(relay.url, key, "/me"));
    // The only owner key revokes itself: nobody can make keys through the API any more.
    await dataOf(await call(relay.url, key, `/api-keys/${me.key.id}`, { method: "DELETE" }));
    assert.equal((await call(relay.url, key, "/me")).status, 401);

    const text = cli(["keys", "create", "--data", data, "--owner"]);
    assert.equal(text.status, 0, text.stderr);
    const secret = /^ {2}(svc_ws_\S+)$/m.exec(text.stdout)?.[1];
    assert.ok(secret, text.stdout);
    assert.match(text.stdout, new RegExp(`Ada \\(${me.user.id}, owner\\)`));
    assert.match(text.stdout, /shown once/);
    const recovered = await dataOf<{ user: { id: string; role: string }; key: { scopes: string[] } }>(
      await call(relay.url, secret, "/me"),
    );
    assert.deepEqual([recovered.user.id, recovered.user.role], [me.user.id, "owner"]);
    assert.equal(recovered.key.scopes.length, 10, "every scope an owner may hold");
    // The relay has been remembering key owners all along; the key made by another process is found all the same.
    const minted = await dataOf<{ secret: string }>(
      await call(relay.url, secret, "/api-keys", {
        method: "POST",
        json: { name: "editor", scopes: ["tab.complete"] },
      }),
      201,
    );
    assert.equal((await call(relay.url, minted.secret, "/tab/models")).status, 200);

    const narrow = made([
      "--data",
      data,
      "--owner",
      "--scopes",
      "tab.complete, messages.read,tab.complete",
      "--name",
      "Laptop",
    ]);
    assert.deepEqual([narrow.api_key.name, narrow.api_key.scopes], ["Laptop", ["tab.complete", "messages.read"]]);
    assert.deepEqual(
      (await dataOf<{ key: { scopes: string[] } }>(await call(relay.url, narrow.api_key.secret, "/me"))).key.scopes,
      ["tab.complete", "messages.read"],
    );
    assert.equal((await call(relay.url, narrow.api_key.secret, "/agents")).status, 403);
    assert.ok(
      !relay.stdout().includes(secret) && !relay.stdout().includes(narrow.api_key.secret),
      "no key reaches the relay's log",
    );
  });

  test("--user makes a key for that person with every scope the role allows, and never more", async () => {
    const { data, key } = initialised();
    const relay = await serve(["--data", data]);
    servers.push(relay);
    const member = await dataOf<{ user: { id: string } }>(
      await call(relay.url, key, "/users", { method: "POST", json: { name: "Mo Member", role: "member" } }),
      201,
    );
    const forMember = made(["--data", data, "--user", member.user.id]);
    assert.deepEqual([forMember.user.id, forMember.user.role], [member.user.id, "member"]);
    assert.deepEqual(forMember.api_key.scopes, [
      "workspace.read",
      "apps.read",
      "files.read",
      "tab.complete",
      "messages.read",
      "messages.write",
      "agents.read",
      "agents.write",
      "keys.write",
    ]);
    const me = await dataOf<{ user: { id: string } }>(await call(relay.url, forMember.api_key.secret, "/me"));
    assert.equal(me.user.id, member.user.id);
    assert.match(
      refused(["--data", data, "--user", member.user.id, "--scopes", "tab.complete,users.write"]),
      /^tab-relay: keys create: --scopes: Mo Member is a member, who cannot hold users\.write$/,
    );

    await dataOf(await call(relay.url, key, `/users/${member.user.id}`, { method: "DELETE" }));
    assert.match(
      refused(["--data", data, "--user", member.user.id]),
      new RegExp(`--user: ${member.user.id} \\(Mo Member\\) was removed from workspace acme`),
    );
  });

  // Every refusal is covered in relay/src/auth/recovery.test.ts; these check how the command reports them.
  test("mistakes exit 2 with one line naming the flag, and make no key", async () => {
    const { data } = initialised();
    assert.match(
      refused(["--data", data, "--user", "usr_nobody"]),
      /^tab-relay: keys create: --user: no user usr_nobody in workspace acme$/,
    );
    assert.match(
      refused(["--data", data, "--owner", "--scopes", "tab.complete,root"]),
      /--scopes: unknown scope "root"; the scopes are workspace\.read, /,
    );
    assert.match(refused(["--data", data]), /needs exactly one of --user ID and --owner$/);
    const empty = tempDir();
    dirs.push(empty);
    assert.match(refused(["--data", empty, "--owner"]), /no database in .*: run `tab-relay init` first$/);
    assert.equal(existsSync(join(empty, "relay.db")), false, "no database is created by asking");

    // A second workspace in the same database: which one must then be said.
    assert.equal(cli(["init", "--data", data, "--workspace", "globex", "--owner", "Gus"]).status, 0);
    assert.match(
      refused(["--data", data, "--owner"]),
      /--workspace: the database holds 2 workspaces \(acme, globex\); name one with --workspace SLUG$/,
    );
    assert.equal(made(["--data", data, "--owner", "--workspace", "globex"]).user.name, "Gus");

    // A workspace whose owners are all gone (only the database can get there: nobody removes the last owner).
    const store = await openSqliteStore(join(data, "relay.db"));
    try {
      const acme = (await store.workspaces.getBySlug("acme")) as { id: string };
      for (const user of await store.users.list(acme.id))
        await store.users.remove(acme.id, user.id, new Date().toISOString());
    } finally {
      await store.close();
    }
    assert.match(
      refused(["--data", data, "--owner", "--workspace", "acme"]),
      /--owner: workspace acme has no owner left; name someone with --user ID$/,
    );
    const keys = new SqliteDatabase(join(data, "relay.db"), { readonly: true });
    try {
      assert.equal(
        (keys.prepare("select count(*) as n from api_keys").get() as { n: number }).n,
        3,
        "the two init keys and globex's, nothing from the refusals",
      );
    } finally {
      keys.close();
    }
  });

  test("on PostgreSQL, beside a relay serving the database", async (t) => {
    const problem = await postgresProblem();
    if (problem) {
      console.error(`SKIPPED: ${problem}: the PostgreSQL keys create test did not run`);
      return t.skip(problem);
    }
    const database = await createDatabase("tab_relay_keys_cli");
    try {
      const init = cli(["init", "--database", database.url, "--workspace", "acme", "--owner", "Ada", "--json"]);
      assert.equal(init.status, 0, init.stderr);
      const relay = await serve(["--database", database.url]);
      servers.push(relay);
      const owner = made(["--database", database.url, "--owner"]);
      assert.equal(owner.user.name, "Ada");
      assert.equal(
        (await dataOf<{ user: { role: string } }>(await call(relay.url, owner.api_key.secret, "/me"))).user.role,
        "owner",
      );
      assert.match(
        refused(["--database", database.url, "--user", "usr_nobody"]),
        /--user: no user usr_nobody in workspace acme$/,
      );
      relay.child.kill("SIGTERM");
      assert.equal(await relay.exited, 0);
    } finally {
      await dropDatabases([database.name]);
    }
  });
});
