import {
  type Credential,
  HTTP_ROUTES,
  type HttpRoute,
  MOUNTS,
  PATTERN_ROUTES,
  fillPath,
  routeLabel,
} from "./catalogue";
import type { Fixtures } from "./fixtures";
import type { RawRequest } from "./rawHttp";
import type { Random } from "./random";

/**
 * Builds one fuzz case: a valid sample request of a catalogued route, then zero to three mutations of its body, raw
 * bytes, headers, credentials, path, query or method. Everything is drawn from the case's own generator.
 */

export interface HttpCase {
  /** `h<number>`: replayed alone with `--case`. */
  id: string;
  /** What was attacked, for grouping failures: `POST /api/v1/agents/:id/pause`. */
  label: string;
  /** The route's body fields, to check that validation messages name one. */
  fields: readonly string[];
  request: RawRequest;
  /**
   * No answer is acceptable: the request never completes (a Content-Length longer than its body), or its body is
   * larger than any limit, so the relay may answer 413 before reading it all and close, and the client's unsent
   * bytes turn that close into a reset that can discard the answer before it is read.
   */
  mayGoUnanswered: boolean;
  mutations: string[];
}

interface Draft {
  method: string;
  /** HTTP version token of the request line. */
  version: string;
  path: string;
  /** The query string without `?`. */
  query: string;
  headers: [string, string | Buffer][];
  hasValue: boolean;
  value: unknown;
  /** Raw JSON text spliced in for marker strings when the value is serialised: numbers JSON.stringify cannot write, deep nesting. */
  tokens: Map<string, string>;
  body: Buffer | undefined;
  /** `auto` adds a true Content-Length at the end; a mutation that writes its own sets `manual`. */
  length: "auto" | "manual";
  incomplete: boolean;
  credential: Credential;
  mutations: string[];
}

export interface CaseContext {
  fixtures: Fixtures;
  host: string;
  /** Files of the console's built folder (`/app.js`, ...). */
  staticFiles: readonly string[];
}

// ---------------------------------------------------------------------------------------------------------------
// Values

const DEEP = 10_000;
const deepArray = () => "[".repeat(DEEP) + "]".repeat(DEEP);
const deepObject = () => '{"a":'.repeat(DEEP) + "1" + "}".repeat(DEEP);

/** JSON text that is valid but awkward: numbers past double range or precision, negative zero, deep nesting. */
const RAW_TOKENS: readonly (() => string)[] = [
  () => "1e400",
  () => "-1e400",
  () => "1e-400",
  () => "-0",
  () => "9007199254740993",
  () => "123456789012345678901234567890",
  () => "1.7976931348623157e308",
  () => "0.1e1",
  deepArray,
  deepObject,
];

function bigString(random: Random): string {
  const size = random.pick([300, 5_000, 70_000, 200_000, 600_000]);
  return random.pick(["a", "é", "🙂", "\u0000", " ", "@", "%ZZ"]).repeat(Math.ceil(size / 2));
}

/** A value of some other JSON type, or an odd one of the same type. */
function oddValue(random: Random, draft: Draft): unknown {
  const kind = random.weighted<string>([
    ["null", 3],
    ["bool", 2],
    ["number", 3],
    ["token", 4],
    ["string", 4],
    ["big", 2],
    ["surrogate", 2],
    ["array", 2],
    ["object", 2],
  ]);
  switch (kind) {
    case "null":
      return null;
    case "bool":
      return random.chance(0.5);
    case "number":
      return random.pick([
        0,
        -1,
        1,
        1.5,
        -0.5,
        2 ** 31,
        -(2 ** 31),
        2 ** 53,
        Number.MAX_SAFE_INTEGER,
        Number.MIN_VALUE,
        500,
        501,
        100,
        101,
      ]);
    case "token":
      return marker(draft, random.pick(RAW_TOKENS)());
    case "string":
      return random.pick([
        "",
        " ",
        "\t\n",
        "\u0000",
        "null",
        "true",
        "0",
        "-1",
        "1e400",
        "../../etc/passwd",
        "%ZZ",
        "<script>alert(1)</script>",
        "ünïcødé",
        "\u202eevil",
        "@@@@@@",
        "#general",
        "#",
        "CAPS",
        "tasks",
        "tab-v2",
        "admin",
        "owner",
        "<|endoftext|>",
        "<|im_start|>system",
        "<|fim_prefix|>x<|fim_suffix|>y<|fim_middle|>",
        "<fim_prefix><file_sep>",
        "<｜fim▁begin｜>",
        "<PRE> <SUF> <MID>",
        "[SUFFIX][PREFIX]",
        "<start_of_turn>",
      ]);
    case "big":
      return bigString(random);
    case "surrogate":
      // JSON.stringify writes a lone surrogate as a \ud800 escape: valid JSON, invalid UTF-16.
      return random.pick(["\ud800", "\udfff", "a\ud800b", "\udc00\ud800", "🙂".slice(0, 1)]);
    case "array":
      return random.pick([[], [null], ["x"], [1, 2, 3], [[[]]], [{}]]);
    default:
      if (random.chance(0.3))
        return marker(draft, '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}');
      return random.pick<object>([{}, { a: 1 }, { toString: 1, valueOf: 2 }, { type: "ack" }]);
  }
}

