// Models by name through the resolver the engine calls (relay/src/engine/models), over real HTTP against a stand-in
// hub on port 0: resume, verification, the watchdog, merging, the disk check, proxies and mirrors, no network.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { systemClock } from "../../relay/src/clock";
import { proxyFromEnv } from "../../relay/src/config";
import {
  type ModelEntry,
  type ModelOptions,
  type PullEvent,
  ModelError,
  createHttpGet,
  removeModel,
  resolveModel,
} from "../../relay/src/engine/models";
import { NO_PROXY_SETTINGS, type ProxySettings } from "../../relay/src/engine/models/transport";
import { startConnectProxy } from "../support/connectProxy";
import { type HubFile, type ModelHub, fakeGguf, sha256, startModelHub } from "../support/modelHub";
import { makeCertificate } from "../support/reverseProxy";

const SIZE = 3_000_000;
const BYTES = fakeGguf(SIZE, 20);

function fileOf(bytes: Buffer = BYTES): HubFile {
  return { repo: "stand-in/Tiny-Coder-GGUF", revision: "0123abcd", file: "tiny-coder-q8_0.gguf", bytes };
}

function entryOf(bytes: Buffer = BYTES, more: Partial<ModelEntry> = {}): ModelEntry {
  const file = fileOf(bytes);
  return {
    name: "tiny-coder",
    label: "Tiny Coder",
    family: "qwen-coder",
    license: { name: "Apache-2.0", url: "https://example.invalid/license" },
    repo: file.repo,
    revision: file.revision,
    file: file.file,
    bytes: bytes.length,
    bytesExact: true,
    sha256: sha256(bytes),
    verified: true,
    sources: ["the test"],
    ...more,
  };
}

const dirs: string[] = [];
const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers) await close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tab-relay-models-"));
  dirs.push(dir);
  return dir;
}

async function hubWith(options: Parameters<typeof startModelHub>[0] = { files: [fileOf()] }): Promise<ModelHub> {
  const hub = await startModelHub(options);
  closers.push(() => hub.close());
  return hub;
}

function client(proxy: ProxySettings = NO_PROXY_SETTINGS, ca?: string) {
  const get = createHttpGet({ proxy, ca, connectTimeoutMs: 2_000, headersTimeoutMs: 5_000 });
  closers.push(() => get.close());
  return get;
}

/** Options as the engine passes them, with the watchdog and retries shortened for the test. */
function optionsFor(hubUrl: string, dataDir: string, more: Partial<ModelOptions> = {}): ModelOptions {
  return {
    dataDir,
    hubUrl,
    registry: [entryOf()],
    get: client(),
    clock: systemClock,
    random: () => 0.5,
    download: { stallMs: 300, retryBaseMs: 20, retryMaxMs: 100 },
    lockPollMs: 50,
    ...more,
  };
}

function modelFile(dataDir: string, name = "tiny-coder-q8_0.gguf"): string {
  return join(dataDir, "models", name);
}

async function rejects(promise: Promise<unknown>, reason: string): Promise<ModelError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ModelError, `expected a ModelError, got ${String(error)}`);
    assert.equal(error.reason, reason, error.message);
    return error;
  }
  assert.fail(`expected a ${reason} error`);
}

