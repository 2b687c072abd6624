import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { createGuardedLookup, createWebhookClient, type ResolveAll, type WebhookClient } from "./webhookClient";

interface Seen {
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
}

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);
let server: Server;
let base: string;
let port: number;
let connections = 0;
const seen: Seen[] = [];
const servedBySocket = new WeakMap<Socket, number>();
let slowClosed: Promise<void> = Promise.resolve();

function route(req: IncomingMessage, res: ServerResponse, body: string): void {
  switch (new URL(req.url ?? "/", "http://x").pathname) {
    case "/ok":
      res.writeHead(200, { "content-type": "text/plain" }).end("  thanks  \n");
      return;
    case "/empty":
      res.writeHead(204).end();
      return;
    case "/echo":
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ headers: req.headers, body }));
      return;
    case "/fail":
      res.writeHead(500, { "content-type": "text/plain" }).end("boom: database down");
      return;
    case "/gone":
      res.writeHead(410).end("agent removed");
      return;
    case "/redirect":
      res.writeHead(302, { location: "/target" }).end("moved");
      return;
    case "/target":
      res.writeHead(200).end("should never be reached");
      return;
    case "/throttled":
      res.writeHead(429, { "retry-after": "7" }).end("slow down");
      return;
    case "/unavailable":
      res.writeHead(503, { "retry-after": new Date(NOW + 30_000).toUTCString() }).end();
      return;
    case "/unavailable-past":
      res.writeHead(503, { "retry-after": new Date(NOW - 60_000).toUTCString() }).end();
      return;
    case "/unavailable-garbage":
      res.writeHead(503, { "retry-after": "soon" }).end();
      return;
    case "/slow":
      slowClosed = new Promise((resolve) => res.on("close", () => resolve()));
      return;
    case "/slow-body":
      res.writeHead(200);
      res.write("partial ");
      return;
    case "/big":
      res.writeHead(200).end("x".repeat(100 * 1024));
      return;
    case "/endless": {
      res.writeHead(200);
      const chunk = "y".repeat(16 * 1024);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
      return;
    }
    case "/multibyte":
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end(`a${"é".repeat(600)}`);
      return;
    case "/drop-reused":
      // Mimics a keep-alive socket the server closed just as the client reused it.
      if ((servedBySocket.get(req.socket) ?? 0) > 1) req.socket.destroy();
      else res.writeHead(200).end("fresh socket");
      return;
    case "/drop-always":
      req.socket.destroy();
      return;
    default:
      res.writeHead(404).end();
  }
}

before(async () => {
  server = createServer((req, res) => {
    servedBySocket.set(req.socket, (servedBySocket.get(req.socket) ?? 0) + 1);
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      seen.push({ path: req.url ?? "", headers: req.headers, body });
      route(req, res, body);
    });
  });
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

async function withClient<T>(
  options: { allowPrivate: boolean; timeoutMs?: number },
  use: (client: WebhookClient) => Promise<T>,
): Promise<T> {
  const client = createWebhookClient({ ...options, now: () => NOW });
  try {
    return await use(client);
  } finally {
    client.close();
  }
}

const send = (client: WebhookClient, path: string, url = `${base}${path}`) =>
  client.send({ url, headers: { "webhook-id": "msg_1" }, body: '{"type":"ping"}' });
const hits = (path: string) => seen.filter((entry) => entry.path === path).length;

test("a 2xx answer is a success with a trimmed excerpt of the body", async () => {
  const outcome = await withClient({ allowPrivate: true }, (client) => send(client, "/ok"));
  assert.equal(outcome.ok, true);
  assert.equal(outcome.status, 200);
  assert.equal(outcome.excerpt, "thanks");
  assert.equal(outcome.error, undefined);
  assert.equal(outcome.retryAfterMs, undefined);
  assert.ok(outcome.durationMs >= 0 && outcome.durationMs < 5000, `${outcome.durationMs}`);
});

test("a 204 without a body is a success with an empty excerpt", async () => {
  const outcome = await withClient({ allowPrivate: true }, (client) => send(client, "/empty"));
  assert.deepEqual(
    { ok: outcome.ok, status: outcome.status, excerpt: outcome.excerpt },
    { ok: true, status: 204, excerpt: "" },
  );
});

test("the request carries the body, the caller's headers and the JSON, user-agent and length headers", async () => {
  const outcome = await withClient({ allowPrivate: true }, (client) =>
    client.send({
      url: `${base}/echo?x=1`,
      headers: { "webhook-id": "msg_2", "Content-Type": "text/plain", "webhook-signature": "v1,abc" },
      body: '{"a":"é"}',
    }),
  );
  assert.equal(outcome.ok, true);
  const last = seen.at(-1);
  assert.equal(last?.path, "/echo?x=1");
  assert.equal(last?.body, '{"a":"é"}');
  assert.equal(last?.headers["content-type"], "application/json");
  assert.equal(last?.headers["user-agent"], "tab-relay-webhooks/1");
  assert.equal(last?.headers["content-length"], String(Buffer.byteLength('{"a":"é"}')));
  assert.equal(last?.headers["webhook-id"], "msg_2");
  assert.equal(last?.headers["webhook-signature"], "v1,abc");
});

