import { createHash } from "node:crypto";
import { connect, type Socket } from "node:net";
import type { Fixtures } from "./fixtures";
import type { RawRequest } from "./rawHttp";
import type { Random } from "./random";

/**
 * The two WebSocket endpoints under attack: bad handshakes (sent as raw HTTP requests) and, after a good handshake,
 * bad frames written byte by byte on the raw socket, where the `ws` client would refuse to write them.
 */

export type SocketKind = "live" | "agent";
const PATHS: Record<SocketKind, readonly string[]> = {
  live: ["/api/v1/live", "/v1/live"],
  agent: ["/api/v1/agent-api/socket", "/v1/agent-api/socket"],
};

export interface HandshakeCase {
  /** `s<number>`. */
  id: string;
  label: string;
  request: RawRequest;
  mutations: string[];
}

function handshakeHeaders(
  kind: SocketKind,
  random: Random,
  fixtures: Fixtures,
  host: string,
): [string, string | Buffer][] {
  return [
    ["Host", host],
    ["Upgrade", "websocket"],
    ["Connection", "Upgrade"],
    ["Sec-WebSocket-Key", random.bytes(16).toString("base64")],
    ["Sec-WebSocket-Version", "13"],
    ...(kind === "live"
      ? ([
          ["Cookie", fixtures.session.cookie],
          ["Origin", `http://${host}`],
        ] as [string, string][])
      : ([["Authorization", `Bearer ${fixtures.agent.token}`]] as [string, string][])),
  ];
}

function replace(
  headers: [string, string | Buffer][],
  name: string,
  value: string | Buffer | undefined,
): [string, string | Buffer][] {
  const kept = headers.filter(([existing]) => existing.toLowerCase() !== name.toLowerCase());
  return value === undefined ? kept : [...kept, [name, value]];
}

const HANDSHAKE_MUTATIONS: readonly {
  name: string;
  apply(request: RawRequest, random: Random, fixtures: Fixtures): void;
}[] = [
  {
    name: "key",
    apply(request, random) {
      const value = random.pick<string | undefined>([
        undefined,
        "",
        "abc",
        "!!!!!!!!!!!!!!!!!!!!!!==",
        "dGhlIHNhbXBsZSBub25jZQ",
        random.bytes(300).toString("base64"),
        "dGhlIHNhbXBsZSBub25jZQ==, dGhlIHNhbXBsZSBub25jZQ==",
      ]);
      request.headers = replace(request.headers, "Sec-WebSocket-Key", value);
      if (random.chance(0.2)) request.headers.push(["Sec-WebSocket-Key", random.bytes(16).toString("base64")]);
    },
  },
  {
    name: "version",
    apply(request, random) {
      request.headers = replace(
        request.headers,
        "Sec-WebSocket-Version",
        random.pick<string | undefined>([undefined, "12", "8", "abc", "13, 13", "", "99999999999999999999", "-13"]),
      );
    },
  },
  {
    name: "upgrade",
    apply(request, random) {
      request.headers = replace(
        request.headers,
        "Upgrade",
        random.pick<string | undefined>([undefined, "h2c", "websocket, h2c", "WebSocket", "", "web socket"]),
      );
    },
  },
  {
    name: "connection",
    apply(request, random) {
      request.headers = replace(
        request.headers,
        "Connection",
        random.pick<string | undefined>([undefined, "keep-alive", "close", "upgrade, keep-alive", "Upgrade, Upgrade"]),
      );
    },
  },
  {
    name: "origin",
    apply(request, random) {
      request.headers = replace(
        request.headers,
        "Origin",
        random.pick<string | Buffer | undefined>([
          undefined,
          "https://evil.example",
          "null",
          "garbage",
          "http://",
          "http://127.0.0.1",
          Buffer.from([0x68, 0x74, 0xff]),
          "",
        ]),
      );
    },
  },
  {
    name: "cookie",
    apply(request, random, fixtures) {
      request.headers = replace(
        request.headers,
        "Cookie",
        random.pick<string | undefined>([
          undefined,
          "tab_session=garbage",
          "tab_session=",
          "tab_session=%ZZ",
          fixtures.victimSession.cookie,
          `x=${fixtures.session.cookie}`,
          `${fixtures.session.cookie}; ${fixtures.session.cookie}`,
        ]),
      );
    },
  },
  {
    name: "token",
    apply(request, random, fixtures) {
      const value = random.pick<string | Buffer | undefined>([
        undefined,
        "Bearer",
        "Bearer garbage",
        `Bearer ${fixtures.owner.key}`,
        `Bearer ${fixtures.agent.token}x`,
        `bearer ${fixtures.agent.token}`,
        `Bearer  ${fixtures.agent.token}`,
        Buffer.from(`Bearer ${fixtures.agent.token}\u0001`, "latin1"),
        `Bearer svc_agent_${"A".repeat(36)}`,
      ]);
      request.headers = replace(request.headers, "Authorization", value);
      if (random.chance(0.2)) request.headers.push(["Authorization", `Bearer ${fixtures.agent.token}`]);
    },
  },
  {
    name: "method",
    apply(request, random) {
      request.method = random.pick(["POST", "PUT", "HEAD", "OPTIONS", "DELETE"]);
    },
  },
  {
    name: "path",
    apply(request, random) {
      const path = request.target;
      request.target = random.pick([
        `${path}/`,
        path.toUpperCase(),
        `${path}?x=1&x=2`,
        `${path}%ZZ`,
        `${path}/%E0%A4%A`,
        path.replace("/", "//"),
        "/api/v1/me",
        "/api/v1/livex",
        `${path}/../live`,
      ]);
    },
  },
  {
    name: "protocol",
    apply(request, random) {
      request.headers.push([
        "Sec-WebSocket-Protocol",
        random.pick(["a b", "", "a,,b", "chat, chat", "x".repeat(5_000), "\u00e9"]),
      ]);
    },
  },
  {
    name: "extensions",
    apply(request, random) {
      request.headers.push([
        "Sec-WebSocket-Extensions",
        random.pick([
          "permessage-deflate; client_max_window_bits=99",
          "x-garbage",
          ";;;",
          "permessage-deflate; server_no_context_takeover=1",
          "permessage-deflate, permessage-deflate",
        ]),
      ]);
    },
  },
  {
    name: "body",
    apply(request, random) {
      request.body = random.bytes(random.int(1, 100));
      request.headers.push(["Content-Length", String(request.body.length)]);
    },
  },
];

