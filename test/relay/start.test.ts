import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { type ServerResponse, createServer as createHttpServer } from "node:http";
import { type AddressInfo, connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = fileURLToPath(new URL("../../relay/bin/tab-relay.js", import.meta.url));
const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_") && !name.startsWith("npm_")),
);

/** A port nothing listens on right now (the kernel's pick for port 0, released at once). */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether something accepts connections on 127.0.0.1:port. */
async function listening(port: number): Promise<boolean> {
  const socket = connect(port, "127.0.0.1");
  try {
    await once(socket, "connect");
    return true;
  } catch {
    return false;
  } finally {
    socket.destroy();
  }
}

interface Started {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Spawns `command` in its own process group (so whatever it leaves behind can be killed by the test's teardown) and
 * resolves once a `serving on` line appears.
 */
async function spawnServing(
  command: string,
  args: string[],
  env: Record<string, string>,
  groups: Set<number>,
): Promise<Started> {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...cleanEnv, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  if (child.pid !== undefined) groups.add(child.pid);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`did not start: ${stderr}`)), 60_000);
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /serving on (http:\/\/\S+)/.exec(stderr);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`exited before serving: ${stdout}\n${stderr}`));
    });
  });
  return { child, url, stdout: () => stdout, stderr: () => stderr, exited };
}

function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("npm start", () => {
  const dirs: string[] = [];
  const groups = new Set<number>();
  after(() => {
    for (const pid of groups) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // The group is gone: everything in it stopped by itself.
      }
    }
    dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
  });

  test("SIGTERM to the npm process stops the relay it started, cleanly, and npm exits 0", async () => {
    const data = mkdtempSync(join(tmpdir(), "tab-relay-start-"));
    dirs.push(data);
    const port = await freePort();
    const npm = await spawnServing("npm", ["start", "--", "--data", data, "--port", String(port)], {}, groups);
    assert.equal(await listening(port), true);
    npm.child.kill("SIGTERM");
    const { code, signal } = await npm.exited;
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, npm.stderr());
    assert.ok(
      jsonLines(npm.stdout()).some((line) => line["msg"] === "relay stopped"),
      `the relay logs its clean stop:\n${npm.stdout()}`,
    );
    assert.equal(await listening(port), false, "nothing serves the port once npm has exited");
  });

  test("Ctrl+C in a terminal (SIGINT to the whole process group, then again while it stops) stops the relay cleanly: it logs its stop and leaves no relay.pid, -wal or -shm", async () => {
    const data = mkdtempSync(join(tmpdir(), "tab-relay-start-"));
    dirs.push(data);
    // A model server that holds its answer: the relay's shutdown then waits on an open stream (up to its grace).
    const held = new Set<ServerResponse>();
    const model = createHttpServer((req, res) => {
      if (req.method === "POST") held.add(res);
      else res.writeHead(404).end();
    }).listen(0, "127.0.0.1");
    await once(model, "listening");
    try {
      const upstream = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
      const npm = await spawnServing(
        "npm",
        ["start", "--", "--data", data, "--port", "0"],
        { TAB_RELAY_UPSTREAM_URL: upstream, TAB_RELAY_UPSTREAM_MODEL: "m", TAB_RELAY_SHUTDOWN_GRACE_MS: "1500" },
        groups,
      );
      assert.ok(existsSync(join(data, "relay.pid")), "the running relay holds the folder");
      const key = /svc_ws_[0-9A-Za-z]{36}/.exec(npm.stdout())?.[0] ?? "";
      const streaming = fetch(`${npm.url}/api/v1/tab/chat/completions`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify({
          stream: true,
          tab_context: {
            surface: "code",
            workspace_slug: "default",
            entity_id: "a.js",
            document_type: "plaintext",
            active_text_before_cursor: "const a = ",
          },
        }),
      }).then(
        (response) => response.text(),
        () => "",
      );
      while (held.size === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      // A terminal signals the foreground process group: npm and the relay each get it, and npm passes it on again.
      process.kill(-(npm.child.pid as number), "SIGINT");
      while (!npm.stderr().includes("SIGINT received")) await new Promise((resolve) => setTimeout(resolve, 10));
      process.kill(-(npm.child.pid as number), "SIGINT");
      await npm.exited;
      await streaming;
      // npm may exit before its child has finished; the relay's own line says when it has.
      const deadline = Date.now() + 15_000;
      while (!jsonLines(npm.stdout()).some((line) => line["msg"] === "relay stopped") && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      assert.ok(
        jsonLines(npm.stdout()).some((line) => line["msg"] === "relay stopped"),
        `the relay logs its clean stop:\n${npm.stdout()}\n${npm.stderr()}`,
      );
      for (const left of ["relay.pid", "relay.db-wal", "relay.db-shm"])
        assert.equal(existsSync(join(data, left)), false, `${left} is removed by the clean stop`);
    } finally {
      for (const res of held) res.destroy();
      model.closeAllConnections();
      await new Promise((resolve) => model.close(resolve));
    }
  });
});

