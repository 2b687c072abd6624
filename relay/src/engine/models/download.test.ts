import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { systemClock } from "../../clock";
import { type DownloadTarget, downloadFile, parseContentRange, retryDelayMs } from "./download";
import { ModelError } from "./errors";
import { modelPaths } from "./store";
import type { HttpGet, HttpResponse } from "./transport";

// The hub's answers are scripted here for what a real server will not easily send (more bytes than it announced,
// a range that starts elsewhere); test/relay/models.test.ts runs the same code against a real stand-in hub.

const BYTES = Buffer.from("GGUF".padEnd(4096, "x"));
const SHA = createHash("sha256").update(BYTES).digest("hex");

const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function target(): DownloadTarget {
  const dir = mkdtempSync(join(tmpdir(), "tab-relay-download-"));
  dirs.push(dir);
  mkdirSync(join(dir, "models"));
  return {
    url: "https://hub.test/o/r/resolve/main/m.gguf",
    paths: modelPaths(dir, "m.gguf"),
    sha256: SHA,
    bytes: BYTES.length,
    bytesExact: true,
  };
}

function answer(status: number, headers: Record<string, string>, body: Buffer = Buffer.alloc(0)): HttpResponse {
  return {
    status,
    headers,
    body: (async function* () {
      if (body.length > 0) yield body;
    })(),
    cancel: () => undefined,
  };
}

/** Answers in order; records what was asked. */
function scripted(answers: HttpResponse[]): HttpGet & { asked: { url: string; range: string | undefined }[] } {
  const asked: { url: string; range: string | undefined }[] = [];
  const get: HttpGet = async (url, init) => {
    asked.push({ url, range: init.headers["range"] });
    const next = answers.shift();
    if (next === undefined) throw new Error("the script ran out");
    return next;
  };
  return Object.assign(get, { asked });
}

const deps = (get: HttpGet) => ({ get, clock: systemClock, random: () => 0.5, freeBytes: async () => 1e12 });

async function refused(promise: Promise<unknown>, reason: string, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ModelError, String(error));
    assert.equal(error.reason, reason);
    assert.match(error.message, message);
    return true;
  });
}

describe("downloadFile against scripted answers", () => {
  test("a body longer than the length it announced is refused before the extra byte is written", async () => {
    const t = target();
    const get = scripted([
      answer(200, { "content-length": String(BYTES.length) }, Buffer.concat([BYTES, Buffer.from("!")])),
    ]);
    await refused(downloadFile(t, deps(get)), "bad_response", /sent more than the 4096 bytes it announced/);
    assert.ok(!existsSync(t.paths.file));
  });

  test("a 206 that starts elsewhere than asked, or has no usable Content-Range, is refused", async () => {
    const t = target();
    writeFileSync(t.paths.part, BYTES.subarray(0, 100));
    writeFileSync(t.paths.partMeta, JSON.stringify({ version: 1, url: t.url, sha256: SHA, bytes: BYTES.length }));
    const get = scripted([answer(206, { "content-range": `bytes 0-4095/4096` }, BYTES)]);
    await refused(downloadFile(t, deps(get)), "bad_response", /starting at byte 0, not at 100 as asked/);
    assert.equal(get.asked[0]?.range, "bytes=100-");
    const again = scripted([answer(206, { "content-range": "bytes 100-4095/*" })]);
    await refused(downloadFile(t, deps(again)), "bad_response", /without a usable Content-Range/);
  });

  test("a 200 without a length is refused: the size must be known before writing", async () => {
    await refused(
      downloadFile(target(), deps(scripted([answer(200, {}, BYTES)]))),
      "bad_response",
      /without a Content-Length/,
    );
  });

  test("a 416 for a part that is already whole finishes it; a 200 to a range starts over", async () => {
    const t = target();
    writeFileSync(t.paths.part, BYTES);
    writeFileSync(t.paths.partMeta, JSON.stringify({ version: 1, url: t.url, sha256: SHA, bytes: BYTES.length }));
    await downloadFile(t, deps(scripted([answer(416, { "content-range": "bytes */4096" })])));
    assert.ok(readFileSync(t.paths.file).equals(BYTES));

    const u = target();
    writeFileSync(u.paths.part, Buffer.alloc(1000, 1));
    writeFileSync(u.paths.partMeta, JSON.stringify({ version: 1, url: u.url, sha256: SHA, bytes: BYTES.length }));
    await downloadFile(u, deps(scripted([answer(200, { "content-length": "4096" }, BYTES)])));
    assert.ok(readFileSync(u.paths.file).equals(BYTES), "the old bytes were dropped, not kept before the new");
  });

  test("a redirect from https down to http, or without a Location, is refused", async () => {
    await refused(
      downloadFile(target(), deps(scripted([answer(302, { location: "http://cdn.test/m" })]))),
      "bad_response",
      /from https down to http/,
    );
    await refused(downloadFile(target(), deps(scripted([answer(307, {})]))), "bad_response", /without a Location/);
  });

  test("401 and 403 say the file needs an account, and are not retried", async () => {
    const get = scripted([answer(401, {})]);
    await refused(downloadFile(target(), deps(get)), "http_error", /needs an account or a licence accepted/);
    assert.equal(get.asked.length, 1);
  });
});

describe("download decisions", () => {
  test("retries back off 1 s, 2 s, 4 s … up to 30 s with ±25 % jitter, or wait the hub's Retry-After up to a minute", () => {
    assert.deepEqual(
      [1, 2, 3, 6, 10].map((n) => retryDelayMs(n, undefined, () => 0.5)),
      [1000, 2000, 4000, 30_000, 30_000],
    );
    assert.equal(
      retryDelayMs(1, undefined, () => 0),
      750,
    );
    assert.equal(
      retryDelayMs(1, undefined, () => 0.999_999),
      1250,
    );
    assert.equal(
      retryDelayMs(1, 5000, () => 0.5),
      5000,
    );
    assert.equal(
      retryDelayMs(1, 3_600_000, () => 0.5),
      60_000,
    );
  });

  test("Content-Range is read strictly", () => {
    assert.deepEqual(parseContentRange("bytes 100-199/1000"), [100, 199, 1000]);
    for (const bad of [
      "bytes 100-99/1000",
      "bytes 0-1000/1000",
      "bytes */1000",
      "items 0-1/2",
      "bytes 1-2/x",
      undefined,
    ])
      assert.equal(parseContentRange(bad), undefined, String(bad));
  });
});