/** The first cases sweep each handshake mutation alone, on each endpoint; the rest are random. */
export const HANDSHAKE_SWEEP = HANDSHAKE_MUTATIONS.length * 2;

export function buildHandshakeCase(index: number, random: Random, fixtures: Fixtures, host: string): HandshakeCase {
  const sweep = index < HANDSHAKE_SWEEP;
  const kind: SocketKind = (sweep ? index % 2 === 0 : random.chance(0.5)) ? "live" : "agent";
  const request: RawRequest = {
    method: "GET",
    target: random.pick(PATHS[kind]),
    headers: handshakeHeaders(kind, random, fixtures, host),
  };
  const mutations: string[] = [];
  for (let count = sweep ? 1 : random.int(0, 3); count > 0; count--) {
    const mutation = sweep
      ? (HANDSHAKE_MUTATIONS[Math.floor(index / 2)] as (typeof HANDSHAKE_MUTATIONS)[number])
      : random.pick(HANDSHAKE_MUTATIONS);
    mutation.apply(request, random, fixtures);
    mutations.push(mutation.name);
  }
  return { id: `s${index}`, label: `WS handshake ${kind}`, request, mutations };
}

// ---------------------------------------------------------------------------------------------------------------
// Frames

interface FrameSpec {
  fin?: boolean;
  rsv?: number;
  opcode: number;
  payload: Buffer;
  masked?: boolean;
  /** A length to declare instead of the payload's (oversized frames: only the header and part of the body go out). */
  declared?: bigint;
}

/** One frame as RFC 6455 §5.2 lays it out. */
export function encodeFrame(spec: FrameSpec, random: Random): Buffer {
  const masked = spec.masked ?? true;
  const length = spec.declared ?? BigInt(spec.payload.length);
  const first = (spec.fin === false ? 0 : 0x80) | ((spec.rsv ?? 0) << 4) | (spec.opcode & 0x0f);
  let head: Buffer;
  if (length < 126n) head = Buffer.from([first, (masked ? 0x80 : 0) | Number(length)]);
  else if (length < 65_536n) {
    head = Buffer.alloc(4);
    head.writeUInt8(first, 0);
    head.writeUInt8((masked ? 0x80 : 0) | 126, 1);
    head.writeUInt16BE(Number(length), 2);
  } else {
    head = Buffer.alloc(10);
    head.writeUInt8(first, 0);
    head.writeUInt8((masked ? 0x80 : 0) | 127, 1);
    head.writeBigUInt64BE(length, 2);
  }
  if (!masked) return Buffer.concat([head, spec.payload]);
  const mask = random.bytes(4);
  const body = Buffer.from(spec.payload);
  for (let i = 0; i < body.length; i++) body[i] = (body[i] as number) ^ (mask[i % 4] as number);
  return Buffer.concat([head, mask, body]);
}