describe("npx tab-relay serve", () => {
  const dirs: string[] = [];
  const groups = new Set<number>();
  after(() => {
    for (const pid of groups) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // The group is gone: everything in it stopped by itself.
      }
    }
    dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
  });

  test("SIGTERM to the npx process (as `kill $!` after `npx tab-relay serve &`) stops the relay too, cleanly", async () => {
    const data = join(mkdtempSync(join(tmpdir(), "tab-relay-npx-")), "data");
    dirs.push(dirname(data));
    const init = spawnSync(process.execPath, [BIN, "init", "--data", data, "--workspace", "acme", "--owner", "Ada"], {
      env: cleanEnv,
    });
    assert.equal(init.status, 0);
    const port = await freePort();
    const npx = await spawnServing("npx", ["tab-relay", "serve", "--data", data, "--port", String(port)], {}, groups);
    npx.child.kill("SIGTERM");
    await npx.exited;
    const deadline = Date.now() + 15_000;
    while ((await listening(port)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await listening(port), false, `the relay no longer serves:\n${npx.stderr()}`);
    assert.equal(existsSync(join(data, "relay.pid")), false, "the relay stopped cleanly and released the folder");
  });
});

describe("npm install", () => {
  test("every dependency's install script is approved or denied in the root package.json's allowScripts", (t) => {
    const listed = spawnSync("npm", ["install-scripts", "ls", "--json"], {
      cwd: ROOT,
      encoding: "utf8",
      env: cleanEnv,
    });
    // `npm install-scripts` arrived with npm 11's install-script policy; an older npm runs every script anyway.
    if (listed.status !== 0 && /Unknown command/i.test(listed.stderr))
      return t.skip(`this npm has no install-scripts command: ${listed.stderr.trim()}`);
    assert.equal(listed.status, 0, listed.stderr);
    assert.deepEqual(
      JSON.parse(listed.stdout),
      { allowScripts: [] },
      "run `npm install-scripts ls` and review what it lists",
    );
  });
});

/** The line of `text` that starts (after its indent) with `label`, without the label. */
function lineAfter(text: string, label: string): string | undefined {
  const line = text.split("\n").find((candidate) => candidate.trimStart().startsWith(label));
  return line?.trimStart().slice(label.length).trim();
}