test("a custom user agent replaces the default", async () => {
  const client = createWebhookClient({ allowPrivate: true, now: () => NOW, userAgent: "custom/2" });
  try {
    await send(client, "/echo");
  } finally {
    client.close();
  }
  assert.equal(seen.at(-1)?.headers["user-agent"], "custom/2");
});

test("a 500 answer fails and keeps the body excerpt", async () => {
  const outcome = await withClient({ allowPrivate: true }, (client) => send(client, "/fail"));
  assert.deepEqual(
    { ok: outcome.ok, status: outcome.status, excerpt: outcome.excerpt, error: outcome.error },
    { ok: false, status: 500, excerpt: "boom: database down", error: undefined },
  );
});

test("a 410 answer reports its status so the caller can stop retrying", async () => {
  const outcome = await withClient({ allowPrivate: true }, (client) => send(client, "/gone"));
  assert.deepEqual({ ok: outcome.ok, status: outcome.status }, { ok: false, status: 410 });
});

test("a redirect is not followed and counts as a failure", async () => {
  const targetHits = hits("/target");
  const outcome = await withClient({ allowPrivate: true }, (client) => send(client, "/redirect"));
  assert.deepEqual(
    { ok: outcome.ok, status: outcome.status, excerpt: outcome.excerpt },
    { ok: false, status: 302, excerpt: "moved" },
  );
  // A client that followed the redirect would have asked for the target before it had an answer to give.
  assert.equal(hits("/target"), targetHits);
});

test("Retry-After in seconds is read as milliseconds", async () => {
  const outcome = await withClient({ allowPrivate: true }, (client) => send(client, "/throttled"));
  assert.deepEqual(
    { ok: outcome.ok, status: outcome.status, retryAfterMs: outcome.retryAfterMs },
    { ok: false, status: 429, retryAfterMs: 7000 },
  );
});

test("Retry-After as an HTTP-date is measured against the injected clock", async () => {
  const outcome = await withClient({ allowPrivate: true }, (client) => send(client, "/unavailable"));
  assert.deepEqual(
    { status: outcome.status, retryAfterMs: outcome.retryAfterMs },
    { status: 503, retryAfterMs: 30_000 },
  );
});

test("a Retry-After date in the past means retry now, and an unreadable one is ignored", async () => {
  const [past, garbage] = await withClient({ allowPrivate: true }, (client) =>
    Promise.all([send(client, "/unavailable-past"), send(client, "/unavailable-garbage")]),
  );
  assert.equal(past?.retryAfterMs, 0);
  assert.equal(garbage?.status, 503);
  assert.equal(garbage?.retryAfterMs, undefined);
});

test("a server that does not answer in time gives a timeout error and the request is dropped", async () => {
  const outcome = await withClient({ allowPrivate: true, timeoutMs: 200 }, (client) => send(client, "/slow"));
  assert.equal(outcome.ok, false);
  assert.equal(outcome.status, undefined);
  assert.equal(outcome.error, "timed out after 200 ms");
  assert.ok(outcome.durationMs >= 190 && outcome.durationMs < 1500, `${outcome.durationMs}`);
  await slowClosed;
});

test("a body that stalls after the headers ends the attempt at the timeout with the status and what arrived", async () => {
  const outcome = await withClient({ allowPrivate: true, timeoutMs: 200 }, (client) => send(client, "/slow-body"));
  assert.deepEqual(
    { ok: outcome.ok, status: outcome.status, excerpt: outcome.excerpt, error: outcome.error },
    { ok: true, status: 200, excerpt: "partial", error: undefined },
  );
  assert.ok(outcome.durationMs >= 190, `${outcome.durationMs}`);
});

test("a refused connection is an error outcome", async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const deadPort = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const outcome = await withClient({ allowPrivate: true }, (client) =>
    send(client, "", `http://127.0.0.1:${deadPort}/hook`),
  );
  assert.equal(outcome.ok, false);
  assert.equal(outcome.status, undefined);
  assert.match(outcome.error ?? "", /ECONNREFUSED/);
});

test("a big body is cut to a 1 KiB excerpt", async () => {
  const outcome = await withClient({ allowPrivate: true }, (client) => send(client, "/big"));
  assert.equal(outcome.ok, true);
  assert.equal(outcome.excerpt, "x".repeat(1024));
});