export interface BadFrame {
  name: string;
  bytes: Buffer;
}

const text = (value: string) => Buffer.from(value, "utf8");

/** A well-formed text frame holding JSON, or what looks like it: acknowledgements of every shape, and other values. */
export function jsonFrame(random: Random, envelopeIds: readonly string[], choice?: number): BadFrame {
  const frame = (spec: FrameSpec) => encodeFrame(spec, random);
  const id = envelopeIds.length > 0 && random.chance(0.4) ? random.pick(envelopeIds) : `evt_${random.int(0, 1e9)}`;
  const values = jsonValues(id);
  const value = choice === undefined ? random.pick(values) : (values[choice % values.length] as string);
  return {
    name: `text frame ${JSON.stringify(value.slice(0, 60))}${value.length > 60 ? `… (${value.length} chars)` : ""}`,
    bytes: frame({ opcode: 1, payload: text(value) }),
  };
}

function jsonValues(id: string): string[] {
  return [
    JSON.stringify({ type: "ack", envelope_id: id }),
    JSON.stringify({ type: "ack", envelope_id: { id } }),
    JSON.stringify({ type: "ack", envelope_id: [id] }),
    JSON.stringify({ type: "ack", envelope_id: 42 }),
    JSON.stringify({ type: "ack" }),
    JSON.stringify({ type: ["ack"], envelope_id: id }),
    `{"type":"ack","envelope_id":"${id}","__proto__":{"x":1}}`,
    '{"type":"ack","envelope_id":"\\ud800"}',
    "[]",
    "[null]",
    "null",
    "1",
    "true",
    '"ack"',
    "ack",
    "",
    "[".repeat(10_000) + "]".repeat(10_000),
    JSON.stringify({ type: "ack", envelope_id: "x".repeat(60_000) }),
    JSON.stringify({ type: "hello" }),
  ];
}

/** How many JSON messages `jsonFrame` chooses from. */
export const JSON_FRAME_CHOICES = jsonValues("evt_x").length;

/** Every kind of frame `badFrame` makes, with how often it is picked at random. */
export const FRAME_KINDS: readonly (readonly [string, number])[] = [
  ["oversized", 3],
  ["oversized-64bit", 2],
  ["invalid-utf8", 3],
  ["unmasked", 3],
  ["reserved-opcode", 3],
  ["rsv-bits", 3],
  ["fragmented-control", 2],
  ["long-control", 2],
  ["orphan-continuation", 2],
  ["interleaved-fragments", 2],
  ["garbage", 3],
  ["bad-close", 2],
  ["json-ack", 10],
  ["binary", 2],
  ["pings", 2],
  ["fragmented-text", 2],
];