function marker(draft: Draft, token: string): string {
  const name = `\u0000token${draft.tokens.size}\u0000`;
  draft.tokens.set(name, token);
  return name;
}

type PathPart = string | number;

/** Every position in a JSON value (objects and arrays included), the root as []. */
function positions(value: unknown, prefix: PathPart[] = []): PathPart[][] {
  const out: PathPart[][] = [prefix];
  if (Array.isArray(value)) value.forEach((item, index) => out.push(...positions(item, [...prefix, index])));
  else if (value !== null && typeof value === "object")
    for (const [key, item] of Object.entries(value)) out.push(...positions(item, [...prefix, key]));
  return out;
}

function setAt(draft: Draft, path: PathPart[], next: unknown): void {
  if (path.length === 0) {
    draft.value = next;
    return;
  }
  let node = draft.value as Record<PathPart, unknown>;
  for (const part of path.slice(0, -1)) node = node[part] as Record<PathPart, unknown>;
  node[path[path.length - 1] as PathPart] = next;
}

function removeAt(draft: Draft, path: PathPart[]): void {
  if (path.length === 0) return;
  let node = draft.value as Record<PathPart, unknown>;
  for (const part of path.slice(0, -1)) node = node[part] as Record<PathPart, unknown>;
  const last = path[path.length - 1] as PathPart;
  if (Array.isArray(node)) node.splice(Number(last), 1);
  else delete node[last];
}

function serialise(draft: Draft): void {
  if (!draft.hasValue) return;
  let text = JSON.stringify(draft.value) ?? "null";
  for (const [name, token] of draft.tokens) text = text.split(JSON.stringify(name)).join(token);
  draft.body = Buffer.from(text, "utf8");
}

// ---------------------------------------------------------------------------------------------------------------
// Headers

function setHeader(draft: Draft, name: string, value: string | Buffer | undefined): void {
  draft.headers = draft.headers.filter(([existing]) => existing.toLowerCase() !== name.toLowerCase());
  if (value !== undefined) draft.headers.push([name, value]);
}

export function credentialHeaders(credential: Credential, fixtures: Fixtures): [string, string][] {
  const bearer = (token: string): [string, string][] => [["Authorization", `Bearer ${token}`]];
  switch (credential) {
    case "owner":
      return bearer(fixtures.owner.key);
    case "admin":
    case "member":
    case "guest":
      return bearer(fixtures[credential].key);
    case "tabOnly":
    case "messagesRead":
    case "keysWrite":
    case "agentsRead":
    case "workspaceRead":
      return bearer(fixtures.narrow[credential]);
    case "revoked":
      return bearer(fixtures.revokedKey);
    case "agent":
      return bearer(fixtures.agent.token);
    case "session":
      return [
        ["Cookie", fixtures.session.cookie],
        ["X-CSRF-Token", fixtures.session.csrf],
      ];
    case "victimSession":
      return [
        ["Cookie", fixtures.victimSession.cookie],
        ["X-CSRF-Token", fixtures.victimSession.csrf],
      ];
    case "none":
      return [];
  }
}

function garbageAuthorization(random: Random, fixtures: Fixtures): string | Buffer {
  const key = random.pick([fixtures.owner.key, fixtures.agent.token, fixtures.guest.key]);
  return random.pick<string | Buffer>([
    "",
    "Bearer",
    "Bearer ",
    `Bearer  ${key}`,
    `bearer ${key}`,
    `BEARER ${key}`,
    `Bearer ${key} extra`,
    `Bearer ${key}, Bearer ${key}`,
    `Basic ${Buffer.from(`user:${key}`).toString("base64")}`,
    `Token ${key}`,
    key,
    `Bearer ${key.slice(0, -1)}${key.endsWith("A") ? "B" : "A"}`,
    `Bearer svc_ws_${"A".repeat(36)}`,
    "Bearer svc_ws_short",
    `Bearer svc_agent_${"Z".repeat(36)}`,
    `Bearer ${"x".repeat(8_000)}`,
    `Bearer ${key.toUpperCase()}`,
    "Bearer ünïcødé",
    Buffer.from(`Bearer ${key}\u0001`, "latin1"),
    Buffer.from(`Bearer \u0000${key}`, "latin1"),
    Buffer.from(`Bearer ${key}\u007f`, "latin1"),
    Buffer.from(`Bearer\t${key}`, "latin1"),
    Buffer.from(`Bearer ${key}\t`, "latin1"),
    Buffer.concat([Buffer.from("Bearer "), Buffer.from([0xff, 0xfe, 0xc3, 0x28])]),
  ]);
}

/** The main session must survive the run: a request that may end a session only ever carries the victim session. */
function endsSession(draft: Draft): boolean {
  return draft.method === "DELETE" && draft.path.toLowerCase().includes("/sessions/current");
}

function sessionFor(draft: Draft, fixtures: Fixtures): { cookie: string; csrf: string } {
  return endsSession(draft) ? fixtures.victimSession : fixtures.session;
}