describe("models by name: resolveModel over a stand-in hub", () => {
  test("a name is pulled through the hub's redirect to its CDN, verified, and then used without the network", async () => {
    const hub = await hubWith();
    const data = tempDir();
    const events: PullEvent[] = [];
    const resolved = await resolveModel("Tiny-Coder", optionsFor(hub.url, data, { onEvent: (e) => events.push(e) }));
    assert.equal(resolved.path, modelFile(data));
    assert.equal(resolved.entry?.name, "tiny-coder");
    assert.ok(readFileSync(resolved.path).equals(BYTES));
    assert.deepEqual(
      hub.requests.map((r) => [r.path, r.status]),
      [
        ["/stand-in/Tiny-Coder-GGUF/resolve/0123abcd/tiny-coder-q8_0.gguf", 302],
        [`/cdn/${sha256(BYTES)}`, 200],
      ],
    );
    assert.ok(!existsSync(`${resolved.path}.part`) && !existsSync(`${resolved.path}.part.json`));
    assert.ok(existsSync(`${resolved.path}.verified.json`));
    assert.equal(statSync(join(data, "models")).mode & 0o777, 0o700, "private, like the data folder");
    const last = events.filter((e) => e.kind === "progress").at(-1);
    assert.equal(last?.kind === "progress" && last.progress.received, SIZE);

    await hub.close();
    const again = await resolveModel("tiny-coder", optionsFor(hub.url, data));
    assert.equal(again.path, resolved.path, "a verified file needs no hub");
  });

  test("a download cut mid-transfer resumes with a Range from the byte where it broke", async () => {
    const hub = await hubWith();
    hub.faults.cutAfter = { bytes: 1_000_000, times: 1 };
    const data = tempDir();
    const retries: string[] = [];
    const { path } = await resolveModel(
      "tiny-coder",
      optionsFor(hub.url, data, {
        onEvent: (e) => e.kind === "progress" && e.progress.retry && retries.push(e.progress.retry.why),
      }),
    );
    assert.ok(readFileSync(path).equals(BYTES));
    // Bytes in flight when a connection drops are lost (undici discards what it buffered), so the client's count
    // is at most what the hub sent; the resume must start exactly there.
    const kept = Number(/broke at (\d+) of 3000000 bytes/.exec(retries[0] ?? "")?.[1]);
    assert.ok(kept > 0 && kept <= 1_000_000, `kept ${kept}`);
    const transfers = hub.transfers();
    assert.equal(transfers.length, 2);
    assert.deepEqual([transfers[0]?.status, transfers[0]?.sent, transfers[0]?.range], [200, 1_000_000, undefined]);
    assert.deepEqual([transfers[1]?.status, transfers[1]?.range], [206, `bytes=${kept}-`]);
    assert.equal(transfers[1]?.ifRange, `"${sha256(BYTES)}"`, "the resume is conditional on the hub's ETag");
    assert.equal(transfers[1]?.sent, SIZE - kept);
  });

  test("a part left by an earlier run (and its sidecar) is resumed, and its bytes count in the sha256", async () => {
    const hub = await hubWith();
    hub.faults.cutAfter = { bytes: 1_200_000, times: 1 };
    const data = tempDir();
    const first = await rejects(
      resolveModel("tiny-coder", optionsFor(hub.url, data, { download: { maxFailures: 0, stallMs: 300 } })),
      "gave_up",
    );
    const kept = Number(
      /(\d+) of 3000000 bytes are kept, and the next pull resumes from there/.exec(first.message)?.[1],
    );
    assert.ok(kept > 0 && kept <= 1_200_000, first.message);
    assert.equal(statSync(`${modelFile(data)}.part`).size, kept);
    const sidecar = JSON.parse(readFileSync(`${modelFile(data)}.part.json`, "utf8")) as {
      sha256: string;
      etag: string;
    };
    assert.deepEqual([sidecar.sha256, sidecar.etag], [sha256(BYTES), `"${sha256(BYTES)}"`]);

    const { path } = await resolveModel("tiny-coder", optionsFor(hub.url, data));
    assert.ok(readFileSync(path).equals(BYTES));
    assert.equal(hub.transfers()[1]?.range, `bytes=${kept}-`);
  });

  test("a part whose sidecar names another file is started over, not appended to", async () => {
    const hub = await hubWith();
    const data = tempDir();
    mkdirSync(join(data, "models"), { recursive: true });
    writeFileSync(`${modelFile(data)}.part`, Buffer.alloc(500_000, 7));
    writeFileSync(
      `${modelFile(data)}.part.json`,
      JSON.stringify({ version: 1, url: "x", sha256: "f".repeat(64), bytes: SIZE }),
    );
    const { path } = await resolveModel("tiny-coder", optionsFor(hub.url, data));
    assert.ok(readFileSync(path).equals(BYTES));
    assert.deepEqual(
      hub.transfers().map((t) => t.range),
      [undefined],
    );
  });

  test("a body that stalls is cancelled by the watchdog and resumed", async () => {
    const hub = await hubWith();
    hub.faults.stallAfter = { bytes: 700_000, times: 1 };
    const data = tempDir();
    const why: string[] = [];
    const { path } = await resolveModel(
      "tiny-coder",
      optionsFor(hub.url, data, {
        onEvent: (e) => e.kind === "progress" && e.progress.retry && why.push(e.progress.retry.why),
      }),
    );
    assert.ok(readFileSync(path).equals(BYTES));
    assert.deepEqual(
      hub.transfers().map((t) => t.range),
      [undefined, "bytes=700000-"],
    );
    assert.match(why[0] ?? "", /no data for 300 ms at 700000 of 3000000 bytes/);
  });

  test("a sha256 mismatch is refused and the download removed", async () => {
    const hub = await hubWith();
    hub.faults.corrupt = true;
    const data = tempDir();
    const error = await rejects(resolveModel("tiny-coder", optionsFor(hub.url, data)), "checksum_mismatch");
    assert.match(error.message, new RegExp(`not ${sha256(BYTES)}: it was removed`));
    for (const suffix of ["", ".part", ".part.json", ".verified.json"])
      assert.ok(!existsSync(`${modelFile(data)}${suffix}`), `${suffix} is gone`);
  });

  test("a hub that announces another length than the registry's is refused before a byte is written", async () => {
    const hub = await hubWith();
    hub.faults.lieTotal = SIZE + 4096;
    const data = tempDir();
    const error = await rejects(resolveModel("tiny-coder", optionsFor(hub.url, data)), "bad_response");
    assert.match(error.message, /the hub says the file is 3004096 bytes, and the registry says 3000000: refused/);
    assert.ok(!existsSync(`${modelFile(data)}.part`), "nothing was kept");
  });

  test("free space is checked before any request, and the refusal says how much is needed", async () => {
    const hub = await hubWith();
    const data = tempDir();
    const error = await rejects(
      resolveModel("tiny-coder", optionsFor(hub.url, data, { freeBytes: async () => 50_000_000 })),
      "disk_full",
    );
    assert.match(
      error.message,
      /needs 70\.1 MB .* and 50\.0 MB is free\. Free some space, or give another data folder/,
    );
    assert.equal(hub.requests.length, 0);
  });

  test("a disk that fills up mid-download stops the pull at once, keeping what arrived", async (t) => {
    // A 1 MB tmpfs, past a free-space check told otherwise: the write itself fails with ENOSPC.
    const data = tempDir();
    const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", data], { encoding: "utf8" });
    if (mounted.status !== 0) {
      t.skip(`SKIPPED: mounting a tmpfs needs root here (${(mounted.stderr || String(mounted.error)).trim()})`);
      return;
    }
    closers.push(async () => void spawnSync("umount", [data]));
    const hub = await hubWith();
    const error = await rejects(
      resolveModel("tiny-coder", optionsFor(hub.url, data, { freeBytes: async () => 1e12 })),
      "disk_full",
    );
    assert.match(error.message, /the disk filled up at \d+ of 3000000 bytes \(ENOSPC\); what arrived is kept/);
    assert.equal(hub.transfers().length, 1, "not retried");
    assert.ok(statSync(`${modelFile(data)}.part`).size > 0);
  });

  test("concurrent pulls of one file share one transfer and all see its progress", async () => {
    const hub = await hubWith({ files: [fileOf()], chunkBytes: 256 * 1024, chunkDelayMs: 5 });
    const data = tempDir();
    const seen = [0, 0, 0];
    const results = await Promise.all(
      [0, 1, 2].map((i) =>
        resolveModel(
          "tiny-coder",
          optionsFor(hub.url, data, { onEvent: (e) => e.kind === "progress" && (seen[i] = e.progress.received) }),
        ),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.path),
      [modelFile(data), modelFile(data), modelFile(data)],
    );
    assert.equal(hub.transfers().length, 1);
    assert.deepEqual(seen, [SIZE, SIZE, SIZE]);
  });

  test("a pull held by another live process is waited for, and its finished file used", async () => {
    const hub = await hubWith();
    const data = tempDir();
    mkdirSync(join(data, "models"), { recursive: true });
    // A real other process holds the lock while "downloading".
    const other = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" });
    closers.push(async () => void other.kill("SIGKILL"));
    writeFileSync(`${modelFile(data)}.lock`, `${other.pid}\n`);
    const events: PullEvent[] = [];
    const pulling = resolveModel("tiny-coder", optionsFor(hub.url, data, { onEvent: (e) => events.push(e) }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(events[0], { kind: "waiting", pid: other.pid });
    // The other process finishes: its file, its mark, its lock gone.
    writeFileSync(modelFile(data), BYTES);
    const { mtimeMs } = statSync(modelFile(data));
    writeFileSync(`${modelFile(data)}.verified.json`, JSON.stringify({ sha256: sha256(BYTES), bytes: SIZE, mtimeMs }));
    rmSync(`${modelFile(data)}.lock`);
    const { path } = await pulling;
    assert.equal(path, modelFile(data));
    assert.equal(hub.requests.length, 0, "nothing was downloaded twice");
  });

  test("a lock left by a process that is gone is taken over", async () => {
    const hub = await hubWith();
    const data = tempDir();
    mkdirSync(join(data, "models"), { recursive: true });
    const gone = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    await new Promise((resolve) => gone.on("exit", resolve));
    writeFileSync(`${modelFile(data)}.lock`, `${gone.pid}\n`);
    const { path } = await resolveModel("tiny-coder", optionsFor(hub.url, data));
    assert.ok(readFileSync(path).equals(BYTES));
    assert.ok(!existsSync(`${modelFile(data)}.lock`));
  });

  test("with the hub unreachable it fails at once, retrying nothing, and says how to place the file by hand", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const data = tempDir();
    const started = Date.now();
    const error = await rejects(
      resolveModel(
        "tiny-coder",
        optionsFor(`http://127.0.0.1:${port}`, data, { download: { retryBaseMs: 10_000, stallMs: 300 } }),
      ),
      "offline",
    );
    assert.ok(Date.now() - started < 2_000, "no retry was waited for");
    assert.match(error.message, /could not download tiny-coder: the hub could not be reached \(ECONNREFUSED\)/);
    assert.ok(
      error.message.includes(`http://127.0.0.1:${port}/stand-in/Tiny-Coder-GGUF/resolve/0123abcd/tiny-coder-q8_0.gguf`),
    );
    assert.ok(error.message.includes(`must print ${sha256(BYTES)} (3000000 bytes)`));
    assert.ok(error.message.includes(`put it at ${modelFile(data)}`));
    assert.ok(!existsSync(`${modelFile(data)}.part`), "no empty part is left behind");
  });

  test("a mirror (TAB_RELAY_MODEL_HUB_URL) is asked at its own address and path", async () => {
    const hub = await hubWith({ files: [fileOf()], prefix: "/hf-mirror" });
    const data = tempDir();
    await resolveModel("tiny-coder", optionsFor(hub.url, data));
    assert.equal(hub.requests[0]?.path, "/hf-mirror/stand-in/Tiny-Coder-GGUF/resolve/0123abcd/tiny-coder-q8_0.gguf");
  });

  test("HTTPS_PROXY carries the download to an https hub that only the proxy can resolve; NO_PROXY bypasses it", async () => {
    const certDir = tempDir();
    const cert = makeCertificate(certDir, "hub.models.test");
    const hub = await hubWith({
      files: [fileOf()],
      tls: { cert: cert.pem, key: readFileSync(cert.keyPath, "utf8") },
      publicOrigin: "https://hub.models.test",
    });
    const proxy = await startConnectProxy({ "hub.models.test": { host: "127.0.0.1", port: hub.port } });
    closers.push(() => proxy.close());

    const data = tempDir();
    const viaProxy = client(proxyFromEnv({ HTTPS_PROXY: proxy.url }), cert.pem);
    const { path } = await resolveModel("tiny-coder", optionsFor(hub.url, data, { get: viaProxy }));
    assert.ok(readFileSync(path).equals(BYTES));
    assert.ok(proxy.connects.length >= 1);
    assert.ok(proxy.connects.every((target) => target === "hub.models.test:443"));
    assert.equal(hub.requests[0]?.host, "hub.models.test");

    const direct = client(proxyFromEnv({ HTTPS_PROXY: proxy.url, NO_PROXY: ".models.test" }), cert.pem);
    const error = await rejects(resolveModel("tiny-coder", optionsFor(hub.url, tempDir(), { get: direct })), "offline");
    assert.match(error.message, /ENOTFOUND|EAI_AGAIN/);
  });

  test("a proxy that asks for credentials gets them from the proxy URL; without them the pull stops", async () => {
    const hub = await hubWith();
    const proxy = await startConnectProxy({ "127.0.0.1": { host: "127.0.0.1", port: hub.port } }, "team:s3cret");
    closers.push(() => proxy.close());
    const host = new URL(proxy.url).host;
    const authed = client(proxyFromEnv({ HTTP_PROXY: `http://team:s3cret@${host}` }));
    const { path } = await resolveModel("tiny-coder", optionsFor(hub.url, tempDir(), { get: authed }));
    assert.ok(readFileSync(path).equals(BYTES));
    assert.ok(proxy.connects.length >= 1);

    const anonymous = client(proxyFromEnv({ HTTP_PROXY: proxy.url }));
    const requestsBefore = proxy.connects.length;
    const error = await rejects(
      resolveModel("tiny-coder", optionsFor(hub.url, tempDir(), { get: anonymous })),
      "http_error",
    );
    assert.match(error.message, /the proxy answered 407: it wants credentials; give them in the proxy URL/);
    assert.equal(proxy.connects.length, requestsBefore + 1, "a 407 is not retried");
    assert.ok(!error.message.includes("s3cret"));
  });

  test("a proxy that cannot be reached fails the pull at once, like no network", async () => {
    const hub = await hubWith();
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const viaDeadProxy = client(proxyFromEnv({ HTTP_PROXY: `http://127.0.0.1:${port}` }));
    const started = Date.now();
    const error = await rejects(
      resolveModel(
        "tiny-coder",
        optionsFor(hub.url, tempDir(), { get: viaDeadProxy, download: { retryBaseMs: 10_000, stallMs: 300 } }),
      ),
      "offline",
    );
    assert.ok(Date.now() - started < 2_000);
    assert.match(error.message, /ECONNREFUSED/);
    assert.equal(hub.requests.length, 0, "nothing went around the proxy");
  });

  test("an unusable proxy setting kept by serve refuses the download, naming it", async () => {
    const hub = await hubWith();
    const error = await rejects(
      resolveModel(
        "tiny-coder",
        optionsFor(hub.url, tempDir(), { proxyProblems: ["HTTPS_PROXY: must be an http:// or https:// proxy URL"] }),
      ),
      "misconfigured",
    );
    assert.match(error.message, /cannot be downloaded until the proxy setting is fixed: HTTPS_PROXY: must be/);
    assert.equal(hub.requests.length, 0);
  });

  test("a part whose file changed on the hub (another ETag) is started over by If-Range", async () => {
    const hub = await hubWith();
    const data = tempDir();
    mkdirSync(join(data, "models"), { recursive: true });
    writeFileSync(`${modelFile(data)}.part`, Buffer.alloc(400_000, 9));
    writeFileSync(
      `${modelFile(data)}.part.json`,
      JSON.stringify({ version: 1, url: "x", sha256: sha256(BYTES), bytes: SIZE, etag: '"an-older-file"' }),
    );
    const { path } = await resolveModel("tiny-coder", optionsFor(hub.url, data));
    assert.ok(readFileSync(path).equals(BYTES));
    const [transfer] = hub.transfers();
    assert.deepEqual(
      [transfer?.range, transfer?.ifRange, transfer?.status, transfer?.sent],
      ["bytes=400000-", '"an-older-file"', 200, SIZE],
    );
  });

  test("rm refuses while another live process pulls the model", async () => {
    const data = tempDir();
    mkdirSync(join(data, "models"), { recursive: true });
    const other = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" });
    closers.push(async () => void other.kill("SIGKILL"));
    writeFileSync(`${modelFile(data)}.lock`, `${other.pid}\n`);
    writeFileSync(`${modelFile(data)}.part`, "GGUF");
    await rejects(removeModel(entryOf(), data), "busy");
    assert.ok(existsSync(`${modelFile(data)}.part`));
    other.kill("SIGKILL");
    await new Promise((resolve) => other.on("exit", resolve));
    assert.equal(await removeModel(entryOf(), data), 4);
    assert.ok(!existsSync(`${modelFile(data)}.part`));
  });

  test("an unverified entry downloads only when allowed, and its sha256 is still enforced", async () => {
    const hub = await hubWith();
    const registry = [entryOf(BYTES, { verified: false, note: "hash read from a copy" })];
    const error = await rejects(resolveModel("tiny-coder", optionsFor(hub.url, tempDir(), { registry })), "unverified");
    assert.match(error.message, /--allow-unverified/);
    assert.equal(hub.requests.length, 0);
    const { path } = await resolveModel(
      "tiny-coder",
      optionsFor(hub.url, tempDir(), { registry, allowUnverified: true }),
    );
    assert.ok(readFileSync(path).equals(BYTES));
  });

  test("an unknown name lists the known ones; a file path comes back as it is; a missing path says so", async () => {
    const options = optionsFor("http://127.0.0.1:9", tempDir());
    const unknown = await rejects(resolveModel("gpt-5", options), "unknown_model");
    assert.match(
      unknown.message,
      /unknown model "gpt-5"\. Known models: tiny-coder\. Or give the path of a \.gguf file/,
    );
    const dir = tempDir();
    const local = join(dir, "mine.gguf");
    writeFileSync(local, "GGUF");
    assert.deepEqual(await resolveModel(local, options), { path: local });
    const missing = await rejects(resolveModel(join(dir, "nope.gguf"), options), "unknown_model");
    assert.match(missing.message, /no model file at .*nope\.gguf/);
  });

  test("a 404 is not retried; a 503 is retried after its Retry-After", async () => {
    const hub = await hubWith();
    hub.faults.status = { code: 404, times: 5 };
    const notFound = await rejects(resolveModel("tiny-coder", optionsFor(hub.url, tempDir())), "http_error");
    assert.match(notFound.message, /answered 404: the hub \(or mirror\) has no such file at this revision/);
    assert.equal(hub.requests.length, 1);

    hub.faults.status = { code: 503, times: 2, retryAfter: "0" };
    await resolveModel("tiny-coder", optionsFor(hub.url, tempDir()));
    assert.deepEqual(
      hub.requests.slice(1).map((r) => r.status),
      [503, 503, 302, 200],
    );
  });

  test("redirects are followed only so far, only to http(s), and never from https down to http", async () => {
    let target = "";
    const server = createServer((req, res) => {
      res.writeHead(302, { location: target, "content-length": 0 });
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise((resolve) => server.close(() => resolve())));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    target = `${origin}/again`;
    const loop = await rejects(resolveModel("tiny-coder", optionsFor(origin, tempDir())), "bad_response");
    assert.match(loop.message, /more than 5 redirects/);
    target = "file:///etc/passwd";
    const file = await rejects(resolveModel("tiny-coder", optionsFor(origin, tempDir())), "bad_response");
    assert.match(file.message, /a redirect to file: \(only http and https are followed\)/);
  });

  test("a file placed by hand is checked once and used; a wrong one is refused and left in place", async () => {
    const data = tempDir();
    mkdirSync(join(data, "models"), { recursive: true });
    writeFileSync(modelFile(data), BYTES);
    const events: PullEvent[] = [];
    const options = optionsFor("http://127.0.0.1:9", data, { onEvent: (e) => events.push(e) });
    assert.equal((await resolveModel("tiny-coder", options)).path, modelFile(data));
    assert.deepEqual(events, [{ kind: "verifying", path: modelFile(data) }]);
    await resolveModel("tiny-coder", options);
    assert.equal(events.length, 1, "the second use trusts the mark");
    const later = new Date(Date.now() + 5_000);
    utimesSync(modelFile(data), later, later);
    await resolveModel("tiny-coder", options);
    assert.equal(events.length, 2, "a file that changed is checked again");

    const other = tempDir();
    mkdirSync(join(other, "models"), { recursive: true });
    writeFileSync(modelFile(other), fakeGguf(SIZE, 21));
    const error = await rejects(
      resolveModel("tiny-coder", optionsFor("http://127.0.0.1:9", other)),
      "checksum_mismatch",
    );
    assert.match(error.message, /it was left in place/);
    assert.ok(existsSync(modelFile(other)));
  });
});