/** One hostile (or merely odd) thing to write on an open socket. */
export function badFrame(random: Random, envelopeIds: readonly string[], only?: string): BadFrame {
  const kind = only ?? random.weighted(FRAME_KINDS);
  const frame = (spec: FrameSpec) => encodeFrame(spec, random);
  switch (kind) {
    case "oversized": {
      const size = random.pick([65_537, 70_000, 200_000]);
      return {
        name: `oversized text frame (${size} bytes)`,
        bytes: frame({ opcode: 1, payload: Buffer.alloc(size, 0x61) }),
      };
    }
    case "oversized-64bit":
      return {
        name: "frame declaring 2^53..2^63 bytes",
        bytes: frame({
          opcode: random.pick([1, 2]),
          payload: Buffer.alloc(0),
          declared: random.pick([2n ** 53n, 2n ** 63n, 2n ** 64n - 1n]),
        }),
      };
    case "invalid-utf8":
      return {
        name: "text frame with invalid UTF-8",
        bytes: frame({
          opcode: 1,
          payload: Buffer.from(random.pick([[0xc3, 0x28, 0x41], [0xff], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80]])),
        }),
      };
    case "unmasked":
      return {
        name: "unmasked client frame",
        bytes: frame({ opcode: random.pick([1, 2, 9]), payload: text('{"type":"ack"}'), masked: false }),
      };
    case "reserved-opcode": {
      const opcode = random.pick([3, 4, 5, 6, 7, 0xb, 0xc, 0xd, 0xe, 0xf]);
      return { name: `reserved opcode ${opcode}`, bytes: frame({ opcode, payload: text("x") }) };
    }
    case "rsv-bits": {
      const rsv = random.int(1, 7);
      return { name: `RSV bits ${rsv}`, bytes: frame({ opcode: 1, rsv, payload: text("{}") }) };
    }
    case "fragmented-control":
      return {
        name: "fragmented control frame",
        bytes: frame({ opcode: random.pick([8, 9, 10]), fin: false, payload: text("x") }),
      };
    case "long-control":
      return {
        name: "control frame over 125 bytes",
        bytes: frame({ opcode: random.pick([9, 10]), payload: Buffer.alloc(random.int(126, 1_000), 0x70) }),
      };
    case "orphan-continuation":
      return { name: "continuation frame with no message", bytes: frame({ opcode: 0, payload: text("tail") }) };
    case "interleaved-fragments":
      return {
        name: "a new message inside a fragmented one",
        bytes: Buffer.concat([
          frame({ opcode: 1, fin: false, payload: text("{") }),
          frame({ opcode: 1, payload: text("}") }),
        ]),
      };
    case "garbage":
      return { name: "garbage bytes", bytes: random.bytes(random.int(1, 300)) };
    case "bad-close": {
      const payload = random.pick([
        Buffer.from([0x03]),
        Buffer.from([0x03, 0xed]),
        Buffer.from([0x03, 0xee]),
        Buffer.from([0x03, 0xe7]),
        Buffer.from([0x13, 0x88]),
        Buffer.from([0x03, 0xe8, 0xc3, 0x28]),
      ]);
      return { name: `close frame ${payload.toString("hex")}`, bytes: frame({ opcode: 8, payload }) };
    }
    case "json-ack":
      return jsonFrame(random, envelopeIds);
    case "binary":
      return { name: "binary frame", bytes: frame({ opcode: 2, payload: random.bytes(random.int(0, 2_000)) }) };
    case "pings":
      return {
        name: "unsolicited pong and a ping",
        bytes: Buffer.concat([
          frame({ opcode: 10, payload: text("pong") }),
          frame({ opcode: 9, payload: random.bytes(125) }),
        ]),
      };
    default: {
      const message = JSON.stringify({ type: "ack", envelope_id: "evt_fragmented" });
      const cut = random.int(1, message.length - 1);
      return {
        name: "fragmented text message",
        bytes: Buffer.concat([
          frame({ opcode: 1, fin: false, payload: text(message.slice(0, cut)) }),
          frame({ opcode: 0, payload: text(message.slice(cut)) }),
        ]),
      };
    }
  }
}

/** Frames the relay sends (never masked). */
interface ServerFrame {
  opcode: number;
  payload: Buffer;
}

function readFrames(buffer: Buffer): { frames: ServerFrame[]; rest: Buffer } {
  const frames: ServerFrame[] = [];
  let offset = 0;
  for (;;) {
    if (buffer.length - offset < 2) break;
    const opcode = (buffer[offset] as number) & 0x0f;
    let length = (buffer[offset + 1] as number) & 0x7f;
    let start = offset + 2;
    if (length === 126) {
      if (buffer.length - offset < 4) break;
      length = buffer.readUInt16BE(offset + 2);
      start = offset + 4;
    } else if (length === 127) {
      if (buffer.length - offset < 10) break;
      length = Number(buffer.readBigUInt64BE(offset + 2));
      start = offset + 10;
    }
    if (buffer.length < start + length) break;
    frames.push({ opcode, payload: buffer.subarray(start, start + length) });
    offset = start + length;
  }
  return { frames, rest: buffer.subarray(offset) };
}

/** An open WebSocket on a raw TCP socket: the fuzzer writes whatever bytes it likes and watches what comes back. */
export interface RawWebSocket {
  /** The status of the handshake's answer, and its head when it was not 101. */
  status: number;
  head: string;
  body: Buffer;
  /** Envelope ids the relay sent (Socket Mode events), for acknowledgements that name a real one. */
  envelopeIds: string[];
  closed: boolean;
  write(bytes: Buffer): void;
  /**
   * Sends a ping and waits for its pong: the relay has read everything written before it. Resolves with `pong`, or
   * with `closed` when the relay closed the socket (after a close frame or without one), or `timeout`.
   */
  probe(random: Random, timeoutMs: number): Promise<"pong" | "closed" | "timeout">;
  /** The close code the relay sent, if it sent a close frame. */
  closeCode(): number | undefined;
  end(): void;
}

