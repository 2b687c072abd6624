import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { createHttpPost } from "./httpPost";

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
      res.writeHead(200, { "content-type": "text/event-stream" });
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
after(() => {
  post.destroy();
  server.closeAllConnections();
  server.close();
});

test("sends the body and streams the answer", async () => {
  const response = await post(`${url}/`, { headers: { "content-type": "application/json" }, body: '{"a":1}', signal: new AbortController().signal });
  assert.equal(response.status, 200);
  assert.equal(response.contentType, "text/event-stream");
  let text = "";
  for await (const chunk of response.body) text += Buffer.from(chunk).toString();
  assert.equal(text, 'data: {"a":1}\n\ndata: [DONE]\n\n');
});

test("a reader that stops early and releases the body keeps the connection for the next request", async () => {
  const before = connections;
  for (let i = 0; i < 3; i++) {
    const response = await post(`${url}/`, { headers: {}, body: `${i}`, signal: new AbortController().signal });
    for await (const _chunk of response.body) break;
    response.release();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.ok(connections - before <= 1, `opened ${connections - before} connections`);
});

test("aborting drops the request at once", async () => {
  const controller = new AbortController();
  const response = await post(`${url}/slow`, { headers: {}, body: "x", signal: controller.signal });
  const iterator = response.body[Symbol.asyncIterator]();
  await iterator.next();
  controller.abort(new Error("client went away"));
  await lastClosedEarly;
  await assert.rejects(iterator.next());
});

test("an already aborted signal sends nothing", async () => {
  const controller = new AbortController();
  controller.abort(new Error("too late"));
  await assert.rejects(post(`${url}/`, { headers: {}, body: "x", signal: controller.signal }), /too late/);
});
