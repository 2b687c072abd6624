import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import express from "express";
import { createErrorHandler } from "../http/errors";
import { silentLogger } from "../logger";
import { EXTENSION_DOWNLOAD_PATH } from "@tab-relay/shared";
import { createDownloadsRouter } from "./downloads";

const dir = mkdtempSync(join(tmpdir(), "tab-relay-downloads-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function serve(file: string | undefined): Promise<{ url: string; close: () => void }> {
  const app = express();
  app.use(createDownloadsRouter(file));
  app.use(createErrorHandler({ logger: silentLogger }));
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

test("GET /downloads/tab-relay.vsix answers the extension's package byte for byte, as an attachment", async () => {
  const file = join(dir, "tab-relay-vscode.vsix");
  const bytes = Buffer.from([0x50, 0x4b, 0x03, 0x04, ...Array.from({ length: 70_000 }, (_, i) => i % 251)]);
  writeFileSync(file, bytes);
  const relay = await serve(file);
  try {
    const response = await fetch(`${relay.url}${EXTENSION_DOWNLOAD_PATH}`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-disposition"), 'attachment; filename="tab-relay.vsix"');
    assert.equal(response.headers.get("content-length"), String(bytes.length));
    assert.deepEqual(Buffer.from(await response.arrayBuffer()), bytes);
  } finally {
    relay.close();
  }
});

test("without a package (an installed relay, or a checkout not yet packaged) it answers 404 saying how to build one", async () => {
  for (const file of [undefined, join(dir, "missing.vsix")]) {
    const relay = await serve(file);
    try {
      const response = await fetch(`${relay.url}${EXTENSION_DOWNLOAD_PATH}`);
      assert.equal(response.status, 404);
      const { error } = (await response.json()) as { error: { code: string; message: string } };
      assert.equal(error.code, "NOT_FOUND");
      assert.match(error.message, /`npm start` \(or `npm run package`\) builds it/);
    } finally {
      relay.close();
    }
  }
});
