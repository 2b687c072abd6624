import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { test } from "node:test";
import type { FetchLike } from "../core/types";
import { createLoopbackFetch } from "./loopbackFetch";

interface Seen {
  readonly method: string | undefined;
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
  /** Which connection it came on (1, 2, … in the order they opened) and its how-manieth request there. */
  readonly connection: number;
  readonly onConnection: number;
}

/** A real HTTP server on port 0 of 127.0.0.1 that numbers its connections and keeps what each request sent. */
async function relayStandIn(handle: (req: IncomingMessage, res: ServerResponse, seen: Seen) => void) {
  const seen: Seen[] = [];
  const numbers = new WeakMap<Socket, { id: number; requests: number }>();
  let connections = 0;
  const closed: number[] = [];
  const server: Server = createServer((req, res) => {
    const socket = numbers.get(req.socket) as { id: number; requests: number };
    socket.requests += 1;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const entry: Seen = {
        method: req.method,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        connection: socket.id,
        onConnection: socket.requests,
      };
      seen.push(entry);
      handle(req, res, entry);
    });
  });
  server.on("connection", (socket: Socket) => {
    const id = ++connections;
    numbers.set(socket, { id, requests: 0 });
    socket.on("close", () => closed.push(id));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    closed,
    connections: () => connections,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

const noFallback: FetchLike = () => Promise.reject(new Error("the fallback was used"));

function post(body: string, signal = new AbortController().signal) {
  return { method: "POST", headers: { "Content-Type": "application/json", Authorization: "Bearer k" }, body, signal };
}

test("a relay on this machine is reached over one kept connection: the request's method, headers and body arrive, and the answer's status, headers and body come back", async (t) => {
  const relay = await relayStandIn((_req, res, seen) => {
    res.writeHead(201, { "Content-Type": "application/json", "X-Seen": String(seen.onConnection) });
    res.end(JSON.stringify({ echo: seen.body }));
  });
  const transport = createLoopbackFetch(noFallback);
  t.after(async () => {
    transport.dispose();
    await relay.close();
  });
  for (const body of ['{"a":"é😀"}', '{"b":2}', '{"c":3}']) {
    const response = await transport.fetch(`${relay.url}/api/v1/tab/next-edits`, post(body));
    assert.equal(response.status, 201);
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.deepEqual(await response.json(), { echo: body });
  }
  assert.deepEqual(
    relay.seen.map((s) => [s.method, s.connection, s.onConnection]),
    [
      ["POST", 1, 1],
      ["POST", 1, 2],
      ["POST", 1, 3],
    ],
  );
  const first = relay.seen[0] as Seen;
  assert.equal(first.headers.authorization, "Bearer k");
  assert.equal(first.headers["content-length"], String(Buffer.byteLength('{"a":"é😀"}')));
  assert.equal(relay.connections(), 1);
});

test("`localhost` and `[::1]` are this machine too; an https relay or one elsewhere goes through the fallback unchanged", async () => {
  const calls: string[] = [];
  const fallback: FetchLike = (url) => {
    calls.push(url);
    return Promise.resolve(new Response("from the fallback"));
  };
  const transport = createLoopbackFetch(fallback);
  try {
    for (const url of ["https://127.0.0.1:1/x", "http://relay.example.com/x", "http://10.0.0.2:8080/x"]) {
      const response = await transport.fetch(url, post("{}"));
      assert.equal(await response.text(), "from the fallback");
    }
    assert.deepEqual(calls, ["https://127.0.0.1:1/x", "http://relay.example.com/x", "http://10.0.0.2:8080/x"]);
    // Port 1 refuses: the refusal comes from the transport itself, as fetch's would, not from the fallback.
    for (const host of ["localhost", "[::1]"]) {
      const error = (await transport.fetch(`http://${host}:1/x`, post("{}")).then(
        () => assert.fail("expected a refusal"),
        (e: unknown) => e,
      )) as TypeError & { cause: NodeJS.ErrnoException };
      assert.equal(error.message, "fetch failed");
      assert.match(String(error.cause.code), /ECONNREFUSED|EADDRNOTAVAIL/);
    }
    assert.equal(calls.length, 3);
  } finally {
    transport.dispose();
  }
});

test("a streamed answer is read as it arrives, before the relay has sent the rest", async (t) => {
  let sendRest: (() => void) | undefined;
  const relay = await relayStandIn((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.write("data: one\n\n");
    sendRest = () => res.end("data: two\n\n");
  });
  const transport = createLoopbackFetch(noFallback);
  t.after(async () => {
    transport.dispose();
    await relay.close();
  });
  const response = await transport.fetch(`${relay.url}/s`, post("{}"));
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const first = await reader.read();
  assert.equal(decoder.decode(first.value), "data: one\n\n");
  assert.ok(sendRest, "the relay has not been asked yet");
  sendRest();
  let rest = "";
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += decoder.decode(chunk.value);
  assert.equal(rest, "data: two\n\n");
});

test("an abort before the answer rejects with the signal's reason and closes the request at the relay; one while the body streams errors the reader", async (t) => {
  const held: ServerResponse[] = [];
  const relay = await relayStandIn((req, res) => {
    if (req.url === "/stream") {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write("data: one\n\n");
    }
    held.push(res);
  });
  const transport = createLoopbackFetch(noFallback);
  t.after(async () => {
    transport.dispose();
    await relay.close();
  });
  const before = new AbortController();
  const pending = transport.fetch(`${relay.url}/hold`, post("{}", before.signal));
  while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const closedAtRelay = once(held[0] as ServerResponse, "close");
  before.abort();
  await assert.rejects(pending, { name: "AbortError" });
  await closedAtRelay;

  const during = new AbortController();
  const response = await transport.fetch(`${relay.url}/stream`, post("{}", during.signal));
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  assert.equal(new TextDecoder().decode((await reader.read()).value), "data: one\n\n");
  during.abort();
  await assert.rejects(reader.read(), { name: "AbortError" });

  const already = new AbortController();
  already.abort();
  await assert.rejects(transport.fetch(`${relay.url}/hold`, post("{}", already.signal)), { name: "AbortError" });
  assert.equal(relay.seen.filter((s) => s.body === "{}").length, 2, "an aborted signal sends nothing");
});

test("a kept connection the relay closes while it is idle is retried once on a new one, and only once", async (t) => {
  const relay = await relayStandIn((req, res, seen) => {
    // The relay drops the second request on the kept connection unanswered, as a relay closing an idle connection
    // just as a request arrives does; and every request to /drop, on whichever connection.
    if ((seen.connection === 1 && seen.onConnection === 2) || req.url === "/drop") {
      req.socket.destroy();
      return;
    }
    res.end("ok");
  });
  const transport = createLoopbackFetch(noFallback);
  t.after(async () => {
    transport.dispose();
    await relay.close();
  });
  assert.equal(await (await transport.fetch(`${relay.url}/a`, post("1"))).text(), "ok");
  assert.equal(await (await transport.fetch(`${relay.url}/b`, post("2"))).text(), "ok");
  assert.deepEqual(
    relay.seen.map((s) => [s.body, s.connection, s.onConnection]),
    [
      ["1", 1, 1],
      ["2", 1, 2],
      ["2", 2, 1],
    ],
  );
  const drop = await transport.fetch(`${relay.url}/drop`, post("3")).then(
    () => assert.fail("expected the request to fail"),
    (e: unknown) => e as TypeError & { cause: NodeJS.ErrnoException },
  );
  assert.equal(drop.message, "fetch failed");
  assert.equal(drop.cause.code, "ECONNRESET");
  // /drop went out once on the kept connection 2 (reused, so retried once on a new connection 3, which failed too).
  assert.deepEqual(
    relay.seen.filter((s) => s.body === "3").map((s) => [s.connection, s.onConnection]),
    [
      [2, 2],
      [3, 1],
    ],
  );
});

test("an answer without a body (204) has a null body; dispose closes the kept connections", async () => {
  const relay = await relayStandIn((_req, res) => {
    res.writeHead(204);
    res.end();
  });
  const transport = createLoopbackFetch(noFallback);
  try {
    const response = await transport.fetch(`${relay.url}/usage`, post("[]"));
    assert.equal(response.status, 204);
    assert.equal(response.body, null);
    assert.equal(relay.closed.length, 0);
    transport.dispose();
    while (relay.closed.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.deepEqual(relay.closed, [1]);
  } finally {
    transport.dispose();
    await relay.close();
  }
});

test("a status `Response` cannot hold (not 200 to 599) is a failed request, not a promise left hanging", async (t) => {
  const relay = await relayStandIn((_req, res) => {
    res.writeHead(799);
    res.end("odd");
  });
  const transport = createLoopbackFetch(noFallback);
  t.after(async () => {
    transport.dispose();
    await relay.close();
  });
  const failure = await transport.fetch(`${relay.url}/odd`, post("{}")).then(
    () => assert.fail("expected a failure"),
    (e: unknown) => e as TypeError & { cause: Error },
  );
  assert.equal(failure.message, "fetch failed");
  assert.match(failure.cause.message, /HTTP status 799/);
});