function garbageCookie(random: Random, fixtures: Fixtures, session: { cookie: string }): string | Buffer {
  const real = session.cookie;
  const value = real.slice(real.indexOf("=") + 1);
  return random.pick<string | Buffer>([
    "tab_session=",
    "tab_session",
    "tab_session=garbage",
    "tab_session=%ZZ",
    `tab_session=${"a".repeat(6_000)}`,
    `${real}; ${real}`,
    `tab_session=x; ${real}`,
    `${real}; tab_session=x`,
    `TAB_SESSION=${value}`,
    `__Host-tab_session=${value}`,
    `tab_session="${value}"`,
    `tab_session=${value.slice(0, -2)}`,
    "=; ;;; =x; ==",
    `tab_session=${value}; ${"k=v; ".repeat(500)}`,
    Buffer.concat([Buffer.from("tab_session="), Buffer.from([0xff, 0xfe, 0x80])]),
    fixtures.victimSession.cookie,
  ]);
}

const CONTENT_TYPES: readonly (string | Buffer | undefined)[] = [
  undefined,
  "",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json; charset=latin1",
  "application/json; charset=utf-16",
  'application/json; charset="utf-8"',
  "application/json;;;charset=",
  "APPLICATION/JSON",
  "application/vnd.api+json",
  "application/jsonx",
  "application/json, text/plain",
  "json",
  "application/",
  Buffer.from([0x61, 0x70, 0xff, 0xfe]),
];

// ---------------------------------------------------------------------------------------------------------------
// Mutations

interface Mutation {
  name: string;
  /** Body values are changed before serialisation, raw bytes after it, the rest after that. */
  phase: "value" | "raw" | "request";
  weight: number;
  applies?(draft: Draft): boolean;
  apply(draft: Draft, random: Random, context: CaseContext): void;
}

const hasBody = (draft: Draft) => draft.hasValue;
const hasBytes = (draft: Draft) => draft.body !== undefined && draft.body.length > 0;
/** Ids a path may be swapped to: of other kinds, or of the resources destructive routes may destroy; never a credential's own user or agent. */
const swapIds = (f: Fixtures) => [
  f.channel.id,
  f.dm.id,
  f.privateChannel.id,
  f.message.id,
  f.agentMessage.id,
  f.managedAgent.deliveryId,
  f.victimUserId,
  f.victimKeyId,
  f.victimAgentId,
];
/** A method to swap in: never DELETE, so a read's path (the agent the Agent API runs as, the main session) is never destroyed. */
const METHODS = [
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "OPTIONS",
  "TRACE",
  "FOO",
  "get",
  "PROPFIND",
  "M-SEARCH",
  "CONNECT",
];

function segments(draft: Draft): { parts: string[]; indexes: number[] } {
  const parts = draft.path.split("/");
  const indexes = parts.map((_part, index) => index).filter((index) => index > 0);
  return { parts, indexes };
}

function replaceSegment(draft: Draft, random: Random, make: (old: string) => string): void {
  const { parts, indexes } = segments(draft);
  if (indexes.length === 0) return;
  // The last segments hold ids more often than the prefix does.
  const index = random.chance(0.6) ? (indexes[indexes.length - 1] as number) : random.pick(indexes);
  parts[index] = make(parts[index] ?? "");
  draft.path = parts.join("/");
}

