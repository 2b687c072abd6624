import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { UpstreamSilence, createHttpPost } from "./httpPost";

let server: Server;
let url: string;
let connections = 0;
let lastClosedEarly: Promise<void> = Promise.resolve();
const post = createHttpPost();

before(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      if (req.url === "/no-headers") {
        lastClosedEarly = new Promise((resolve) => res.on("close", () => resolve()));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (req.url === "/silent-body") return res.flushHeaders();
      res.write(`data: ${body}\n\n`);
      if (req.url === "/slow") {
        lastClosedEarly = new Promise((resolve) => res.on("close", () => resolve()));
        return;
      }
      setTimeout(() => res.end("data: [DONE]\n\n"), 5);
    });
  });
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await post.destroy();
  server.closeAllConnections();
  server.close();
});

const init = (body: string, signal = new AbortController().signal) => ({
  headers: { "content-type": "application/json" },
  body,
  signal,
  idleTimeoutMs: 1000,
});

async function readAll(response: { read: (onChunk: (chunk: Buffer) => void) => Promise<void> }): Promise<string> {
  let text = "";
  await response.read((chunk) => {
    text += chunk.toString();
  });
  return text;
}

test("sends the body and streams the answer", async () => {
  const response = await post(`${url}/`, init('{"a":1}'));
  assert.equal(response.status, 200);
  assert.equal(response.contentType, "text/event-stream");
  assert.equal(await readAll(response), 'data: {"a":1}\n\ndata: [DONE]\n\n');
});

test("a reader that releases the body early keeps the connection for the next request", async () => {
  const before = connections;
  for (let i = 0; i < 3; i++) {
    const response = await post(`${url}/`, init(`${i}`));
    await response.read(() => "release");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.ok(connections - before <= 1, `opened ${connections - before} connections`);
});

test("a reader that drops the body closes the upstream request at once", async () => {
  const response = await post(`${url}/slow`, init("x"));
  await response.read(() => "drop");
  await lastClosedEarly;
});

test("aborting drops the request at once and rejects the read with the reason", async () => {
  const controller = new AbortController();
  const response = await post(`${url}/slow`, init("x", controller.signal));
  const reason = new Error("client went away");
  const reading = response.read(() => {
    controller.abort(reason);
  });
  await assert.rejects(reading, (error: unknown) => error === reason);
  await lastClosedEarly;
});

test("an already aborted signal sends nothing", async () => {
  const controller = new AbortController();
  controller.abort(new Error("too late"));
  await assert.rejects(post(`${url}/`, init("x", controller.signal)), /too late/);
});

test("silence before the headers and in the body are told apart, and drop the request", async () => {
  await assert.rejects(
    post(`${url}/no-headers`, { ...init("x"), idleTimeoutMs: 100 }),
    (error: unknown) => error instanceof UpstreamSilence && error.phase === "headers",
  );
  await lastClosedEarly;

  const silent = await post(`${url}/silent-body`, { ...init("x"), idleTimeoutMs: 100 });
  await assert.rejects(
    readAll(silent),
    (error: unknown) => error instanceof UpstreamSilence && error.phase === "body" && !error.sawBody,
  );

  const slow = await post(`${url}/slow`, { ...init("x"), idleTimeoutMs: 100 });
  await assert.rejects(readAll(slow), (error: unknown) => error instanceof UpstreamSilence && error.sawBody);
  await lastClosedEarly;
});

test("a connection cut mid-body rejects the read", async () => {
  const response = await post(`${url}/slow`, init("x"));
  await assert.rejects(
    response.read(() => {
      server.closeAllConnections();
    }),
    (error: unknown) =>
      (error as { code?: string }).code === "ECONNRESET" && /closed the connection/.test(String(error)),
  );
});