test("an endless body is abandoned after the drain limit instead of running into the timeout", async () => {
  const outcome = await withClient({ allowPrivate: true, timeoutMs: 3000 }, (client) => send(client, "/endless"));
  assert.deepEqual(
    { ok: outcome.ok, status: outcome.status, error: outcome.error },
    { ok: true, status: 200, error: undefined },
  );
  assert.equal(outcome.excerpt, "y".repeat(1024));
  assert.ok(outcome.durationMs < 2000, `${outcome.durationMs}`);
});

test("the excerpt never ends in half a UTF-8 character", async () => {
  const outcome = await withClient({ allowPrivate: true }, (client) => send(client, "/multibyte"));
  // 1 + 2 × 511 bytes, then the first byte of the next "é" at the 1024-byte cut.
  assert.equal(outcome.excerpt, `a${"é".repeat(511)}`);
});

test("consecutive deliveries to one origin reuse a kept-alive connection", async () => {
  const before = connections;
  await withClient({ allowPrivate: true }, async (client) => {
    for (let i = 0; i < 5; i++) assert.equal((await send(client, "/ok")).ok, true);
  });
  assert.equal(connections - before, 1);
});

test("a pooled socket closed by the server is retried once on a fresh connection", async () => {
  const before = hits("/drop-reused");
  const outcome = await withClient({ allowPrivate: true }, async (client) => {
    await send(client, "/ok");
    return send(client, "/drop-reused");
  });
  assert.deepEqual({ ok: outcome.ok, excerpt: outcome.excerpt }, { ok: true, excerpt: "fresh socket" });
  assert.equal(hits("/drop-reused") - before, 2);
});

test("a server that keeps dropping the connection is not retried more than once", async () => {
  const before = hits("/drop-always");
  const outcome = await withClient({ allowPrivate: true }, async (client) => {
    await send(client, "/ok");
    return send(client, "/drop-always");
  });
  assert.equal(outcome.ok, false);
  assert.match(outcome.error ?? "", /socket hang up|ECONNRESET/);
  assert.equal(hits("/drop-always") - before, 2);
});

test("send never rejects, whatever it is given", async () => {
  await withClient({ allowPrivate: true }, async (client) => {
    assert.equal((await client.send({ url: "not a url", headers: {}, body: "" })).error, "invalid URL");
    assert.match(
      (await client.send({ url: "ftp://127.0.0.1/", headers: {}, body: "" })).error ?? "",
      /unsupported URL scheme/,
    );
    const badHeader = await client.send({ url: `${base}/ok`, headers: { "x-evil": "a\r\nb: c" }, body: "" });
    assert.equal(badHeader.ok, false);
    assert.match(badHeader.error ?? "", /header/i);
  });
});

test("a closed client refuses to send", async () => {
  const client = createWebhookClient({ allowPrivate: true, now: () => NOW });
  client.close();
  const outcome = await send(client, "/ok");
  assert.deepEqual({ ok: outcome.ok, error: outcome.error }, { ok: false, error: "webhook client is closed" });
});

test("without allowPrivate an http URL is refused before connecting, naming the setting that allows it", async () => {
  const before = connections;
  const outcome = await withClient({ allowPrivate: false }, (client) => send(client, "/ok"));
  assert.equal(outcome.ok, false);
  assert.equal(
    outcome.error,
    "refused http: URL (https is required unless the relay runs with TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true)",
  );
  assert.equal(connections, before);
});

test("without allowPrivate literal loopback addresses are refused before connecting", async () => {
  const before = connections;
  await withClient({ allowPrivate: false }, async (client) => {
    assert.equal(
      (await send(client, "", `https://127.0.0.1:${port}/ok`)).error,
      "blocked address 127.0.0.1 (private/loopback/link-local; allowed only when the relay runs with TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true)",
    );
    assert.equal(
      (await send(client, "", `https://[::1]:${port}/ok`)).error,
      "blocked address ::1 (private/loopback/link-local; allowed only when the relay runs with TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true)",
    );
    assert.match(
      (await send(client, "", `https://[::ffff:127.0.0.1]:${port}/ok`)).error ?? "",
      /^blocked address ::ffff:7f00:1 /,
    );
    assert.match(
      (await send(client, "", `https://2130706433:${port}/ok`)).error ?? "",
      /^blocked address 127\.0\.0\.1 /,
    );
  });
  assert.equal(connections, before);
});

test("without allowPrivate a host name resolving to loopback is refused at lookup time", async () => {
  const before = connections;
  const outcome = await withClient({ allowPrivate: false }, (client) =>
    send(client, "", `https://localhost:${port}/ok`),
  );
  assert.equal(outcome.ok, false);
  assert.equal(outcome.status, undefined);
  assert.match(
    outcome.error ?? "",
    /^blocked address .*(127\.0\.0\.1|::1).* \(private\/loopback\/link-local; allowed only when the relay runs with TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true\)$/,
  );
  assert.equal(connections, before);
});

