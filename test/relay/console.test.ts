import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../../relay/src/config";
import { silentLogger } from "../../relay/src/logger";
import { type RunningRelay, openStore, startRelay } from "../../relay/src/main";
import { initWorkspace } from "../../relay/src/workspace/init";

describe("the console's files", () => {
  let relay: RunningRelay;
  const dirs: string[] = [];
  const page = "<!doctype html><title>console</title>";

  before(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-console-"));
    // A console of its own, so its files are served whether or not the real console was built.
    const consoleDir = mkdtempSync(join(tmpdir(), "tab-relay-console-files-"));
    writeFileSync(join(consoleDir, "index.html"), page);
    writeFileSync(join(consoleDir, "app.css"), "body { margin: 0 }");
    dirs.push(dataDir, consoleDir);
    const config = loadConfig({ TAB_RELAY_DATA: dataDir, TAB_RELAY_PORT: "0", TAB_RELAY_LOG_LEVEL: "silent" });
    const store = await openStore(config);
    await initWorkspace(store, { now: () => Date.now() }, { slug: "acme", ownerName: "Olive Owner" });
    relay = await startRelay(config, { store, logger: silentLogger, consoleDir });
  });
  after(async () => {
    await relay.close(0);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  // Found by the fuzz suite: send's 416 and 412 reached the error handler as unknown errors, so they were 500s.
  const conditions: Record<string, string>[] = [
    { Range: "bytes=99999999-" },
    { Range: "bytes=0-1" },
    { "If-Match": '"nope"' },
    { "If-Unmodified-Since": "Thu, 01 Jan 1970 00:00:00 GMT" },
  ];
  for (const headers of conditions) {
    for (const path of ["/signin", "/index.html", "/app.css"]) {
      test(`${path} with ${Object.entries(headers)[0]?.join(": ")} is served whole`, async () => {
        const response = await fetch(relay.url + path, { headers: { Accept: "text/html", ...headers } });
        assert.equal(response.status, 200, await response.clone().text());
        assert.equal(response.headers.get("content-range"), null);
        const body = await response.text();
        if (path !== "/app.css") assert.equal(body, page);
      });
    }
  }

  test("each page of the console's menu opens the console when its address is loaded, as a reload does", async () => {
    for (const path of ["/keys", "/agents", "/playground", "/people", "/audit", "/insights"]) {
      const response = await fetch(relay.url + path, { headers: { Accept: "text/html" } });
      assert.equal(response.status, 200, `${path}: ${response.status}`);
      assert.equal(await response.text(), page);
    }
  });

  test("a browser at a mistyped console address gets the console's page with 404; an API client still gets JSON", async () => {
    const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    for (const path of ["/consol", "/agents/x/y", "/no/such/page"]) {
      const response = await fetch(relay.url + path, { headers: { Accept: browser } });
      assert.equal(response.status, 404, path);
      assert.match(response.headers.get("content-type") ?? "", /^text\/html/, path);
      assert.equal(await response.text(), page, path);
    }
    for (const accept of ["*/*", "application/json", undefined]) {
      const response = await fetch(`${relay.url}/consol`, accept ? { headers: { Accept: accept } } : {});
      assert.equal(response.status, 404, String(accept));
      const body = (await response.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, "NOT_FOUND");
      assert.match(body.error.message, /No route for GET \/consol/);
    }
    // An API path is the API's: its JSON error even to a browser (without a key, the 401 comes first).
    const api = await fetch(`${relay.url}/api/v1/nope`, { headers: { Accept: browser } });
    assert.equal(api.status, 401);
    assert.equal(((await api.json()) as { error: { code: string } }).error.code, "UNAUTHORIZED");
  });

  test("a repeat visit with If-None-Match is still a 304", async () => {
    const first = await fetch(`${relay.url}/app.css`);
    await first.arrayBuffer();
    const etag = first.headers.get("etag");
    assert.ok(etag, "express.static sends an ETag");
    // node:http, because fetch adds `Cache-Control: no-cache` to a conditional request, which asks for the whole file.
    const status = await new Promise<number | undefined>((resolve, reject) => {
      get(`${relay.url}/app.css`, { headers: { "If-None-Match": etag } }, (res) => {
        res.resume();
        resolve(res.statusCode);
      }).on("error", reject);
    });
    assert.equal(status, 304);
  });
});