const MUTATIONS: readonly Mutation[] = [
  // Bodies, as values.
  {
    name: "body.wrong-type",
    phase: "value",
    weight: 10,
    applies: hasBody,
    apply(draft, random) {
      const path = random.pick(positions(draft.value));
      setAt(draft, path, oddValue(random, draft));
    },
  },
  {
    name: "body.huge-string",
    phase: "value",
    weight: 3,
    applies: hasBody,
    apply(draft, random) {
      setAt(draft, random.pick(positions(draft.value)), bigString(random));
    },
  },
  {
    name: "body.deep-nesting",
    phase: "value",
    weight: 3,
    apply(draft, random) {
      const token = marker(draft, random.chance(0.5) ? deepArray() : deepObject());
      if (!draft.hasValue || random.chance(0.3)) {
        draft.hasValue = true;
        draft.value = token;
      } else setAt(draft, random.pick(positions(draft.value)), token);
    },
  },
  {
    name: "body.null",
    phase: "value",
    weight: 3,
    applies: hasBody,
    apply(draft, random) {
      setAt(draft, random.chance(0.2) ? [] : random.pick(positions(draft.value)), null);
    },
  },
  {
    name: "body.unknown-fields",
    phase: "value",
    weight: 3,
    applies: (draft) =>
      hasBody(draft) && typeof draft.value === "object" && draft.value !== null && !Array.isArray(draft.value),
    apply(draft, random) {
      const target = draft.value as Record<string, unknown>;
      for (let i = random.int(1, 4); i > 0; i--) {
        const key = random.pick([
          "__proto__",
          "constructor",
          "prototype",
          "toString",
          "hasOwnProperty",
          "extra",
          "",
          "role",
          "scopes",
          "workspace_id",
          "user_id",
          "id",
        ]);
        Object.defineProperty(target, key, {
          value: oddValue(random, draft),
          enumerable: true,
          configurable: true,
          writable: true,
        });
      }
    },
  },
  {
    name: "body.edge-number",
    phase: "value",
    weight: 3,
    applies: hasBody,
    apply(draft, random) {
      setAt(draft, random.pick(positions(draft.value)), marker(draft, random.pick(RAW_TOKENS.slice(0, 8))()));
    },
  },
  {
    name: "body.lone-surrogate",
    phase: "value",
    weight: 2,
    applies: hasBody,
    apply(draft, random) {
      setAt(draft, random.pick(positions(draft.value)), random.pick(["\ud800", "x\udfffy", "\udbff\udbff"]));
    },
  },
  {
    name: "body.remove-field",
    phase: "value",
    weight: 3,
    applies: hasBody,
    apply(draft, random) {
      removeAt(draft, random.pick(positions(draft.value)));
    },
  },
  {
    name: "body.not-an-object",
    phase: "value",
    weight: 3,
    apply(draft, random) {
      draft.hasValue = true;
      draft.value = random.pick<unknown>([[], [draft.value], "text", 42, true, null, "", 0]);
    },
  },
  {
    name: "body.unexpected",
    phase: "value",
    weight: 1,
    applies: (draft) => !draft.hasValue,
    apply(draft, random) {
      draft.hasValue = true;
      draft.value = random.pick<unknown>([{}, { text: "hello" }, { api_key: "x" }, []]);
      setHeader(draft, "Content-Type", "application/json");
    },
  },

  // Bodies, as bytes.
  {
    name: "raw.invalid-utf8",
    phase: "raw",
    weight: 4,
    applies: hasBytes,
    apply(draft, random) {
      const body = draft.body as Buffer;
      const bad = Buffer.from(
        random.pick([
          [0xff, 0xfe],
          [0xc3, 0x28],
          [0xc0, 0xaf],
          [0xed, 0xa0, 0x80],
          [0xf8, 0x88, 0x80, 0x80, 0x80],
          [0xe2, 0x82],
          [0x80],
        ]),
      );
      // Inside a string when there is one, so JSON.parse sees the bytes as text.
      const quotes = [...body.entries()].filter(([, byte]) => byte === 0x22).map(([index]) => index);
      const at = quotes.length > 1 ? (random.pick(quotes.slice(0, -1)) as number) + 1 : body.length;
      draft.body = Buffer.concat([body.subarray(0, at), bad, body.subarray(at)]);
    },
  },
  {
    name: "raw.truncated",
    phase: "raw",
    weight: 3,
    applies: (draft) => draft.body !== undefined && draft.body.length > 1,
    apply(draft, random) {
      const body = draft.body as Buffer;
      draft.body = body.subarray(0, random.int(1, body.length - 1));
    },
  },
  {
    name: "raw.empty",
    phase: "raw",
    weight: 2,
    apply(draft, random) {
      draft.body = random.chance(0.5) ? Buffer.alloc(0) : undefined;
      if (!draft.headers.some(([name]) => name.toLowerCase() === "content-type"))
        draft.headers.push(["Content-Type", "application/json"]);
      if (draft.body === undefined && random.chance(0.5)) {
        setHeader(draft, "Content-Length", "0");
        draft.length = "manual";
      }
    },
  },
  {
    name: "raw.not-json",
    phase: "raw",
    weight: 2,
    apply(draft, random) {
      draft.body = Buffer.from(
        random.pick([
          "name=x&role=admin",
          "<xml/>",
          "{'single': 'quotes'}",
          '{"a":1,}',
          "{/* comment */}",
          "NaN",
          "Infinity",
          "undefined",
          "\ufeff{}",
          "{}}}}",
          "[1,2",
          '"unterminated',
          '{"a":"\\x41"}',
          '{"a":"\\u12"}',
          " ".repeat(10_000),
        ]),
        "utf8",
      );
      if (random.chance(0.5)) draft.body = Buffer.concat([draft.body, random.bytes(random.int(1, 64))]);
    },
  },
  {
    name: "raw.bom-or-trailing",
    phase: "raw",
    weight: 1,
    applies: hasBytes,
    apply(draft, random) {
      const body = draft.body as Buffer;
      draft.body = random.chance(0.5)
        ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body])
        : Buffer.concat([body, Buffer.from(random.pick(["}", ",", "\u0000", " x", "\n{}"]))]);
    },
  },
  {
    name: "raw.duplicate-keys",
    phase: "raw",
    weight: 1,
    applies: (draft) =>
      hasBytes(draft) && (draft.body as Buffer)[0] === 0x7b && typeof draft.value === "object" && draft.value !== null,
    apply(draft, random) {
      const keys = Object.keys(draft.value as object);
      if (keys.length === 0) return;
      const key = random.pick(keys);
      draft.body = Buffer.concat([
        Buffer.from(`{${JSON.stringify(key)}:${random.pick(["1", "null", "[]", '"x"'])},`),
        (draft.body as Buffer).subarray(1),
      ]);
    },
  },

  // Headers.
  {
    name: "header.content-type",
    phase: "request",
    weight: 5,
    apply(draft, random) {
      setHeader(draft, "Content-Type", random.pick(CONTENT_TYPES));
      if (random.chance(0.2)) draft.headers.push(["Content-Type", random.pick(["text/plain", "application/json"])]);
    },
  },
  {
    name: "header.content-length",
    phase: "request",
    weight: 4,
    apply(draft, random) {
      const actual = draft.body?.length ?? 0;
      const kind = random.pick(["longer", "shorter", "garbage", "duplicate"]);
      draft.length = "manual";
      setHeader(draft, "Content-Length", undefined);
      if (kind === "longer") {
        draft.headers.push(["Content-Length", String(actual + random.int(1, 5_000))]);
        draft.incomplete = true;
      } else if (kind === "shorter") {
        draft.headers.push(["Content-Length", String(Math.max(0, actual - random.int(1, Math.max(1, actual))))]);
      } else if (kind === "garbage") {
        draft.headers.push([
          "Content-Length",
          random.pick(["abc", "-1", "1.5", "99999999999999999999", " 5", "0x10", "", "1e3", "+5"]),
        ]);
        // Some of these parse as a length (" 5" is 5) that the body may not fill.
        draft.incomplete = true;
      } else {
        draft.headers.push(["Content-Length", String(actual)], ["Content-Length", String(actual + 1)]);
      }
    },
  },
  {
    name: "header.transfer-encoding",
    phase: "request",
    weight: 2,
    apply(draft, random) {
      const body = draft.body ?? Buffer.alloc(0);
      setHeader(draft, "Content-Length", undefined);
      draft.length = "manual";
      const kind = random.pick(["chunked", "bad-chunks", "with-length", "gzip-chunked", "unknown"]);
      if (kind === "chunked" || kind === "with-length") {
        const chunks: Buffer[] = [];
        for (let offset = 0; offset < body.length;) {
          const size = Math.min(body.length - offset, random.int(1, 4_096));
          chunks.push(
            Buffer.from(`${size.toString(16)}\r\n`),
            body.subarray(offset, offset + size),
            Buffer.from("\r\n"),
          );
          offset += size;
        }
        chunks.push(Buffer.from("0\r\n\r\n"));
        draft.body = Buffer.concat(chunks);
        draft.headers.push(["Transfer-Encoding", "chunked"]);
        if (kind === "with-length") draft.headers.push(["Content-Length", String(body.length)]);
      } else if (kind === "bad-chunks") {
        draft.headers.push(["Transfer-Encoding", "chunked"]);
        draft.body = Buffer.concat([
          Buffer.from(random.pick(["zz\r\n", "ffffffffffffffff\r\n", "5\r\nab\r\n0\r\n\r\n", "-1\r\n"])),
          body.subarray(0, 16),
        ]);
        draft.incomplete = true;
      } else if (kind === "gzip-chunked") {
        draft.headers.push(["Transfer-Encoding", "gzip, chunked"]);
        draft.body = Buffer.concat([
          Buffer.from(`${body.length.toString(16)}\r\n`),
          body,
          Buffer.from("\r\n0\r\n\r\n"),
        ]);
      } else {
        draft.headers.push(["Transfer-Encoding", random.pick(["identity", "foo", "chunked, identity"])]);
        draft.incomplete = true;
      }
    },
  },
  {
    name: "header.content-encoding",
    phase: "request",
    weight: 1,
    apply(draft, random) {
      draft.headers.push([
        "Content-Encoding",
        random.pick(["gzip", "br", "deflate", "identity", "IDENTITY", "x-garbage", ""]),
      ]);
    },
  },
  {
    name: "header.authorization",
    phase: "request",
    weight: 5,
    apply(draft, random, context) {
      const kind = random.pick(["garbage", "duplicate", "missing"]);
      const existing = draft.headers.find(([name]) => name === "Authorization")?.[1];
      if (kind === "missing") setHeader(draft, "Authorization", undefined);
      else if (kind === "garbage") setHeader(draft, "Authorization", garbageAuthorization(random, context.fixtures));
      else
        draft.headers.push([
          "Authorization",
          random.chance(0.5) && existing !== undefined ? existing : garbageAuthorization(random, context.fixtures),
        ]);
    },
  },
  {
    name: "header.cookie",
    phase: "request",
    weight: 3,
    apply(draft, random, context) {
      const cookie = garbageCookie(random, context.fixtures, sessionFor(draft, context.fixtures));
      if (random.chance(0.3)) draft.headers.push(["Cookie", cookie]);
      else setHeader(draft, "Cookie", cookie);
      if (random.chance(0.5)) setHeader(draft, "Authorization", undefined);
    },
  },
  {
    name: "header.csrf",
    phase: "request",
    weight: 3,
    apply(draft, random, context) {
      const session = sessionFor(draft, context.fixtures);
      const csrf = session.csrf;
      if (!draft.headers.some(([name]) => name === "Cookie")) draft.headers.push(["Cookie", session.cookie]);
      setHeader(draft, "Authorization", undefined);
      const kind = random.pick(["missing", "wrong", "duplicate", "victim", "huge", "bytes"]);
      setHeader(draft, "X-CSRF-Token", undefined);
      if (kind === "wrong")
        draft.headers.push(["X-CSRF-Token", `${csrf.slice(0, -1)}${csrf.endsWith("A") ? "B" : "A"}`]);
      else if (kind === "duplicate") draft.headers.push(["X-CSRF-Token", csrf], ["X-CSRF-Token", "nope"]);
      else if (kind === "victim") draft.headers.push(["X-CSRF-Token", context.fixtures.victimSession.csrf]);
      else if (kind === "huge") draft.headers.push(["X-CSRF-Token", csrf.repeat(200)]);
      else if (kind === "bytes")
        draft.headers.push([
          "X-CSRF-Token",
          Buffer.concat([Buffer.from(csrf.slice(0, 10)), Buffer.from([0xff, 0x80])]),
        ]);
    },
  },
  {
    name: "header.huge",
    phase: "request",
    weight: 3,
    apply(draft, random) {
      const kind = random.pick(["8k", "20k", "many", "request-id"]);
      if (kind === "many") for (let i = 0; i < random.int(50, 300); i++) draft.headers.push([`X-Fuzz-${i}`, "v"]);
      else if (kind === "request-id")
        draft.headers.push([
          "X-Request-Id",
          random.pick(["x".repeat(129), "a b", "../../", "\u00e9", "req_1", "x".repeat(8_000)]),
        ]);
      else
        draft.headers.push([
          random.pick(["X-Fuzz", "Cookie", "Accept", "User-Agent"]),
          "z".repeat(kind === "8k" ? 8_000 : 20_000),
        ]);
    },
  },
  {
    name: "header.conditional",
    phase: "request",
    weight: 2,
    apply(draft, random) {
      draft.headers.push(
        random.pick<[string, string]>([
          ["Range", "bytes=99999999-"],
          ["Range", "bytes=0-1"],
          ["Range", "bytes=5-2"],
          ["Range", "bytes=0-1,2-3,4-5"],
          ["Range", "garbage"],
          ["If-Match", '"nope"'],
          ["If-None-Match", "*"],
          ["If-Modified-Since", "Thu, 01 Jan 2099 00:00:00 GMT"],
          ["If-Unmodified-Since", "Thu, 01 Jan 1970 00:00:00 GMT"],
          ["If-Range", '"x"'],
        ]),
      );
    },
  },
  {
    name: "header.misc",
    phase: "request",
    weight: 3,
    apply(draft, random) {
      const kind = random.pick([
        "expect",
        "no-host",
        "two-hosts",
        "bad-host",
        "accept",
        "origin",
        "bad-name",
        "upgrade",
        "keep-alive",
      ]);
      if (kind === "expect") draft.headers.push(["Expect", random.pick(["100-continue", "garbage", "200-ok"])]);
      else if (kind === "no-host") setHeader(draft, "Host", undefined);
      else if (kind === "two-hosts") draft.headers.push(["Host", "evil.example"]);
      else if (kind === "bad-host") setHeader(draft, "Host", random.pick(["", "a b", "évil", "[::1", "x:99999"]));
      else if (kind === "accept")
        draft.headers.push([
          "Accept",
          random.pick(["text/html", "application/json;q=0", "*/*;q=garbage", "image/png", ""]),
        ]);
      else if (kind === "origin")
        draft.headers.push(["Origin", random.pick(["https://evil.example", "null", "garbage", ""])]);
      else if (kind === "bad-name") draft.headers.push([random.pick(["X Bad", "X:Bad", "(", "Ä"]), "1"]);
      else if (kind === "upgrade")
        draft.headers.push(["Upgrade", random.pick(["h2c", "websocket", "garbage"])], ["Connection", "Upgrade"]);
      else setHeader(draft, "Connection", random.pick(["keep-alive", "garbage", undefined]));
    },
  },
  {
    name: "header.version",
    phase: "request",
    weight: 1,
    apply(draft, random) {
      draft.version = random.pick([
        "HTTP/1.0",
        "HTTP/2.0",
        "HTTP/0.9",
        "HTTP/9.9",
        "http/1.1",
        "HTTP/1.1 extra",
        "HTTP/1",
      ]);
    },
  },

  // Credentials.
  {
    name: "auth.swap",
    phase: "request",
    weight: 6,
    apply(draft, random, context) {
      const pool: Credential[] = [
        "owner",
        "admin",
        "member",
        "guest",
        "tabOnly",
        "messagesRead",
        "keysWrite",
        "agentsRead",
        "workspaceRead",
        "revoked",
        "victimSession",
        "agent",
        "none",
      ];
      const credential = random.pick<Credential>(endsSession(draft) ? pool : [...pool, "session", "session"]);
      for (const name of ["Authorization", "Cookie", "X-CSRF-Token"]) setHeader(draft, name, undefined);
      draft.headers.push(...credentialHeaders(credential, context.fixtures));
      draft.credential = credential;
    },
  },

  // Paths.
  {
    name: "path.bad-escape",
    phase: "request",
    weight: 4,
    apply(draft, random) {
      const escape = random.pick([
        "%ZZ",
        "%E0%A4%A",
        "%",
        "%%",
        "%u0041",
        "%C0%AF",
        "%ED%A0%80",
        "%FF",
        "%00",
        "%2",
        "%G1",
        "%c3%28",
      ]);
      replaceSegment(draft, random, (old) => (random.chance(0.5) ? escape : `${old}${escape}`));
    },
  },
  {
    name: "path.dots",
    phase: "request",
    weight: 2,
    apply(draft, random) {
      replaceSegment(draft, random, (old) => `${random.pick(["..", ".", "%2e%2e", "%2E", "..%2f..", ".%2e"])}/${old}`);
    },
  },
  {
    name: "path.double-slash",
    phase: "request",
    weight: 2,
    apply(draft, random) {
      const slashes = [...draft.path].map((char, index) => (char === "/" ? index : -1)).filter((index) => index >= 0);
      const at = random.pick(slashes);
      draft.path = `${draft.path.slice(0, at)}/${draft.path.slice(at)}`;
    },
  },
  {
    name: "path.long-id",
    phase: "request",
    weight: 2,
    apply(draft, random) {
      const size = random.pick([65, 200, 5_000, 12_000]);
      replaceSegment(draft, random, (old) => (old + "x".repeat(size)).slice(0, size));
    },
  },
  {
    name: "path.unicode",
    phase: "request",
    weight: 2,
    apply(draft, random) {
      const text = random.pick(["ünïcødé", "🙂", "\u202e", "名前", "\u0000", "a b", "tab\tstop"]);
      // Percent-encoded, as a client should send it; raw, as a hostile one might.
      replaceSegment(draft, random, (old) => old + (random.chance(0.6) ? encodeURIComponent(text) : text));
    },
  },
  {
    name: "path.case",
    phase: "request",
    weight: 3,
    apply(draft, random) {
      draft.path = [...draft.path]
        .map((char) =>
          random.chance(0.4) ? (char === char.toLowerCase() ? char.toUpperCase() : char.toLowerCase()) : char,
        )
        .join("");
    },
  },
  {
    name: "path.trailing-slash",
    phase: "request",
    weight: 2,
    apply(draft, random) {
      draft.path += random.pick(["/", "//", "/.", "%2f", ";", ";x=1", "#fragment"]);
    },
  },
  {
    name: "path.id-swap",
    phase: "request",
    weight: 2,
    apply(draft, random, context) {
      replaceSegment(draft, random, () =>
        random.pick([...swapIds(context.fixtures), "", "0", "-1", "null", "undefined", "usr_", "ch_x", "%20"]),
      );
    },
  },

  // Queries.
  {
    name: "query.shape",
    phase: "request",
    weight: 4,
    apply(draft, random) {
      const name = random.pick(["limit", "before", "thread_id", "x"]);
      const value = random.pick(["1", "5", "abc", ""]);
      const extra = random.pick([
        `${name}=${value}&${name}=${value}2`,
        `${name}[]=${value}`,
        `${name}[]=1&${name}[]=2`,
        `${name}[a]=${value}`,
        `${name}[__proto__]=1`,
        `${name}`,
        `${name}=`,
        `=${value}`,
        "&&&",
        `${name}=%ZZ`,
        `${name}=${"q".repeat(8_000)}`,
      ]);
      draft.query = draft.query === "" ? extra : `${draft.query}&${extra}`;
    },
  },
  {
    name: "query.number",
    phase: "request",
    weight: 4,
    apply(draft, random) {
      const value = random.pick([
        "0",
        "-1",
        "101",
        "0.5",
        "1.0",
        "1e2",
        "1e400",
        "99999999999999999999",
        "Infinity",
        "NaN",
        "",
        " 5",
        "0x10",
        "5abc",
        "%D9%A1%D9%A0",
        "-0",
        "+5",
        "1_0",
      ]);
      const rest = draft.query
        .split("&")
        .filter((pair) => pair !== "" && !pair.startsWith("limit="))
        .join("&");
      draft.query = rest === "" ? `limit=${value}` : `${rest}&limit=${value}`;
    },
  },

  // Methods.
  {
    name: "method.swap",
    phase: "request",
    weight: 2,
    apply(draft, random) {
      draft.method = random.pick(METHODS.filter((method) => method !== draft.method));
    },
  },
];

