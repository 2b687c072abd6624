import assert from "node:assert/strict";
import { type ChildProcess, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { type RelayProcess, spawnRelay, until } from "../support/relayProcess";

/**
 * Hostile WebSocket clients against a relay running as its own process: a signed-in guest on the console's live
 * socket and an agent on Socket Mode send every kind of bad frame and bad handshake over raw TCP, and after each the
 * process must still be running and answering. The CLI runs from the TypeScript sources, so this is the code as it
 * is now, not whatever was last built.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(ROOT, "relay/src/cli.ts");
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));
const relayEnv = {
  ...baseEnv,
  // Warnings are what a bad frame leaves in the log; the test reads them.
  TAB_RELAY_LOG_LEVEL: "warn",
  TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000,session_reads=100000,session_writes=100000,agent_reads=100000",
};
/** Long enough for any answer on a loaded machine; a relay that hangs instead fails here. */
const ANSWER_MS = 5_000;

const children = new Set<ChildProcess>();
const dataDirs: string[] = [];

/** One WebSocket frame as a client writes it: masked unless told otherwise. */
function frame(options: { opcode: number; payload?: Buffer; fin?: boolean; rsv?: number; mask?: boolean }): Buffer {
  const payload = options.payload ?? Buffer.alloc(0);
  const masked = options.mask ?? true;
  const first = ((options.fin ?? true) ? 0x80 : 0) | ((options.rsv ?? 0) << 4) | options.opcode;
  let length: Buffer;
  if (payload.length < 126) length = Buffer.from([payload.length]);
  else if (payload.length < 65_536) {
    length = Buffer.alloc(3);
    length[0] = 126;
    length.writeUInt16BE(payload.length, 1);
  } else {
    length = Buffer.alloc(9);
    length[0] = 127;
    length.writeBigUInt64BE(BigInt(payload.length), 1);
  }
  if (masked) length[0] = (length[0] as number) | 0x80;
  if (!masked) return Buffer.concat([Buffer.from([first]), length, payload]);
  const key = randomBytes(4);
  const body = Buffer.from(payload.map((byte, i) => byte ^ (key[i % 4] as number)));
  return Buffer.concat([Buffer.from([first]), length, key, body]);
}

const text = (payload: Buffer | string, extra: { fin?: boolean; rsv?: number; mask?: boolean } = {}) =>
  frame({ opcode: 0x1, payload: Buffer.isBuffer(payload) ? payload : Buffer.from(payload), ...extra });

/** The frames a server sent (unmasked), as far as they are complete. */
function serverFrames(data: Buffer): { opcode: number; payload: Buffer }[] {
  const frames: { opcode: number; payload: Buffer }[] = [];
  let at = 0;
  while (at + 2 <= data.length) {
    let length = (data[at + 1] as number) & 0x7f;
    let start = at + 2;
    if (length === 126) {
      if (start + 2 > data.length) break;
      length = data.readUInt16BE(start);
      start += 2;
    } else if (length === 127) {
      if (start + 8 > data.length) break;
      length = Number(data.readBigUInt64BE(start));
      start += 8;
    }
    if (start + length > data.length) break;
    frames.push({ opcode: (data[at] as number) & 0x0f, payload: data.subarray(start, start + length) });
    at = start + length;
  }
  return frames;
}

/** A TCP connection that speaks HTTP/1.1 by hand: the handshake is written as given, then raw bytes. */
class Raw {
  private data = Buffer.alloc(0);
  private headEnd = -1;
  readonly closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.data = Buffer.concat([this.data, chunk]);
      if (this.headEnd === -1) this.headEnd = this.data.indexOf("\r\n\r\n");
    });
    // The relay may cut the connection while frames are still being written; that is the expected ending.
    socket.on("error", () => undefined);
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
  }

  /** Connects and writes `request`; resolves once the response's head has arrived. */
  static async open(url: string, request: string): Promise<Raw> {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    const raw = new Raw(socket);
    socket.write(request);
    await until("the answer's head", ANSWER_MS, () => (raw.headEnd !== -1 ? true : undefined), 5);
    return raw;
  }

  get status(): number {
    return Number(/^HTTP\/1\.1 (\d{3})/.exec(this.data.subarray(0, this.headEnd).toString("latin1"))?.[1]);
  }

  header(name: string): string | undefined {
    const head = this.data.subarray(0, this.headEnd).toString("latin1");
    return new RegExp(`^${name}: (.*)$`, "im").exec(head)?.[1]?.trim();
  }

  /** What came after the head: the body of a refusal, or the server's frames after a 101. */
  get rest(): Buffer {
    return this.data.subarray(this.headEnd + 4);
  }

  write(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Resolves once the relay closed the connection; fails if it keeps it open. */
  async closedByRelay(what: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`the relay kept the connection open after ${what}`)), ANSWER_MS);
    });
    try {
      await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}

