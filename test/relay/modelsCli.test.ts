// `tab-relay models list|pull|rm`, the built CLI in a child process, against a stand-in hub on port 0 (through the
// mirror setting and an operator's registry file naming a generated file): progress, resume after the process is
// killed, merged pulls across processes, the disk check on the real file system, HTTPS_PROXY, no network.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startConnectProxy } from "../support/connectProxy";
import { type HubFile, type ModelHub, fakeGguf, sha256, startModelHub } from "../support/modelHub";
import { makeCertificate } from "../support/reverseProxy";

const BIN = fileURLToPath(new URL("../../relay/bin/tab-relay.js", import.meta.url));
const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_") && !/_proxy$/i.test(name)),
);

const SIZE = 3_000_000;
const BYTES = fakeGguf(SIZE, 30);
const FILE: HubFile = {
  repo: "stand-in/Tiny-Coder-GGUF",
  revision: "main",
  file: "tiny-coder-q8_0.gguf",
  bytes: BYTES,
};

const dirs: string[] = [];
const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers) await close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tab-relay-models-cli-"));
  dirs.push(dir);
  return dir;
}

/** An operator's registry file with the stand-in's file (and any other entries). */
function registryFile(more: Record<string, unknown> = {}, extra: Record<string, unknown>[] = []): string {
  const path = join(tempDir(), "models.json");
  const entry = {
    name: "tiny-coder",
    family: "qwen-coder",
    repo: FILE.repo,
    revision: FILE.revision,
    file: FILE.file,
    bytes: SIZE,
    sha256: sha256(BYTES),
    ...more,
  };
  writeFileSync(path, JSON.stringify({ models: [entry, ...extra] }));
  return path;
}