const BY_PHASE = ["value", "raw", "request"] as const;

// ---------------------------------------------------------------------------------------------------------------
// Cases

/** The Agent API's body limit (AGENT_API_MAX_BODY_BYTES), the smallest of the relay's: larger bodies may meet a 413 early. */
const SMALLEST_BODY_LIMIT = 64 * 1024;

function encodeQuery(pairs: readonly [string, string][] = []): string {
  return pairs.map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`).join("&");
}

function newDraft(method: string, path: string, credential: Credential, context: CaseContext): Draft {
  return {
    method,
    version: "HTTP/1.1",
    path,
    query: "",
    headers: [["Host", context.host], ["Connection", "close"], ...credentialHeaders(credential, context.fixtures)],
    hasValue: false,
    value: undefined,
    tokens: new Map(),
    body: undefined,
    length: "auto",
    incomplete: false,
    credential,
    mutations: [],
  };
}

/** What the case attacks: a catalogued API route, a console page or file, or a path nothing serves. */
function baseDraft(
  random: Random,
  context: CaseContext,
  only: CaseOptions,
): { draft: Draft; label: string; fields: readonly string[] } {
  const target =
    only.route !== undefined
      ? "route"
      : random.weighted<"route" | "console" | "unknown">([
          ["route", 90],
          ["console", 6],
          ["unknown", 4],
        ]);
  if (target === "console") {
    const pages = PATTERN_ROUTES.flatMap((route) => route.samples(context.fixtures));
    const path =
      random.chance(0.5) || context.staticFiles.length === 0 ? random.pick(pages) : random.pick(context.staticFiles);
    const draft = newDraft("GET", path, random.chance(0.5) ? "none" : "session", context);
    if (random.chance(0.5)) draft.headers.push(["Accept", "text/html"]);
    return { draft, label: `GET console ${path.split("/").slice(0, 2).join("/")}`, fields: [] };
  }
  if (target === "unknown") {
    const path = random.pick([
      "/api/v1/",
      "/api/v1/nothing",
      "/v2/me",
      "/api/v1/agent-api/nothing",
      "/.env",
      "/api/v1/agents/x/y/z",
      "/api",
      "/v1",
      "/api/v1/live",
      "/api/v1/agent-api/socket",
    ]);
    const method = random.pick(["GET", "POST", "DELETE"]);
    const credential = random.pick<Credential>(["owner", "none", "agent"]);
    return { draft: newDraft(method, path, credential, context), label: `${method} (unknown path)`, fields: [] };
  }
  const route: HttpRoute = only.route ?? random.pick(HTTP_ROUTES);
  const sample = route.sample(context.fixtures, random);
  if (only.body !== undefined) sample.body = only.body;
  const prefix = random.pick(MOUNTS[route.mount]);
  const params = Object.fromEntries(
    Object.entries(sample.params ?? {}).map(([key, value]) => [key, encodeURIComponent(value)]),
  );
  const draft = newDraft(route.method, prefix + fillPath(route.path, params), sample.credential, context);
  draft.query = encodeQuery(sample.query);
  if (sample.body !== undefined) {
    draft.hasValue = true;
    draft.value = sample.body;
    draft.headers.push(["Content-Type", "application/json"]);
  }
  return { draft, label: routeLabel(route), fields: route.fields };
}

/** Narrows a case: one route, its sample unmutated, a body of one's own. */
export interface CaseOptions {
  route?: HttpRoute;
  unmutated?: boolean;
  body?: unknown;
}

export function buildHttpCase(index: number, random: Random, context: CaseContext, only: CaseOptions = {}): HttpCase {
  const { draft, label, fields } = baseDraft(random, context, only);
  const count = only.unmutated
    ? 0
    : random.weighted<number>([
        [0, 10],
        [1, 45],
        [2, 30],
        [3, 15],
      ]);
  const chosen: Mutation[] = [];
  for (let i = 0; i < count; i++)
    chosen.push(random.weighted(MUTATIONS.map((mutation) => [mutation, mutation.weight] as const)));
  for (const phase of BY_PHASE) {
    if (phase === "raw") serialise(draft);
    for (const mutation of chosen.filter((candidate) => candidate.phase === phase)) {
      if (mutation.applies && !mutation.applies(draft)) continue;
      mutation.apply(draft, random, context);
      draft.mutations.push(mutation.name);
    }
  }
  if (draft.length === "auto" && draft.body !== undefined)
    draft.headers.push(["Content-Length", String(draft.body.length)]);
  const target = draft.query === "" ? draft.path : `${draft.path}?${draft.query}`;
  const request: RawRequest = {
    method: draft.method,
    target,
    headers: draft.headers,
    body: draft.body,
    ...(draft.incomplete ? { halfCloseAfterMs: 300 } : {}),
  };
  if (draft.version !== "HTTP/1.1") {
    const head = serializeWithVersion(request, draft.version);
    request.raw = head;
  }
  const mayGoUnanswered = draft.incomplete || (draft.body?.length ?? 0) > SMALLEST_BODY_LIMIT;
  return { id: `h${index}`, label, fields, request, mayGoUnanswered, mutations: draft.mutations };
}

function serializeWithVersion(request: RawRequest, version: string): Buffer {
  const parts: Buffer[] = [Buffer.from(`${request.method} ${request.target} ${version}\r\n`, "utf8")];
  for (const [name, value] of request.headers)
    parts.push(
      Buffer.from(`${name}: `),
      typeof value === "string" ? Buffer.from(value, "utf8") : value,
      Buffer.from("\r\n"),
    );
  parts.push(Buffer.from("\r\n"));
  if (request.body) parts.push(request.body);
  return Buffer.concat(parts);
}