export function openRawWebSocket(
  address: { host: string; port: number },
  request: RawRequest,
  timeoutMs: number,
): Promise<RawWebSocket> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: address.host, port: address.port, noDelay: true });
    const key = request.headers.find(([name]) => name.toLowerCase() === "sec-websocket-key")?.[1];
    let buffer: Buffer = Buffer.alloc(0);
    let upgraded = false;
    let closeCode: number | undefined;
    const envelopeIds: string[] = [];
    const waiters = new Set<() => void>();
    let pongs: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no handshake answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const ws: RawWebSocket = {
      status: 0,
      head: "",
      body: Buffer.alloc(0),
      envelopeIds,
      closed: false,
      write: (bytes) => {
        if (!socket.destroyed) socket.write(bytes);
      },
      async probe(random, waitMs) {
        if (ws.closed) return "closed";
        const payload = random.bytes(8);
        ws.write(encodeFrame({ opcode: 9, payload }, random));
        const deadline = performance.now() + waitMs;
        for (;;) {
          if (pongs.some((pong) => pong.equals(payload))) {
            pongs = [];
            return "pong";
          }
          if (ws.closed) return "closed";
          const left = deadline - performance.now();
          if (left <= 0) return "timeout";
          await new Promise<void>((wake) => {
            const done = () => {
              clearTimeout(wait);
              waiters.delete(done);
              wake();
            };
            const wait = setTimeout(done, left);
            waiters.add(done);
          });
        }
      },
      closeCode: () => closeCode,
      end() {
        socket.destroy();
      },
    };
    const wakeAll = () => {
      for (const wake of [...waiters]) wake();
    };
    socket.on("connect", () => {
      const parts: Buffer[] = [Buffer.from(`${request.method} ${request.target} HTTP/1.1\r\n`)];
      for (const [name, value] of request.headers)
        parts.push(
          Buffer.from(`${name}: `),
          typeof value === "string" ? Buffer.from(value) : value,
          Buffer.from("\r\n"),
        );
      parts.push(Buffer.from("\r\n"));
      socket.write(Buffer.concat(parts));
    });
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!upgraded) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end === -1) return;
        ws.head = buffer.subarray(0, end).toString("latin1");
        ws.status = Number(/^HTTP\/1\.1 (\d{3})/.exec(ws.head)?.[1] ?? 0);
        buffer = buffer.subarray(end + 4);
        clearTimeout(timer);
        if (ws.status !== 101) {
          // A refusal: its body follows and the relay closes the connection.
          socket.once("close", () => {
            ws.body = buffer;
            resolve(ws);
          });
          return;
        }
        const expected = createHash("sha1")
          .update(`${String(key)}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
          .digest("base64");
        if (!ws.head.toLowerCase().includes(`sec-websocket-accept: ${expected.toLowerCase()}`)) {
          socket.destroy();
          reject(new Error(`bad Sec-WebSocket-Accept in ${ws.head}`));
          return;
        }
        upgraded = true;
        resolve(ws);
      }
      const { frames, rest } = readFrames(buffer);
      buffer = rest;
      for (const frame of frames) {
        if (frame.opcode === 10) pongs.push(frame.payload);
        else if (frame.opcode === 8 && frame.payload.length >= 2) closeCode = frame.payload.readUInt16BE(0);
        else if (frame.opcode === 1) {
          const id = /"envelope_id":"([^"]+)"/.exec(frame.payload.toString("utf8"))?.[1];
          if (id !== undefined && envelopeIds.length < 50) envelopeIds.push(id);
        }
      }
      wakeAll();
    });
    socket.on("close", () => {
      ws.closed = true;
      clearTimeout(timer);
      wakeAll();
      if (!upgraded && ws.status === 0) reject(new Error("the connection closed before the handshake was answered"));
    });
    socket.on("error", () => undefined);
  });
}

/** A valid handshake for one endpoint, for frame sessions. */
export function goodHandshake(kind: SocketKind, random: Random, fixtures: Fixtures, host: string): RawRequest {
  return { method: "GET", target: random.pick(PATHS[kind]), headers: handshakeHeaders(kind, random, fixtures, host) };
}