async function hubWith(options: Partial<Parameters<typeof startModelHub>[0]> = {}): Promise<ModelHub> {
  const hub = await startModelHub({ files: [FILE], ...options });
  closers.push(() => hub.close());
  return hub;
}

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function start(args: string[], env: Record<string, string> = {}): Run {
  const child = spawn(process.execPath, [BIN, "models", ...args], {
    env: { ...cleanEnv, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
  void exited.then(() => clearTimeout(timer));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

async function run(args: string[], env: Record<string, string> = {}) {
  const running = start(args, env);
  const code = await running.exited;
  return { code, stdout: running.stdout(), stderr: running.stderr() };
}

async function until(what: string, check: () => boolean, ms = 45_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("tab-relay models", () => {
  test("list shows every registry model with its size, family, licence and what the data folder holds", async () => {
    const data = tempDir();
    const human = await run(["list", "--data", data]);
    assert.equal(human.code, 0, human.stderr);
    for (const name of [
      "qwen2.5-coder-0.5b",
      "qwen2.5-coder-1.5b",
      "qwen2.5-coder-3b",
      "qwen2.5-coder-7b",
      "starcoder2-3b",
      "deepseek-coder-1.3b",
      "codegemma-2b",
    ])
      assert.match(human.stdout, new RegExp(`^  ${name.replace(/\./g, "\\.")} +`, "m"));
    assert.match(human.stdout, /qwen2\.5-coder-1\.5b +1\.65 GB +qwen-coder +Apache-2\.0 +-$/m);
    assert.match(human.stdout, /qwen2\.5-coder-7b .* - \(unverified: pull with --allow-unverified\)$/m);
    assert.match(human.stdout, /qwen2\.5-coder-3b: Qwen Research License/);

    const json = await run(["list", "--data", data, "--json"], {
      TAB_RELAY_MODEL_HUB_URL: "https://hf-mirror.example",
    });
    const listed = JSON.parse(json.stdout) as {
      models_dir: string;
      models: { name: string; url: string; status: string }[];
    };
    assert.equal(listed.models_dir, join(data, "models"));
    assert.equal(listed.models.length, 7);
    assert.ok(listed.models.every((m) => m.url.startsWith("https://hf-mirror.example/") && m.status === "absent"));
  });

  test("pull downloads through the mirror with sparse progress lines on a pipe, the path on stdout, then list and rm", async () => {
    const hub = await hubWith({ prefix: "/mirror", chunkBytes: 64 * 1024, chunkDelayMs: 15 });
    const data = tempDir();
    const env = { TAB_RELAY_MODEL_HUB_URL: hub.url, TAB_RELAY_MODEL_REGISTRY: registryFile() };
    const pulled = await run(["pull", "tiny-coder", "--data", data], env);
    assert.equal(pulled.code, 0, pulled.stderr);
    const path = join(data, "models", FILE.file);
    assert.equal(pulled.stdout, `${path}\n`);
    assert.ok(readFileSync(path).equals(BYTES));
    assert.equal(hub.requests[0]?.path, "/mirror/stand-in/Tiny-Coder-GGUF/resolve/main/tiny-coder-q8_0.gguf");
    const lines = pulled.stderr.trimEnd().split("\n");
    const progress = lines.filter((line) => /^tiny-coder: +\d+%/.test(line));
    assert.ok(progress.length >= 3 && progress.length <= 11, pulled.stderr);
    assert.ok(
      progress.every((line) => line.includes(" / 3.00 MB")),
      pulled.stderr,
    );
    assert.ok(
      progress.some((line) => /[\d.]+ [kM]B\/s {2}\d+ s left$/.test(line)),
      `speed and time left:\n${pulled.stderr}`,
    );
    assert.equal(lines.at(-1), `tiny-coder: downloaded and verified (sha256 ${sha256(BYTES).slice(0, 12)}…)`);
    assert.ok(!pulled.stderr.includes("\r"), "no terminal redraws in a pipe");

    const again = await run(["pull", "tiny-coder", "--data", data], env);
    assert.equal(again.stderr, "tiny-coder: already here and verified\n");
    const listed = await run(["list", "--data", data, "--json"], env);
    const tiny = (JSON.parse(listed.stdout) as { models: { name: string; status: string }[] }).models.find(
      (m) => m.name === "tiny-coder",
    );
    assert.equal(tiny?.status, "present");

    const removed = await run(["rm", "tiny-coder", "--data", data], env);
    assert.equal(removed.stdout, "Removed tiny-coder (3.00 MB freed)\n");
    assert.ok(!existsSync(path) && !existsSync(`${path}.verified.json`));
    assert.equal((await run(["rm", "tiny-coder", "--data", data], env)).stdout, "tiny-coder: nothing to remove\n");
  });

  test("in a terminal the progress is one line redrawn in place with a bar, the size, the speed and the time left", async () => {
    const hub = await hubWith({ chunkBytes: 64 * 1024, chunkDelayMs: 15 });
    const data = tempDir();
    const env = { TAB_RELAY_MODEL_HUB_URL: hub.url, TAB_RELAY_MODEL_REGISTRY: registryFile() };
    // script(1) (util-linux, in every Debian) runs the CLI on a pseudo-terminal 100 columns wide.
    const command = `stty cols 100; exec ${process.execPath} ${BIN} models pull tiny-coder --data ${data}`;
    const child = spawn("script", ["-qfec", command, "/dev/null"], {
      env: { ...cleanEnv, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 0, out);
    const frames = out.split("\r").map((frame) => frame.replace("\u001b[K", ""));
    const bars = frames.filter((frame) => /^tiny-coder \[[#.]+\] +\d+%/.test(frame));
    assert.ok(bars.length >= 3, out);
    assert.ok(
      bars.some((frame) => /\[#+\.+\] +\d+% {2}[\d.]+ [kM]B \/ 3\.00 MB {2}[\d.]+ [kM]B\/s {2}\d+ s left/.test(frame)),
      out,
    );
    assert.ok(
      bars.every((frame) => frame.split("\n")[0]!.length < 100),
      "each frame fits the terminal",
    );
    assert.match(out, /tiny-coder: downloaded and verified/);
    assert.ok(out.includes(join(data, "models", FILE.file)));
  });

  test("a 503 with Retry-After is waited out, the process staying alive while nothing else runs", async () => {
    const hub = await hubWith();
    hub.faults.status = { code: 503, times: 1, retryAfter: "1" };
    const data = tempDir();
    const env = { TAB_RELAY_MODEL_HUB_URL: hub.url, TAB_RELAY_MODEL_REGISTRY: registryFile() };
    const pulled = await run(["pull", "tiny-coder", "--data", data], env);
    assert.equal(pulled.code, 0, pulled.stderr);
    assert.match(pulled.stderr, /^tiny-coder: +0% {2}0 B \/ 3\.00 MB {2}retrying in 1 s \(the hub answered 503\)$/m);
    assert.deepEqual(
      hub.requests.map((r) => r.status),
      [503, 302, 200],
    );
  });

  test("a pull killed mid-transfer resumes from its part file on the next pull", async () => {
    const hub = await hubWith();
    hub.faults.stallAfter = { bytes: 1_000_000, times: 1 };
    const data = tempDir();
    const env = { TAB_RELAY_MODEL_HUB_URL: hub.url, TAB_RELAY_MODEL_REGISTRY: registryFile() };
    const part = join(data, "models", `${FILE.file}.part`);
    const first = start(["pull", "tiny-coder", "--data", data], env);
    await until("the first million bytes on disk", () => existsSync(part) && statSync(part).size === 1_000_000);
    first.child.kill("SIGKILL");
    await first.exited;

    const second = await run(["pull", "tiny-coder", "--data", data], env);
    assert.equal(second.code, 0, second.stderr);
    assert.ok(readFileSync(join(data, "models", FILE.file)).equals(BYTES));
    assert.deepEqual(
      hub.transfers().map((t) => [t.status, t.range]),
      [
        [200, undefined],
        [206, "bytes=1000000-"],
      ],
    );
  });

  test("two pulls of one model at once share one transfer: the second waits for the first", async () => {
    const hub = await hubWith();
    let release = () => {};
    hub.faults.pauseAfter = { bytes: 1_000_000, until: new Promise<void>((resolve) => (release = resolve)) };
    const data = tempDir();
    const env = { TAB_RELAY_MODEL_HUB_URL: hub.url, TAB_RELAY_MODEL_REGISTRY: registryFile() };
    const first = start(["pull", "tiny-coder", "--data", data], env);
    await until("the first transfer", () => (hub.transfers()[0]?.sent ?? 0) >= 1_000_000);
    const second = start(["pull", "tiny-coder", "--data", data], env);
    await until("the second pull to wait", () => second.stderr().includes("waiting for it"));
    release();
    const [a, b] = await Promise.all([first.exited, second.exited]);
    assert.deepEqual([a, b], [0, 0], `${first.stderr()}\n${second.stderr()}`);
    assert.equal(second.stdout(), first.stdout());
    assert.match(
      second.stderr(),
      new RegExp(
        `^tiny-coder: another pull \\(pid ${first.child.pid}\\) is downloading this file; waiting for it$`,
        "m",
      ),
    );
    assert.match(second.stderr(), /tiny-coder: already here and verified\n$/);
    assert.equal(hub.transfers().length, 1);
  });

  test("free space is checked on the real file system before any request", async () => {
    const hub = await hubWith();
    const data = tempDir();
    const env = {
      TAB_RELAY_MODEL_HUB_URL: hub.url,
      TAB_RELAY_MODEL_REGISTRY: registryFile({ bytes: 1_000_000_000_000_000, bytesExact: false }),
    };
    const pulled = await run(["pull", "tiny-coder", "--data", data], env);
    assert.equal(pulled.code, 1);
    assert.match(
      pulled.stderr,
      /tab-relay: could not download tiny-coder: not enough free space in .*models: the download needs 1030000067\.1 MB/,
    );
    assert.equal(hub.requests.length, 0);
  });

  test("with no network it fails at once and says where to put the file, under which name, with which sha256", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const data = tempDir();
    const env = { TAB_RELAY_MODEL_HUB_URL: `http://127.0.0.1:${port}`, TAB_RELAY_MODEL_REGISTRY: registryFile() };
    const pulled = await run(["pull", "tiny-coder", "--data", data], env);
    assert.equal(pulled.code, 1);
    assert.equal(
      pulled.stderr,
      [
        `tab-relay: could not download tiny-coder: the hub could not be reached (ECONNREFUSED) at 127.0.0.1:${port}.`,
        "To place tiny-coder by hand, on a machine that can reach the hub:",
        `  1. download  http://127.0.0.1:${port}/stand-in/Tiny-Coder-GGUF/resolve/main/tiny-coder-q8_0.gguf`,
        `  2. check     sha256sum tiny-coder-q8_0.gguf   must print ${sha256(BYTES)} (3000000 bytes)`,
        `  3. put it at ${join(data, "models", FILE.file)}`,
        "Then run the same command again: the file is checked once and used. Behind a proxy set HTTPS_PROXY; to use a mirror of the hub set TAB_RELAY_MODEL_HUB_URL.",
        "",
      ].join("\n"),
    );
  });

  test("HTTPS_PROXY in the environment carries the pull to an https hub only the proxy can resolve", async () => {
    const cert = makeCertificate(tempDir(), "hub.models.test");
    const hub = await hubWith({
      tls: { cert: cert.pem, key: readFileSync(cert.keyPath, "utf8") },
      publicOrigin: "https://hub.models.test",
    });
    const proxy = await startConnectProxy({ "hub.models.test": { host: "127.0.0.1", port: hub.port } });
    closers.push(() => proxy.close());
    const data = tempDir();
    const env = {
      TAB_RELAY_MODEL_HUB_URL: hub.url,
      TAB_RELAY_MODEL_REGISTRY: registryFile(),
      NODE_EXTRA_CA_CERTS: cert.certPath,
    };
    const direct = await run(["pull", "tiny-coder", "--data", data], env);
    assert.equal(direct.code, 1);
    assert.match(direct.stderr, /the hub could not be reached \((ENOTFOUND|EAI_AGAIN)\) at hub\.models\.test/);
    const proxied = await run(["pull", "tiny-coder", "--data", data], { ...env, HTTPS_PROXY: proxy.url });
    assert.equal(proxied.code, 0, proxied.stderr);
    assert.ok(readFileSync(join(data, "models", FILE.file)).equals(BYTES));
    assert.ok(proxy.connects.length >= 1 && proxy.connects.every((target) => target === "hub.models.test:443"));
  });

  test("an unknown name is a mistake (exit 2) naming the known ones; an unverified entry needs --allow-unverified", async () => {
    const hub = await hubWith();
    const data = tempDir();
    const env = { TAB_RELAY_MODEL_HUB_URL: hub.url, TAB_RELAY_MODEL_REGISTRY: registryFile({ verified: false }) };
    const unknown = await run(["pull", "gpt-5", "--data", data], env);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown model "gpt-5"\. Known models: qwen2\.5-coder-0\.5b, .*, tiny-coder\./);
    const refused = await run(["pull", "tiny-coder", "--data", data], env);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /not downloaded by default\. Pull it with --allow-unverified/);
    assert.equal(hub.requests.length, 0);
    const allowed = await run(["pull", "tiny-coder", "--data", data, "--allow-unverified"], env);
    assert.equal(allowed.code, 0, allowed.stderr);
  });

  test("Ctrl+C stops a pull with its part kept for the next one", async () => {
    const hub = await hubWith();
    hub.faults.stallAfter = { bytes: 500_000, times: 1 };
    const data = tempDir();
    const env = { TAB_RELAY_MODEL_HUB_URL: hub.url, TAB_RELAY_MODEL_REGISTRY: registryFile() };
    const part = join(data, "models", `${FILE.file}.part`);
    const pulling = start(["pull", "tiny-coder", "--data", data], env);
    await until("half a megabyte on disk", () => existsSync(part) && statSync(part).size === 500_000);
    pulling.child.kill("SIGINT");
    assert.equal(await pulling.exited, 130);
    assert.match(pulling.stderr(), /tiny-coder: stopped; the partial download is kept and the next pull resumes it/);
    assert.equal(statSync(part).size, 500_000);
    assert.ok(!existsSync(join(data, "models", `${FILE.file}.lock`)), "the lock is let go");
  });
});