describe("tab-relay start", () => {
  const dirs: string[] = [];
  const groups = new Set<number>();
  after(() => {
    for (const pid of groups) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // The group is gone: everything in it stopped by itself.
      }
    }
    dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
  });
  const freshData = () => {
    const parent = mkdtempSync(join(tmpdir(), "tab-relay-start-"));
    dirs.push(parent);
    return join(parent, "data");
  };
  const start = (args: string[], env: Record<string, string> = {}) =>
    spawnServing(process.execPath, [BIN, "start", ...args], env, groups);
  const stop = async (relay: Started) => {
    relay.child.kill("SIGTERM");
    assert.equal((await relay.exited).code, 0, relay.stderr());
  };

  test("the first start prints the console URL, an export KEY line and a curl that streams a completion, on the port chosen", async () => {
    const data = freshData();
    const port = await freePort();
    const relay = await start(["--data", data], { TAB_RELAY_PORT: String(port) });
    const err = relay.stderr();
    assert.equal(lineAfter(err, "console"), `http://127.0.0.1:${port}/`);
    const page = await fetch(`http://127.0.0.1:${port}/`, { headers: { Accept: "text/html" } });
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /text\/html/);

    const exportLine = err
      .split("\n")
      .find((line) => line.trimStart().startsWith("export KEY="))
      ?.trim();
    const curlLine = err
      .split("\n")
      .find((line) => line.trimStart().startsWith("curl "))
      ?.trim();
    assert.ok(exportLine && curlLine, err);
    assert.equal(
      exportLine.slice("export KEY=".length),
      /svc_ws_[0-9A-Za-z]{36}/.exec(relay.stdout())?.[0],
      "the key printed above",
    );
    assert.ok(curlLine.includes(`http://127.0.0.1:${port}/api/v1/tab/chat/completions`), curlLine);

    let answer: string;
    if (spawnSync("curl", ["--version"]).status === 0) {
      // The lines as a person pastes them into a shell.
      const pasted = spawnSync("sh", ["-c", `${exportLine}\n${curlLine} -sS`], { encoding: "utf8", env: cleanEnv });
      assert.equal(pasted.status, 0, pasted.stderr);
      answer = pasted.stdout;
    } else {
      const body = /-d '(.*)'$/.exec(curlLine)?.[1] ?? "";
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/tab/chat/completions`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${exportLine.slice("export KEY=".length)}`,
          "Content-Type": "application/json",
        },
        body,
      });
      answer = await response.text();
    }
    assert.ok(answer.trimEnd().endsWith("data: [DONE]"), answer);
    const suggestion = answer
      .split("\n")
      .filter((line) => line.startsWith("data: {"))
      .map(
        (line) =>
          (JSON.parse(line.slice("data: ".length)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta
            .content ?? "",
      )
      .join("");
    assert.equal(suggestion, "\n  return a + b;\n}");

    await stop(relay);
    const again = await start(["--data", data, "--port", "0"]);
    assert.equal(
      again
        .stderr()
        .split("\n")
        .find((line) => line.includes("export KEY=")),
      undefined,
      "later starts print no key",
    );
    assert.equal(lineAfter(again.stderr(), "console"), `${again.url}/`);
    await stop(again);
  });

  test("a port in use stops start before it creates anything, naming the port and how to choose another; serve says the same", async () => {
    const taken = createServer().listen(0, "127.0.0.1");
    await once(taken, "listening");
    const { port } = taken.address() as AddressInfo;
    try {
      const data = freshData();
      const refused = spawnSync(process.execPath, [BIN, "start", "--data", data], {
        encoding: "utf8",
        env: { ...cleanEnv, TAB_RELAY_PORT: String(port) },
      });
      assert.equal(refused.status, 2, refused.stderr);
      const advice = `tab-relay: port ${port} on 127.0.0.1 is already in use; choose another with --port N (npm start -- --port N) or TAB_RELAY_PORT=N\n`;
      assert.equal(refused.stderr, advice);
      assert.doesNotMatch(refused.stdout, /svc_ws_/, "no key printed for a relay that never served");
      assert.equal(existsSync(data), false, "no data folder left behind");

      assert.equal(
        spawnSync(process.execPath, [BIN, "init", "--data", data, "--workspace", "acme", "--owner", "Ada"], {
          env: cleanEnv,
        }).status,
        0,
      );
      for (const command of ["serve", "start"]) {
        const busy = spawnSync(process.execPath, [BIN, command, "--data", data, "--port", String(port)], {
          encoding: "utf8",
          env: cleanEnv,
        });
        assert.equal(busy.status, 2, busy.stderr);
        assert.equal(busy.stderr, advice, command);
      }
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  test("init creates a public #general with the owner in it, where a message can be posted at once", async () => {
    const data = freshData();
    const init = spawnSync(process.execPath, [BIN, "init", "--data", data, "--workspace", "acme", "--owner", "Ada"], {
      encoding: "utf8",
      env: cleanEnv,
    });
    assert.equal(init.status, 0, init.stderr);
    assert.match(init.stdout, /^ {2}channel {4}#general \(ch_\w+\)$/m);
    const key = /svc_ws_[0-9A-Za-z]{36}/.exec(init.stdout)?.[0] ?? "";
    const relay = await start(["--data", data, "--port", "0"]);
    const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
    const listed = (await (await fetch(`${relay.url}/api/v1/conversations`, { headers })).json()) as {
      data: { type: string; id: string; name: string; visibility: string; is_member: boolean }[];
    };
    assert.deepEqual(
      listed.data.map(({ type, name, visibility, is_member }) => ({ type, name, visibility, is_member })),
      [{ type: "channel", name: "#general", visibility: "public", is_member: true }],
    );
    const posted = await fetch(`${relay.url}/api/v1/conversations/channel/${listed.data[0]?.id}/messages`, {
      method: "POST",
      headers,
      body: JSON.stringify({ text: "hello" }),
    });
    assert.equal(posted.status, 201, await posted.text());
    await stop(relay);
  });

  test("a later start prints no key but the command that makes a new owner key, which works on the serving relay", async () => {
    const data = freshData();
    const first = await start(["--data", data, "--port", "0"]);
    assert.match(first.stdout(), /svc_ws_[0-9A-Za-z]{36}/);
    assert.equal(lineAfter(first.stderr(), "owner key"), undefined, "the first run prints the key itself");
    await stop(first);

    const second = await start(["--data", data, "--port", "0"]);
    assert.doesNotMatch(second.stdout() + second.stderr(), /svc_ws_/);
    const hint = lineAfter(second.stderr(), "owner key");
    assert.ok(hint, second.stderr());
    const command =
      /^shown on the first run only; to make a new one: npx tab-relay (keys create --data (\S+) --owner)$/.exec(hint);
    assert.ok(command?.[1] && command[2] === data, hint);
    const made = spawnSync(process.execPath, [BIN, ...command[1].split(" ")], { encoding: "utf8", env: cleanEnv });
    assert.equal(made.status, 0, made.stderr);
    const key = /svc_ws_[0-9A-Za-z]{36}/.exec(made.stdout)?.[0];
    const me = await fetch(`${second.url}/api/v1/me`, { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(me.status, 200, await me.text());
    await stop(second);
  });
});
