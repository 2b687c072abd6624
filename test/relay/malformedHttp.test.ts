import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { systemClock } from "../../relay/src/clock";
import { loadConfig } from "../../relay/src/config";
import { silentLogger } from "../../relay/src/logger";
import { type RunningRelay, type StartOptions, openStore, startRelay } from "../../relay/src/main";
import { initWorkspace } from "../../relay/src/workspace/init";
import { envelopeProblems, namesAField } from "../fuzz/checks";
import { completionBody } from "../support/relayHarness";
import { type UpstreamStandIn, startUpstreamStandIn } from "../support/upstreamStandIn";

/**
 * Requests Node's HTTP parser refuses before the app sees them, and the ones Node answers by itself (a missing
 * Host, an unknown expectation, CONNECT), written byte for byte over TCP against a real relay: each is answered with
 * the API's error envelope (the same checks as the fuzz suite's), the connection is closed by the relay, and the
 * relay goes on serving.
 */

interface Answer {
  status: number;
  head: string;
  headers: Map<string, string>;
  body: Buffer;
}

interface Exchange {
  /** Every response received, in order. */
  answers: Answer[];
  /** Bytes after the last complete response. */
  rest: Buffer;
  /** Whether the relay closed the connection (otherwise the exchange ended at its time limit). */
  closed: boolean;
  ms: number;
}

/** Splits what a server sent into responses (Content-Length or chunked bodies); stops at the first incomplete one. */
function parseAnswers(data: Buffer): { answers: Answer[]; rest: Buffer } {
  const answers: Answer[] = [];
  let at = 0;
  for (;;) {
    const end = data.indexOf("\r\n\r\n", at);
    if (end === -1) break;
    const head = data.subarray(at, end).toString("latin1");
    const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1]);
    const headers = new Map<string, string>();
    for (const line of head.split("\r\n").slice(1)) {
      const colon = line.indexOf(":");
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    let bodyStart = end + 4;
    if (status === 100) {
      answers.push({ status, head, headers, body: Buffer.alloc(0) });
      at = bodyStart;
      continue;
    }
    let body: Buffer;
    if (headers.get("transfer-encoding") === "chunked") {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = data.indexOf("\r\n", bodyStart);
        if (lineEnd === -1) return { answers, rest: data.subarray(at) };
        const size = Number.parseInt(data.subarray(bodyStart, lineEnd).toString("latin1"), 16);
        if (lineEnd + 2 + size + 2 > data.length) return { answers, rest: data.subarray(at) };
        parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
        bodyStart = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers.get("content-length") ?? 0);
      if (bodyStart + length > data.length) break;
      body = data.subarray(bodyStart, bodyStart + length);
      bodyStart += length;
    }
    answers.push({ status, head, headers, body });
    at = bodyStart;
  }
  return { answers, rest: data.subarray(at) };
}

/**
 * Writes `bytes` (each a separate write, `pauseMs` apart), optionally closes the client's side, and reads until the
 * relay closes the connection or `waitMs` pass.
 */
function exchange(
  url: string,
  writes: (string | Buffer)[],
  options: { halfClose?: boolean; waitMs?: number; pauseMs?: number } = {},
): Promise<Exchange> {
  const { hostname, port } = new URL(url);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...parseAnswers(Buffer.concat(chunks)), closed, ms: performance.now() - started });
    };
    const timer = setTimeout(() => finish(false), options.waitMs ?? 5_000);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNRESET" ? finish(true) : reject(error)));
    socket.on("close", () => finish(true));
    void (async () => {
      for (const [index, bytes] of writes.entries()) {
        if (index > 0 && options.pauseMs) await new Promise((wake) => setTimeout(wake, options.pauseMs));
        if (socket.destroyed) return;
        socket.write(typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes);
      }
      if (options.halfClose) socket.end();
    })();
  });
}

/** The answer is exactly the envelope with `code`, its message starts with `field`, and it passes the fuzz suite's checks. */
function assertEnvelope(answer: Answer | undefined, status: number, code: string, field: string): void {
  assert.ok(answer, "no complete response");
  assert.equal(answer.status, status, answer.head);
  const {
    problems,
    code: got,
    message,
  } = envelopeProblems(answer.status, answer.headers.get("content-type"), answer.body);
  assert.deepEqual(problems, [], answer.body.toString("utf8"));
  assert.equal(got, code);
  assert.ok(
    message?.startsWith(field),
    `message ${JSON.stringify(message)} does not start with ${JSON.stringify(field)}`,
  );
  if (code === "VALIDATION_ERROR")
    assert.ok(namesAField(message ?? "", []), `the fuzz suite would not see a field in ${JSON.stringify(message)}`);
  assert.match(
    answer.headers.get("date") ?? "",
    /^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/,
    "a Date header (RFC 9110 §6.6.1)",
  );
}