interface Endpoint {
  name: string;
  path: string;
  /** The frame size this endpoint accepts, and one byte more it does not. */
  limit: number;
  credentials(): string[];
}

/** A handshake request; `change` replaces (a string) or drops (null) a header by its lower-case name. */
function handshake(
  url: string,
  endpoint: Endpoint,
  change: { method?: string; path?: string; headers?: Record<string, string | null> } = {},
): string {
  const headers = new Map<string, string>([
    ["host", new URL(url).host],
    ["upgrade", "websocket"],
    ["connection", "Upgrade"],
    ["sec-websocket-key", randomBytes(16).toString("base64")],
    ["sec-websocket-version", "13"],
  ]);
  for (const line of endpoint.credentials()) {
    const colon = line.indexOf(":");
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  for (const [name, value] of Object.entries(change.headers ?? {})) {
    if (value === null) headers.delete(name);
    else headers.set(name, value);
  }
  const lines = [...headers].map(([name, value]) => `${name}: ${value}`);
  return `${change.method ?? "GET"} ${change.path ?? endpoint.path} HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n`;
}

describe("hostile WebSocket clients against a relay process", () => {
  let relay: RelayProcess;
  let ownerKey: string;
  let guest: { id: string; key: string; cookie: string };
  let agent: { id: string; token: string };
  const endpoints: Endpoint[] = [
    {
      name: "the console's live socket",
      path: "/api/v1/live",
      limit: 4 * 1024,
      credentials: () => [`Cookie: ${guest.cookie}`, `Origin: ${relay.url}`],
    },
    {
      name: "Socket Mode",
      path: "/api/v1/agent-api/socket",
      limit: 64 * 1024,
      credentials: () => [`Authorization: Bearer ${agent.token}`],
    },
  ];

  async function call(path: string, init: { key?: string; method?: string; json?: unknown } = {}): Promise<Response> {
    return fetch(relay.url + path, {
      method: init.method ?? "GET",
      headers: {
        ...(init.key ? { Authorization: `Bearer ${init.key}` } : {}),
        ...(init.json === undefined ? {} : { "Content-Type": "application/json" }),
      },
      ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    });
  }

  /** The process runs, answers its health check and serves an ordinary API call. */
  async function assertServing(after_: string): Promise<void> {
    assert.equal(relay.child.exitCode, null, `the relay exited after ${after_}:\n${relay.output()}`);
    assert.equal(relay.child.signalCode, null, `the relay was killed after ${after_}`);
    assert.equal((await call("/healthz")).status, 200, `/healthz after ${after_}`);
    assert.equal((await call("/api/v1/me", { key: ownerKey })).status, 200, `GET /api/v1/me after ${after_}`);
  }

  before(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-hostile-"));
    dataDirs.push(dataDir);
    const init = spawnSync(
      process.execPath,
      ["--import", "tsx", CLI, "init", "--data", dataDir, "--workspace", "acme", "--owner", "Olive", "--json"],
      {
        cwd: ROOT,
        env: relayEnv,
        encoding: "utf8",
        timeout: 20_000,
      },
    );
    assert.equal(init.status, 0, init.stderr);
    ownerKey = (JSON.parse(init.stdout) as { api_key: string }).api_key;
    relay = await spawnRelay({
      name: "relay",
      args: ["--import", "tsx", CLI, "serve", "--data", dataDir, "--port", "0", "--host", "127.0.0.1"],
      cwd: ROOT,
      env: relayEnv,
      tracked: children,
      startTimeoutMs: 20_000,
      outputChars: 400_000,
    });

    const created = await call("/api/v1/users", {
      key: ownerKey,
      method: "POST",
      json: { name: "Gina Guest", role: "guest" },
    });
    assert.equal(created.status, 201, await created.clone().text());
    const person = ((await created.json()) as { data: { user: { id: string }; api_key: { secret: string } } }).data;
    const signedIn = await call("/api/v1/sessions", { method: "POST", json: { api_key: person.api_key.secret } });
    assert.equal(signedIn.status, 201, await signedIn.clone().text());
    guest = {
      id: person.user.id,
      key: person.api_key.secret,
      cookie: (signedIn.headers.get("set-cookie") ?? "").split(";")[0] as string,
    };

    const made = await call("/api/v1/agents", { key: ownerKey, method: "POST", json: { name: "Hostile" } });
    assert.equal(made.status, 201, await made.clone().text());
    const data = ((await made.json()) as { data: { agent: { id: string }; token: string } }).data;
    agent = { id: data.agent.id, token: data.token };
  });

  after(async () => {
    for (const child of children) child.kill("SIGKILL");
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  });

  /** Opens the endpoint with its valid credentials and waits for the 101 and the relay's hello. */
  async function opened(endpoint: Endpoint): Promise<Raw> {
    const raw = await Raw.open(relay.url, handshake(relay.url, endpoint));
    assert.equal(raw.status, 101, `${endpoint.name}: ${raw.rest.toString("utf8")}`);
    await until(
      "the hello frame",
      ANSWER_MS,
      () => (serverFrames(raw.rest).some((f) => f.opcode === 0x1) ? true : undefined),
      5,
    );
    return raw;
  }

  const badFrames: { name: string; bytes: (endpoint: Endpoint) => Buffer; close: number; code: string }[] = [
    {
      name: "a text frame one byte over the endpoint's limit",
      bytes: (e) => text(Buffer.alloc(e.limit + 1, 0x61)),
      close: 1009,
      code: "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH",
    },
    {
      name: "a length field beyond 2^53",
      bytes: () => Buffer.from([0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
      close: 1009,
      code: "WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH",
    },
    {
      name: "invalid UTF-8 in a text frame (c3 28 41)",
      bytes: () => text(Buffer.from([0xc3, 0x28, 0x41])),
      close: 1007,
      code: "WS_ERR_INVALID_UTF8",
    },
    {
      name: "invalid UTF-8 split across fragments",
      bytes: () =>
        Buffer.concat([
          text(Buffer.from([0x61, 0xc3]), { fin: false }),
          frame({ opcode: 0x0, payload: Buffer.from([0x28]) }),
        ]),
      close: 1007,
      code: "WS_ERR_INVALID_UTF8",
    },
    {
      name: "an unmasked client frame",
      bytes: () => text("unmasked", { mask: false }),
      close: 1002,
      code: "WS_ERR_EXPECTED_MASK",
    },
    {
      name: "a reserved data opcode (0x3)",
      bytes: () => frame({ opcode: 0x3, payload: Buffer.from("x") }),
      close: 1002,
      code: "WS_ERR_INVALID_OPCODE",
    },
    {
      name: "a reserved control opcode (0xB)",
      bytes: () => frame({ opcode: 0xb }),
      close: 1002,
      code: "WS_ERR_INVALID_OPCODE",
    },
    {
      name: "RSV1 set without an extension",
      bytes: () => text("deflated?", { rsv: 0b100 }),
      close: 1002,
      code: "WS_ERR_UNEXPECTED_RSV_1",
    },
    {
      name: "RSV2 and RSV3 set",
      bytes: () => text("x", { rsv: 0b011 }),
      close: 1002,
      code: "WS_ERR_UNEXPECTED_RSV_2_3",
    },
    {
      name: "a fragmented ping",
      bytes: () => frame({ opcode: 0x9, fin: false, payload: Buffer.from("p") }),
      close: 1002,
      code: "WS_ERR_EXPECTED_FIN",
    },
    {
      name: "a ping with 126 bytes (control frames hold 125 at most)",
      bytes: () => frame({ opcode: 0x9, payload: Buffer.alloc(126, 0x70) }),
      close: 1002,
      code: "WS_ERR_INVALID_CONTROL_PAYLOAD_LENGTH",
    },
    {
      name: "a close frame with an invalid code (1005 is never sent)",
      bytes: () => frame({ opcode: 0x8, payload: Buffer.from([0x03, 0xed]) }),
      close: 1002,
      code: "WS_ERR_INVALID_CLOSE_CODE",
    },
    {
      name: "a close frame with a one-byte body",
      bytes: () => frame({ opcode: 0x8, payload: Buffer.from([0x03]) }),
      close: 1002,
      code: "WS_ERR_INVALID_CONTROL_PAYLOAD_LENGTH",
    },
    {
      name: "a close frame whose reason is invalid UTF-8",
      bytes: () => frame({ opcode: 0x8, payload: Buffer.from([0x03, 0xe8, 0xc3, 0x28]) }),
      close: 1007,
      code: "WS_ERR_INVALID_UTF8",
    },
    {
      name: "a continuation frame with nothing to continue",
      bytes: () => frame({ opcode: 0x0, payload: Buffer.from("x") }),
      close: 1002,
      code: "WS_ERR_INVALID_OPCODE",
    },
    {
      name: "a new message inside a fragmented one",
      bytes: () => Buffer.concat([text("a", { fin: false }), text("b")]),
      close: 1002,
      code: "WS_ERR_INVALID_OPCODE",
    },
    {
      name: "a message in twenty fragments",
      bytes: () =>
        Buffer.concat([
          text("a", { fin: false }),
          ...Array.from({ length: 18 }, () => frame({ opcode: 0x0, fin: false, payload: Buffer.from("a") })),
          frame({ opcode: 0x0, payload: Buffer.from("a") }),
        ]),
      close: 1008,
      code: "WS_ERR_TOO_MANY_BUFFERED_PARTS",
    },
  ];

  for (const endpoint of endpoints) {
    describe(endpoint.name, () => {
      for (const bad of badFrames) {
        test(`${bad.name}: the relay closes that socket (${bad.close}) and goes on serving`, async () => {
          const raw = await opened(endpoint);
          const before_ = raw.rest.length;
          raw.write(bad.bytes(endpoint));
          await raw.closedByRelay(bad.name);
          const close = serverFrames(raw.rest.subarray(before_)).find((f) => f.opcode === 0x8);
          assert.equal(close?.payload.readUInt16BE(0), bad.close, "the close frame's status");
          await assertServing(bad.name);
        });
      }

      test("a frame of exactly the limit is taken (and ignored), and the socket stays open", async () => {
        const raw = await opened(endpoint);
        raw.write(text(Buffer.alloc(endpoint.limit, 0x61)));
        const before_ = raw.rest.length;
        raw.write(frame({ opcode: 0x9, payload: Buffer.from("still there?") }));
        await until(
          "the pong",
          ANSWER_MS,
          () => (serverFrames(raw.rest.subarray(before_)).some((f) => f.opcode === 0xa) ? true : undefined),
          5,
        );
        raw.destroy();
        await assertServing("a frame at the limit");
      });

      // Every JSON shape, including the ones that are not objects (`null` once crashed the relay on Socket Mode),
      // and acknowledgements with fields of the wrong type or for envelopes nobody sent.
      const messages = [
        "null",
        "1",
        "-0",
        "1e400",
        "true",
        "false",
        '"ack"',
        '""',
        "[]",
        "[null]",
        '[{"type":"ack","envelope_id":"evt_1"}]',
        "{}",
        '{"type":null}',
        '{"type":"ack"}',
        '{"type":"ack","envelope_id":null}',
        '{"type":"ack","envelope_id":42}',
        '{"type":"ack","envelope_id":{"toString":"x"}}',
        '{"type":"ack","envelope_id":"evt_nobody_sent"}',
        '{"type":["ack"],"envelope_id":["evt_1"]}',
        '{"__proto__":{"type":"ack"},"envelope_id":"evt_1"}',
        "not json at all",
        "",
      ];
      test("a message of every JSON shape is ignored, and the socket and the relay go on serving", async () => {
        const raw = await opened(endpoint);
        for (const message of messages) {
          raw.write(text(message));
          // The ping behind the message is answered only once the message before it has been handled.
          const before_ = raw.rest.length;
          raw.write(frame({ opcode: 0x9, payload: Buffer.from("after") }));
          await until(`the pong after ${JSON.stringify(message)}`, ANSWER_MS, () => {
            assert.equal(
              relay.child.exitCode,
              null,
              `the relay exited after the message ${JSON.stringify(message)}:\n${relay.output().slice(-2_000)}`,
            );
            return serverFrames(raw.rest.subarray(before_)).some((f) => f.opcode === 0xa) ? true : undefined;
          });
          assert.ok(
            !serverFrames(raw.rest.subarray(before_)).some((f) => f.opcode === 0x8),
            `the relay closed the socket after ${JSON.stringify(message)}`,
          );
        }
        raw.destroy();
        await assertServing("messages of every JSON shape");
      });

      test("a well-formed Sec-WebSocket-Protocol list is accepted, and no subprotocol is claimed", async () => {
        const raw = await Raw.open(
          relay.url,
          handshake(relay.url, endpoint, { headers: { "sec-websocket-protocol": "chat,  json\t, v2.tab-relay" } }),
        );
        assert.equal(raw.status, 101, raw.rest.toString("utf8"));
        assert.equal(raw.header("sec-websocket-protocol"), undefined);
        raw.destroy();
      });

      test("a client that vanishes mid-frame costs nothing but its socket", async () => {
        const raw = await opened(endpoint);
        raw.write(text(Buffer.alloc(100, 0x61)).subarray(0, 40));
        raw.destroy();
        await assertServing("a connection cut mid-frame");
      });

      const badHandshakes: { name: string; change: Parameters<typeof handshake>[2]; status: number; names?: string }[] =
        [
          {
            name: "no Sec-WebSocket-Key",
            change: { headers: { "sec-websocket-key": null } },
            status: 400,
            names: "Sec-WebSocket-Key: ",
          },
          {
            name: "a Sec-WebSocket-Key that is not 16 bytes of base64",
            change: { headers: { "sec-websocket-key": "not-a-key" } },
            status: 400,
            names: "Sec-WebSocket-Key: ",
          },
          {
            name: "Sec-WebSocket-Version 12",
            change: { headers: { "sec-websocket-version": "12" } },
            status: 400,
            names: "Sec-WebSocket-Version: ",
          },
          {
            name: "no Sec-WebSocket-Version",
            change: { headers: { "sec-websocket-version": null } },
            status: 400,
            names: "Sec-WebSocket-Version: ",
          },
          // ws's own rules for the header (node_modules/ws/lib/subprotocol.js): comma-separated tokens, none twice.
          {
            name: "an empty Sec-WebSocket-Protocol",
            change: { headers: { "sec-websocket-protocol": "" } },
            status: 400,
            names: "Sec-WebSocket-Protocol: ",
          },
          {
            name: "a Sec-WebSocket-Protocol with a space inside a name",
            change: { headers: { "sec-websocket-protocol": "a b" } },
            status: 400,
            names: "Sec-WebSocket-Protocol: ",
          },
          {
            name: "a Sec-WebSocket-Protocol naming one protocol twice",
            change: { headers: { "sec-websocket-protocol": "chat, chat" } },
            status: 400,
            names: "Sec-WebSocket-Protocol: ",
          },
          {
            name: "a Sec-WebSocket-Protocol with an empty entry",
            change: { headers: { "sec-websocket-protocol": "chat,,json" } },
            status: 400,
            names: "Sec-WebSocket-Protocol: ",
          },
          {
            name: "a Sec-WebSocket-Protocol ending in a comma",
            change: { headers: { "sec-websocket-protocol": "chat," } },
            status: 400,
            names: "Sec-WebSocket-Protocol: ",
          },
          {
            name: "a Sec-WebSocket-Protocol with a separator in a name",
            change: { headers: { "sec-websocket-protocol": "chat/1.0" } },
            status: 400,
            names: "Sec-WebSocket-Protocol: ",
          },
          // RFC 9112 §3.2 and RFC 6455 §4.1: an HTTP/1.1 request, a handshake above all, carries Host.
          { name: "no Host", change: { headers: { host: null } }, status: 400, names: "Host: " },
          {
            name: "a POST upgrade",
            change: { method: "POST", headers: { "content-length": "0" } },
            status: 400,
            names: "method: ",
          },
          { name: "Upgrade: h2c", change: { headers: { upgrade: "h2c" } }, status: 400, names: "Upgrade: " },
          // Node's HTTP parser refuses this before there is a request; the relay's clientError handler answers it.
          {
            name: "control characters in the Upgrade header",
            change: { headers: { upgrade: "\u0001\u007f garbage" } },
            status: 400,
            names: "headers: ",
          },
          // Not an upgrade at all to Node: an ordinary GET, which the API answers.
          {
            name: "an Upgrade header without Connection: Upgrade",
            change: { headers: { connection: "keep-alive" } },
            status: 404,
          },
          { name: "an unknown WebSocket path", change: { path: "/api/v1/nothing-here" }, status: 404 },
          { name: "a path with a broken %-escape", change: { path: `${endpoint.path}%ZZ` }, status: 404 },
        ];
      for (const bad of badHandshakes) {
        test(`a handshake with ${bad.name} is answered with ${bad.status} and closed`, async () => {
          const raw = await Raw.open(relay.url, handshake(relay.url, endpoint, bad.change));
          assert.equal(raw.status, bad.status, raw.rest.toString("utf8"));
          if (bad.names !== undefined) {
            const { error } = JSON.parse(raw.rest.toString("utf8")) as { error: { code: string; message: string } };
            assert.deepEqual(
              [error.code, error.message.startsWith(bad.names)],
              ["VALIDATION_ERROR", true],
              error.message,
            );
          }
          // RFC 6455 §4.2.2: a version refusal names the version the server speaks.
          if (bad.names === "Sec-WebSocket-Version: ") assert.equal(raw.header("sec-websocket-version"), "13");
          // Keep-alive answers (a plain request) are left open by HTTP's rules; everything else is closed by the relay.
          if (raw.header("connection")?.toLowerCase() === "close") await raw.closedByRelay(bad.name);
          raw.destroy();
          await assertServing(bad.name);
        });
      }
    });
  }

  test("each bad frame leaves a warning naming the socket's kind, its owner and ws's error code, and no secret", () => {
    const warnings = relay
      .output()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry.msg === "websocket closed after a bad frame");
    for (const bad of badFrames) {
      assert.ok(
        warnings.some((w) => w.kind === "live" && w.user_id === guest.id && w.code === bad.code),
        `live: ${bad.code}`,
      );
      assert.ok(
        warnings.some((w) => w.kind === "agent" && w.agent_id === agent.id && w.code === bad.code),
        `agent: ${bad.code}`,
      );
    }
    for (const warning of warnings) assert.equal(warning.level, "warn");
    const output = relay.output();
    for (const secret of [guest.key, guest.cookie.split("=")[1] as string, agent.token, ownerKey])
      assert.ok(!output.includes(secret), "a secret reached the log");
  });
});