function fakeResolver(addresses: string[]): ResolveAll {
  return (_hostname, _options, callback) =>
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })),
    );
}

function runLookup(
  lookup: ReturnType<typeof createGuardedLookup>,
  all: boolean,
): Promise<{ error: Error | null; address: unknown; family: unknown }> {
  return new Promise((resolve) =>
    lookup("agent.example.com", { all }, (error, address, family) => resolve({ error, address, family })),
  );
}

test("the guarded lookup hands out only allowed addresses", async () => {
  const lookup = createGuardedLookup(
    false,
    fakeResolver(["127.0.0.1", "93.184.216.34", "169.254.169.254", "2606:4700::1", "::1"]),
  );
  assert.deepEqual((await runLookup(lookup, true)).address, [
    { address: "93.184.216.34", family: 4 },
    { address: "2606:4700::1", family: 6 },
  ]);
  const single = await runLookup(lookup, false);
  assert.deepEqual({ address: single.address, family: single.family }, { address: "93.184.216.34", family: 4 });
});

test("the guarded lookup fails with every blocked address when none is allowed", async () => {
  const result = await runLookup(createGuardedLookup(false, fakeResolver(["10.0.0.5", "::ffff:192.168.0.1"])), true);
  assert.equal(
    result.error?.message,
    "blocked address 10.0.0.5, ::ffff:192.168.0.1 (private/loopback/link-local; allowed only when the relay runs with TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true)",
  );
});

test("the guarded lookup passes everything through when private targets are allowed", async () => {
  const result = await runLookup(createGuardedLookup(true, fakeResolver(["127.0.0.1", "10.0.0.5"])), true);
  assert.deepEqual(result.address, [
    { address: "127.0.0.1", family: 4 },
    { address: "10.0.0.5", family: 4 },
  ]);
});

test("the guarded lookup passes resolver errors through", async () => {
  const failing: ResolveAll = (_hostname, _options, callback) =>
    callback(Object.assign(new Error("getaddrinfo ENOTFOUND nope.invalid"), { code: "ENOTFOUND" }), []);
  const result = await runLookup(createGuardedLookup(false, failing), true);
  assert.equal(result.error?.message, "getaddrinfo ENOTFOUND nope.invalid");
});

function hasOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

test(
  "https: certificates are verified, and a trusted certificate gives a normal delivery",
  { skip: hasOpenssl() ? false : "openssl not found" },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "webhook-tls-"));
    const tlsServer = createHttpsServer();
    try {
      const [keyPath, certPath] = [join(dir, "key.pem"), join(dir, "cert.pem")];
      execFileSync(
        "openssl",
        [
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:prime256v1",
          "-nodes",
          "-keyout",
          keyPath,
          "-out",
          certPath,
          "-days",
          "1",
          "-subj",
          "/CN=localhost",
          "-addext",
          "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        { stdio: "ignore" },
      );
      tlsServer.setSecureContext({ key: readFileSync(keyPath), cert: readFileSync(certPath) });
      tlsServer.on("request", (req: IncomingMessage, res: ServerResponse) => {
        req.resume();
        req.on("end", () => res.writeHead(200).end(`tls ok ${String(req.headers["webhook-id"])}`));
      });
      await new Promise<void>((resolve) => tlsServer.listen(0, "127.0.0.1", resolve));
      const url = `https://localhost:${(tlsServer.address() as AddressInfo).port}/hook`;

      // This process does not trust the self-signed certificate, so the delivery must fail.
      const untrusted = await withClient({ allowPrivate: true }, (client) => send(client, "", url));
      assert.equal(untrusted.ok, false);
      assert.match(untrusted.error ?? "", /self[- ]signed/);

      // NODE_EXTRA_CA_CERTS is read only at start-up, so the trusted case runs in a child process.
      const modulePath = pathToFileURL(fileURLToPath(new URL("./webhookClient.ts", import.meta.url))).href;
      const script = join(dir, "child.mjs");
      writeFileSync(
        script,
        `import { createWebhookClient } from ${JSON.stringify(modulePath)};
const client = createWebhookClient({ allowPrivate: true, now: () => 0 });
const outcome = await client.send({ url: ${JSON.stringify(url)}, headers: { "webhook-id": "msg_tls" }, body: "{}" });
client.close();
process.stdout.write(JSON.stringify(outcome));`,
      );
      const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], {
        env: { ...process.env, NODE_EXTRA_CA_CERTS: certPath },
        timeout: 20_000,
      });
      const trusted = JSON.parse(stdout) as { ok: boolean; status: number; excerpt: string };
      assert.deepEqual(
        { ok: trusted.ok, status: trusted.status, excerpt: trusted.excerpt },
        { ok: true, status: 200, excerpt: "tls ok msg_tls" },
      );
    } finally {
      tlsServer.closeAllConnections();
      tlsServer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