async function relayOn(
  options: Pick<StartOptions, "httpTimeouts"> & { env?: Record<string, string> } = {},
): Promise<{ relay: RunningRelay; apiKey: string; close(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-malformed-"));
  const config = loadConfig({
    TAB_RELAY_DATA: dataDir,
    TAB_RELAY_PORT: "0",
    TAB_RELAY_LOG_LEVEL: "silent",
    TAB_RELAY_CACHE_ENTRIES: "0",
    ...options.env,
  });
  const store = await openStore(config);
  const clock = systemClock;
  const init = await initWorkspace(store, clock, { slug: "acme", ownerName: "Olive Owner" });
  const relay = await startRelay(config, {
    store,
    clock,
    logger: silentLogger,
    consoleDir: null,
    ...(options.httpTimeouts ? { httpTimeouts: options.httpTimeouts } : {}),
  });
  return {
    relay,
    apiKey: init.apiKey,
    async close() {
      await relay.close(0);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

describe("malformed HTTP against a relay", () => {
  let relay: Awaited<ReturnType<typeof relayOn>>;
  let url: string;
  before(async () => {
    relay = await relayOn();
    url = relay.relay.url;
  });
  after(() => relay.close());

  async function assertServing(after_: string): Promise<void> {
    const health = await fetch(`${url}/healthz`);
    assert.equal(health.status, 200, `/healthz after ${after_}`);
    const me = await fetch(`${url}/api/v1/me`, { headers: { Authorization: `Bearer ${relay.apiKey}` } });
    assert.equal(me.status, 200, `GET /api/v1/me after ${after_}`);
  }

  const host = "Host: relay.test\r\n";
  const post = (path: string, headers: string, body: string) => () =>
    `POST ${path} HTTP/1.1\r\n${host}Authorization: Bearer ${relay.apiKey}\r\nContent-Type: application/json\r\n${headers}\r\n${body}`;
  const cases: { name: string; request: () => string | Buffer; status: number; code: string; field: string }[] = [
    {
      name: "a control character in a header value",
      request: () => `GET /healthz HTTP/1.1\r\n${host}X-Note: a\u0001b\r\n\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "headers: ",
    },
    {
      name: "DEL in a header value",
      request: () => `GET /healthz HTTP/1.1\r\n${host}X-Note: a\u007fb\r\n\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "headers: ",
    },
    {
      name: "a space in a header name",
      request: () => `GET /healthz HTTP/1.1\r\n${host}X Bad: 1\r\n\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "headers: ",
    },
    {
      name: "a header line without a colon",
      request: () => `GET /healthz HTTP/1.1\r\n${host}NoColon\r\n\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "headers: ",
    },
    {
      name: "a non-ASCII header name",
      request: () => Buffer.from(`GET /healthz HTTP/1.1\r\n${host}Ä: 1\r\n\r\n`, "utf8"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "headers: ",
    },
    {
      name: "a folded header line (obs-fold)",
      request: () => `GET /healthz HTTP/1.1\r\n${host}X-Note: a\r\n b\r\n\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "headers: ",
    },
    {
      name: "a raw space in the path",
      request: () => `GET /api/v1/a b HTTP/1.1\r\n${host}\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "request: ",
    },
    {
      name: "raw non-ASCII in the path",
      request: () => Buffer.from(`GET /api/v1/ünï HTTP/1.1\r\n${host}\r\n`, "utf8"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "path: ",
    },
    {
      name: "a NUL in the path",
      request: () => `GET /api/v1/a\u0000 HTTP/1.1\r\n${host}\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "path: ",
    },
    {
      name: "an unknown method",
      request: () => `FROB /healthz HTTP/1.1\r\n${host}\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "method: ",
    },
    {
      name: "a lower-case method",
      request: () => `get /healthz HTTP/1.1\r\n${host}\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "method: ",
    },
    {
      name: "a TLS handshake on the plain-HTTP port",
      request: () => Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03]),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "method: ",
    },
    {
      name: "HTTP/9.9",
      request: () => `GET /healthz HTTP/9.9\r\n${host}\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "request: ",
    },
    {
      name: "a lower-case http/1.1",
      request: () => `GET /healthz http/1.1\r\n${host}\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "request: ",
    },
    {
      name: "words after the version",
      request: () => `GET /healthz HTTP/1.1 extra\r\n${host}\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "request: ",
    },
    {
      name: "bare LF line endings",
      request: () => `GET /healthz HTTP/1.1\n${host.trim()}\n\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "request: ",
    },
    {
      name: "the HTTP/2 connection preface",
      request: () => "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      status: 400,
      code: "VALIDATION_ERROR",
      field: "request: ",
    },
    {
      name: "Content-Length with Transfer-Encoding",
      request: post("/api/v1/channels", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "Transfer-Encoding: ",
    },
    {
      name: "two Content-Lengths",
      request: post("/api/v1/channels", "Content-Length: 2\r\nContent-Length: 3\r\n", "{}"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "Content-Length: ",
    },
    {
      name: "two equal Content-Lengths",
      request: post("/api/v1/channels", "Content-Length: 2\r\nContent-Length: 2\r\n", "{}"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "Content-Length: ",
    },
    {
      name: "a Content-Length that is not a number",
      request: post("/api/v1/channels", "Content-Length: abc\r\n", "{}"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "Content-Length: ",
    },
    {
      name: "a negative Content-Length",
      request: post("/api/v1/channels", "Content-Length: -1\r\n", "{}"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "Content-Length: ",
    },
    {
      name: "a Content-Length past 2^64",
      request: post("/api/v1/channels", "Content-Length: 99999999999999999999\r\n", "{}"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "Content-Length: ",
    },
    {
      name: "a Transfer-Encoding that does not end in chunked",
      request: post("/api/v1/channels", "Transfer-Encoding: chunked, identity\r\n", "{}"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "Transfer-Encoding: ",
    },
    {
      name: "an unknown Transfer-Encoding",
      request: post("/api/v1/channels", "Transfer-Encoding: foo\r\n", "{}"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "Transfer-Encoding: ",
    },
    {
      name: "a chunk size that is not hexadecimal",
      request: post("/api/v1/channels", "Transfer-Encoding: chunked\r\n", "zz\r\n{}\r\n0\r\n\r\n"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "body: ",
    },
    {
      name: "a chunk shorter than its size",
      request: post("/api/v1/channels", "Transfer-Encoding: chunked\r\n", "5\r\n{}\r\n0\r\n\r\n"),
      status: 400,
      code: "VALIDATION_ERROR",
      field: "body: ",
    },
    {
      name: "headers over 16 KiB",
      request: () => `GET /healthz HTTP/1.1\r\n${host}X-Big: ${"z".repeat(20_000)}\r\n\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "headers: ",
    },
    {
      name: "a URL over 16 KiB",
      request: () => `GET /api/v1/agents/${"a".repeat(17_000)} HTTP/1.1\r\n${host}\r\n`,
      status: 400,
      code: "VALIDATION_ERROR",
      field: "headers: ",
    },
    {
      name: "CONNECT",
      request: () => `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`,
      status: 404,
      code: "NOT_FOUND",
      field: "No route for CONNECT example.com:443",
    },
  ];
  for (const { name, request, status, code, field } of cases) {
    test(`${name}: ${status} ${code} in the envelope, then the relay closes the connection`, async () => {
      const result = await exchange(url, [request()]);
      assert.equal(
        result.answers.length,
        1,
        `answers: ${result.answers.map((a) => a.head.split("\r\n")[0]).join(" | ")}; rest ${JSON.stringify(result.rest.toString("latin1").slice(0, 200))}`,
      );
      assertEnvelope(result.answers[0], status, code, field);
      assert.equal(result.answers[0]?.headers.get("connection"), "close");
      assert.ok(result.closed, "the relay kept the connection open");
      await assertServing(name);
    });
  }

  test("a client that goes on sending after a refusal still reads the answer (the relay reads on before closing)", async () => {
    const result = await exchange(
      url,
      [`GET /healthz HTTP/1.1\r\n${host}X-Big: ${"z".repeat(20_000)}`, "z".repeat(200_000), "\r\n\r\n"],
      { pauseMs: 20 },
    );
    assertEnvelope(result.answers[0], 400, "VALIDATION_ERROR", "headers: ");
    assert.ok(result.closed);
  });

  test("a body cut short by the client closing its side: 400 body, not received completely", async () => {
    const body = JSON.stringify({ name: "half" });
    const result = await exchange(url, [post("/api/v1/channels", `Content-Length: ${body.length + 50}\r\n`, body)()], {
      halfClose: true,
    });
    assertEnvelope(result.answers[0], 400, "VALIDATION_ERROR", "body: not received completely");
    await assertServing("a half-closed request");
  });

  test("headers cut short by the client closing its side: 400 request", async () => {
    const result = await exchange(url, [`GET /healthz HTTP/1.1\r\n${host}X-Half: yes`], { halfClose: true });
    assertEnvelope(result.answers[0], 400, "VALIDATION_ERROR", "request: ");
  });

  test("an HTTP/1.1 request without Host: 400 naming Host, from the app (with a request id)", async () => {
    const result = await exchange(url, ["GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n"]);
    assertEnvelope(result.answers[0], 400, "VALIDATION_ERROR", "Host: ");
    assert.match(result.answers[0]?.headers.get("x-request-id") ?? "", /^req_/);
    await assertServing("a request without Host");
  });

  test("a request with two Host headers: 400 naming Host, on HTTP and on a WebSocket handshake", async () => {
    const result = await exchange(url, [
      "GET /healthz HTTP/1.1\r\nHost: relay.test\r\nHost: other.test\r\nConnection: close\r\n\r\n",
    ]);
    assertEnvelope(result.answers[0], 400, "VALIDATION_ERROR", "Host: sent more than once");
    const handshake = await exchange(url, [
      "GET /api/v1/live HTTP/1.1\r\nHost: relay.test\r\nHost: other.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    ]);
    assertEnvelope(handshake.answers[0], 400, "VALIDATION_ERROR", "Host: sent more than once");
    await assertServing("a request with two Host headers");
  });

  test("a JSON body nested past 64 or holding over 10,000 values is refused unparsed (400 naming body), signed in or not", async () => {
    // Within the 512 KiB body limit, such JSON took JSON.parse a fifth of a second each, before the sign-in route
    // knew who was asking. What is refused is the shape; the same bytes as one string are an ordinary bad body.
    const bodies = {
      nested: `{"api_key":${"[".repeat(200_000)}${"]".repeat(200_000)}}`,
      wide: `[${Array.from({ length: 20_000 }, () => "0").join(",")}]`,
    };
    for (const [shape, body] of Object.entries(bodies)) {
      for (const [path, headers] of [
        ["/api/v1/sessions", {}],
        ["/api/v1/tab/chat/completions", { authorization: `Bearer ${relay.apiKey}` }],
      ] as const) {
        const response = await fetch(`${url}${path}`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body,
        });
        assert.equal(response.status, 400, `${shape} body to ${path}`);
        const { error } = (await response.json()) as { error: { code: string; message: string } };
        assert.equal(error.code, "VALIDATION_ERROR");
        assert.match(error.message, /^body: JSON nested more than 64 deep or holding more than 10000 values/, path);
      }
    }
    await assertServing("nested and wide JSON bodies");
  });

  test("an HTTP/1.0 request without Host is served (Host is HTTP/1.1's)", async () => {
    const result = await exchange(url, ["GET /healthz HTTP/1.0\r\n\r\n"]);
    assert.equal(result.answers[0]?.status, 200, result.answers[0]?.head);
  });

  test("an unknown expectation is ignored (RFC 9110 §10.1.1) and the request served; 100-continue still gets its 100", async () => {
    for (const expect of ["garbage", "200-ok", "x=1"]) {
      const result = await exchange(url, [
        `GET /api/v1/me HTTP/1.1\r\n${host}Authorization: Bearer ${relay.apiKey}\r\nExpect: ${expect}\r\nConnection: close\r\n\r\n`,
      ]);
      assert.equal(result.answers[0]?.status, 200, `Expect: ${expect}: ${result.answers[0]?.head ?? "no answer"}`);
    }
    const body = JSON.stringify({ name: "expected" });
    const result = await exchange(
      url,
      [
        `POST /api/v1/channels HTTP/1.1\r\n${host}Authorization: Bearer ${relay.apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
        body,
      ],
      { pauseMs: 100 },
    );
    assert.deepEqual(
      result.answers.map((a) => a.status),
      [100, 201],
      result.answers.map((a) => a.head).join("\n"),
    );
  });

  test("a malformed request pipelined after a good one is answered after the good one's answer, in order", async () => {
    const result = await exchange(url, [
      `GET /healthz HTTP/1.1\r\n${host}\r\nGET /healthz HTTP/1.1\r\n${host}X Bad: 1\r\n\r\n`,
    ]);
    assert.deepEqual(
      result.answers.map((a) => a.status),
      [200, 400],
    );
    assertEnvelope(result.answers[1], 400, "VALIDATION_ERROR", "headers: ");
    assert.ok(result.closed);
  });

  test("garbage pipelined behind a completion stream arrives after the whole stream, which is not cut", async () => {
    const body = JSON.stringify(completionBody({}, { stream: true }));
    const result = await exchange(url, [
      `${post("/api/v1/tab/chat/completions", `Content-Length: ${body.length}\r\n`, body)()}\u0016\u0003\u0001garbage`,
    ]);
    assert.deepEqual(
      result.answers.map((a) => a.status),
      [200, 400],
      result.answers.map((a) => a.head).join("\n"),
    );
    assert.match(result.answers[0]?.body.toString("utf8") ?? "", /data: \[DONE\]\s*$/);
    assertEnvelope(result.answers[1], 400, "VALIDATION_ERROR", "method: ");
  });
});

describe("the relay's request timeouts", () => {
  const timeouts = { headersTimeoutMs: 600, requestTimeoutMs: 1_200, checkIntervalMs: 100 };
  let relay: Awaited<ReturnType<typeof relayOn>>;
  let upstream: UpstreamStandIn;
  let url: string;
  before(async () => {
    // A model that takes 2.4 s to stream its answer, twice the time a request may take to arrive.
    upstream = await startUpstreamStandIn({
      behaviour: {
        kind: "reply",
        text: ["one ", "two ", "three ", "four ", "five ", "six"],
        chunkDelayMs: 400,
        firstChunkDelayMs: 400,
      },
    });
    relay = await relayOn({
      httpTimeouts: timeouts,
      env: {
        TAB_RELAY_PROVIDER: "openai",
        TAB_RELAY_UPSTREAM_URL: upstream.url,
        TAB_RELAY_UPSTREAM_MODEL: "stand-in",
        TAB_RELAY_UPSTREAM_TIMEOUT_MS: "10000",
      },
    });
    url = relay.relay.url;
  });
  after(async () => {
    await relay.close();
    await upstream.close();
  });

  test("headers that stop arriving are answered 400 naming headers once the headers timeout passes", async () => {
    const result = await exchange(url, [`GET /healthz HTTP/1.1\r\n${"Host: relay.test\r\n"}X-Slow: `], {
      waitMs: 5_000,
    });
    assertEnvelope(result.answers[0], 400, "VALIDATION_ERROR", "headers: not received completely within 0.6 s");
    assert.ok(result.closed);
    assert.ok(result.ms >= 550 && result.ms < 2_000, `answered after ${Math.round(result.ms)} ms`);
  });

  test("a body shorter than its Content-Length is answered 400 naming body once the request timeout passes", async () => {
    const result = await exchange(
      url,
      [
        `POST /api/v1/channels HTTP/1.1\r\nHost: relay.test\r\nAuthorization: Bearer ${relay.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`,
      ],
      { waitMs: 5_000 },
    );
    assertEnvelope(result.answers[0], 400, "VALIDATION_ERROR", "body: not received completely within 1.2 s");
    assert.ok(result.closed);
    assert.ok(result.ms >= 1_100 && result.ms < 3_000, `answered after ${Math.round(result.ms)} ms`);
  });

  test("a connection that never sends a byte is closed without an answer", async () => {
    const result = await exchange(url, [], { waitMs: 5_000 });
    assert.ok(result.closed, "still open after 5 s");
    assert.deepEqual(
      [result.answers.length, result.rest.length],
      [0, 0],
      "nothing is written to a connection that asked nothing",
    );
  });

  test("a completion streaming longer than the request timeout is not cut: the timeout ends when the request is in", async () => {
    const started = performance.now();
    const response = await fetch(`${url}/api/v1/tab/chat/completions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${relay.apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify(completionBody({}, { stream: true })),
    });
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.ok(
      performance.now() - started > timeouts.requestTimeoutMs + 500,
      "the stream outlasted the request timeout",
    );
    assert.match(text, /data: \[DONE\]\s*$/);
  });

  test("a kept-alive connection idle between requests for longer than both timeouts serves the next request", async () => {
    const request = `GET /healthz HTTP/1.1\r\nHost: relay.test\r\n\r\n`;
    const result = await exchange(url, [request, request], { pauseMs: 2_000, waitMs: 3_000 });
    assert.deepEqual(
      result.answers.map((a) => a.status),
      [200, 200],
    );
  });
});
