import { CONTROL_TOKENS } from "../../relay/src/completion/controlTokens";
import type { Fixtures } from "./fixtures";
import type { Random } from "./random";

/**
 * Every HTTP route and WebSocket endpoint of the relay, each with a valid sample request for the fuzzer to mutate.
 * `catalogue.test.ts` walks the routes the express app really registers (and the upgrade paths) and fails when one
 * is missing here, so a new route cannot skip the fuzz suite.
 */

/** Who a request is made as; the fuzzer resolves these against the fixtures and may swap them for others. */
export type Credential =
  | "owner"
  | "admin"
  | "member"
  | "guest"
  | "tabOnly"
  | "messagesRead"
  | "keysWrite"
  | "agentsRead"
  | "workspaceRead"
  | "revoked"
  | "session"
  | "victimSession"
  | "agent"
  | "none";

export interface Sample {
  params?: Record<string, string>;
  query?: [string, string][];
  body?: unknown;
  credential: Credential;
}

/** Where a group of routes is mounted: each prefix serves the same routes. */
export const MOUNTS = {
  api: ["/api/v1", "/v1"],
  agentApi: ["/api/v1/agent-api", "/v1/agent-api"],
  root: [""],
} as const;
export type Mount = keyof typeof MOUNTS;

export interface HttpRoute {
  kind: "http";
  method: string;
  mount: Mount;
  /** The express pattern inside the mount (`/agents/:id`). */
  path: string;
  /** The top-level fields of the body's schema: a VALIDATION_ERROR must name one of them (or `path`, `query`, `body`). */
  fields: readonly string[];
  sample(fixtures: Fixtures, random: Random): Sample;
}

/**
 * A route whose express path is a regular expression (the console's pages): matched by its source, with sample paths
 * that cover each alternative.
 */
export interface PatternRoute {
  kind: "pattern";
  method: "GET";
  source: string;
  samples(fixtures: Fixtures): string[];
}

/** The console's files, served by express.static: sampled from the built folder at run time. */
export interface StaticRoute {
  kind: "static";
  method: "GET";
}

export interface SocketRoute {
  kind: "socket";
  /** Full paths, as the upgrade handler matches them. */
  paths: readonly string[];
  credential: "session" | "agent";
}

/**
 * Where fuzzed agents' webhooks point: the discard port on loopback (the fuzz relay allows private addresses), so a
 * delivery fails at once and nothing leaves the machine.
 */
export const WEBHOOK_URL = "http://127.0.0.1:9/hook";
const name = (random: Random, prefix: string) => `${prefix}-${random.int(0, 1_000_000).toString(36)}`;

/** tab_context's text fields: where a repository's text (and so any model family's control tokens) can be. */
export const TAB_TEXT_FIELDS = [
  "active_text_before_cursor",
  "active_text_after_cursor",
  "surrounding_context",
  "file_path",
  "entity_id",
  "code_language",
  "block_kind",
  "note_title",
  "document_title",
] as const;

/** Text holding one model family's control tokens (issue 19: one of them once stopped the relay). */
export function controlTokenText(random: Random): string {
  const family = random.pick(Object.values(CONTROL_TOKENS));
  const tokens = random.chance(0.5) ? [random.pick(family)] : family;
  return random.pick([tokens.join(""), `x = "${tokens.join('"\n"')}";`, tokens.join(" ")]);
}

export function completionSample(fixtures: Fixtures, random: Random) {
  const surface = random.pick(["code", "notes", "docs", "messages", "tasks", "calendar", "email"]);
  const sample = {
    model: "tab-v1",
    stream: random.chance(0.5),
    ...(random.chance(0.3) ? { stream_options: { include_usage: true } } : {}),
    ...(random.chance(0.3) ? { max_completion_tokens: random.int(1, 500) } : {}),
    tab_context: {
      surface,
      workspace_slug: fixtures.slug,
      entity_id: "src/add.ts",
      document_type: random.pick(["plaintext", "markdown"]),
      active_text_before_cursor: "function add(a, b) {\n  return a + b;\n}\n\nfunction add(a, b) {",
      active_text_after_cursor: "\n",
      surrounding_context: "// math helpers",
      code_language: "typescript",
      file_path: "src/add.ts",
      ...(surface === "tasks" ? { taskboard_file_id: "board-1" } : {}),
    } as Record<string, string>,
  };
  if (random.chance(0.3)) {
    const field = random.pick(TAB_TEXT_FIELDS);
    sample.tab_context[field] = `${sample.tab_context[field] ?? ""}${controlTokenText(random)}`.slice(0, 128);
  }
  return sample;
}

/** A rename on line 1 whose next occurrence is on line 2: the local engine proposes it. */
export function nextEditSample(fixtures: Fixtures, random: Random) {
  return {
    workspace_slug: fixtures.slug,
    file_path: "src/add.ts",
    code_language: "typescript",
    document_version: random.int(0, 1000),
    excerpt: { start_line: 10, text: "function add(total, b) {\n  return sum + b;\n}" },
    editable_region: { start_line: 10, end_line: 13 },
    cursor: { line: 10, character: random.int(0, 18) },
    recent_edits: [
      {
        file_path: "src/add.ts",
        start_line: 10,
        old_lines: ["function add(sum, b) {"],
        new_lines: ["function add(total, b) {"],
      },
    ],
    ...(random.chance(0.3) ? { surrounding_context: "--- file: src/util.ts ---\nexport const one = 1;" } : {}),
  };
}

const conversation = (fixtures: Fixtures, random: Random) =>
  random.pick([
    { type: "channel", id: fixtures.channel.id },
    { type: "dm", id: fixtures.dm.id },
    { type: "channel", id: fixtures.privateChannel.id },
  ]);

const pagingQuery = (fixtures: Fixtures, random: Random): [string, string][] => [
  ...(random.chance(0.7) ? [["limit", String(random.int(1, 100))] as [string, string]] : []),
  ...(random.chance(0.3) ? [["before", fixtures.message.id] as [string, string]] : []),
  ...(random.chance(0.2) ? [["thread_id", fixtures.message.id] as [string, string]] : []),
];

const http = (
  method: string,
  mount: Mount,
  path: string,
  fields: readonly string[],
  sample: HttpRoute["sample"],
): HttpRoute => ({
  kind: "http",
  method,
  mount,
  path,
  fields,
  sample,
});

export const HTTP_ROUTES: readonly HttpRoute[] = [
  // The main API (README: API reference).
  http(
    "POST",
    "api",
    "/tab/chat/completions",
    ["model", "stream", "stream_options", "tab_context", "max_completion_tokens", "tab_raw_text"],
    (f, r) => ({
      credential: r.pick(["owner", "tabOnly"]),
      body: completionSample(f, r),
    }),
  ),
  http("GET", "api", "/tab/models", [], () => ({ credential: "tabOnly" })),
  // The openai SDK's base URL: OpenAI's model list and the same completion route (docs/api.md#with-the-openai-sdk).
  http("GET", "api", "/tab/openai/models", [], () => ({ credential: "tabOnly" })),
  http("GET", "api", "/tab/openai/models/:id", [], () => ({ credential: "tabOnly", params: { id: "tab-v1" } })),
  http(
    "POST",
    "api",
    "/tab/openai/chat/completions",
    ["model", "stream", "stream_options", "tab_context", "max_completion_tokens", "tab_raw_text"],
    (f, r) => ({
      credential: r.pick(["owner", "tabOnly"]),
      body: completionSample(f, r),
    }),
  ),
  // Usage reports and insights (docs/api.md#usage-insights).
  http("POST", "api", "/tab/events", ["events"], (_f, r) => ({
    credential: r.pick(["owner", "tabOnly", "member"]),
    body: {
      events: Array.from({ length: r.int(1, 5) }, (_, i) => ({
        id: `chatcmpl-fuzz${i}`,
        outcome: r.pick(["accepted", "accepted_partial", "dismissed", "typed_over"]),
        shown_chars: 40,
        accepted_chars: r.int(0, 40),
        shown_lines: 3,
        accepted_lines: r.int(0, 3),
        time_to_ghost_ms: r.int(0, 5000),
        ...(r.chance(0.5) ? { language: r.pick(["typescript", "python", "go"]) } : {}),
      })),
    },
  })),
  http("GET", "api", "/tab/usage", [], (_f, r) => ({
    credential: r.pick(["owner", "admin", "member", "tabOnly"]),
    query: [
      ...(r.chance(0.5) ? [["group_by", r.pick(["day", "user", "language", "model"])] as [string, string]] : []),
      ...(r.chance(0.3) ? [["since", "2026-01-01"] as [string, string]] : []),
      ...(r.chance(0.3) ? [["until", "2026-12-31"] as [string, string]] : []),
    ],
  })),
  http("GET", "api", "/me", [], (_f, r) => ({ credential: r.pick(["owner", "guest", "tabOnly"]) })),
  http("POST", "api", "/api-keys", ["name", "scopes"], (_f, r) => ({
    credential: "owner",
    body: {
      name: name(r, "key"),
      scopes: r.pick([["tab.complete"], ["messages.read", "messages.write"], ["workspace.read"]]),
    },
  })),
  http("GET", "api", "/api-keys", [], () => ({ credential: "keysWrite" })),
  http("DELETE", "api", "/api-keys/:id", [], (f) => ({ credential: "owner", params: { id: f.victimKeyId } })),
  http("GET", "api", "/users", [], () => ({ credential: "workspaceRead" })),
  http("POST", "api", "/users", ["name", "role"], (_f, r) => ({
    credential: r.pick(["owner", "admin"]),
    body: { name: name(r, "Person"), role: r.pick(["admin", "member", "guest"]) },
  })),
  // The admin kept as admin: a change that succeeds without narrowing the keys the other samples use (the victim
  // user is removed early in a run, after which re-roling them is a 404).
  http("PATCH", "api", "/users/:id", ["role"], (f, r) => ({
    credential: r.pick(["owner", "admin"]),
    params: { id: r.chance(0.8) ? f.admin.id : f.victimUserId },
    body: { role: "admin" },
  })),
  http("DELETE", "api", "/users/:id", [], (f) => ({ credential: "owner", params: { id: f.victimUserId } })),
  http("GET", "api", "/audit", [], (f, r) => ({
    credential: r.pick(["owner", "admin", "member"]),
    query: [
      ...(r.chance(0.5) ? [["limit", String(r.int(1, 100))] as [string, string]] : []),
      ...(r.chance(0.3) ? [["since", "2026-01-01T00:00:00Z"] as [string, string]] : []),
      ...(r.chance(0.3) ? [["actor", f.admin.id] as [string, string]] : []),
      ...(r.chance(0.3)
        ? [["action", r.pick(["api_key.created", "agent.created", "user.role_changed"])] as [string, string]]
        : []),
    ],
  })),
  http("POST", "api", "/sessions", ["api_key"], (f, r) => ({
    credential: "none",
    body: {
      api_key: r.chance(0.8)
        ? f.signInKey
        : r.pick([f.revokedKey, f.agent.token, f.narrow.tabOnly, `svc_ws_${"A".repeat(36)}`]),
    },
  })),
  http("GET", "api", "/sessions/current", [], () => ({ credential: "session" })),
  http("DELETE", "api", "/sessions/current", [], () => ({ credential: "victimSession" })),
  http("POST", "api", "/channels", ["name", "visibility"], (_f, r) => ({
    credential: r.pick(["owner", "member"]),
    body: { name: name(r, "room"), visibility: r.pick(["public", "private"]) },
  })),
  http("POST", "api", "/channels/:id/members", ["user_id", "agent_id"], (f, r) => ({
    credential: "owner",
    params: { id: f.channel.id },
    body: r.chance(0.5) ? { user_id: f.admin.id } : { agent_id: f.managedAgent.id },
  })),
  http("POST", "api", "/dms", ["member_ids"], (f, r) => ({
    credential: r.pick(["owner", "member"]),
    body: { member_ids: r.chance(0.5) ? [f.admin.id] : [f.member.id, f.agent.id] },
  })),
  http("GET", "api", "/conversations", [], (_f, r) => ({ credential: r.pick(["owner", "guest", "messagesRead"]) })),
  http("GET", "api", "/conversations/:type/:id/messages", [], (f, r) => ({
    credential: r.pick(["owner", "messagesRead"]),
    params: conversation(f, r),
    query: pagingQuery(f, r),
  })),
  http("POST", "api", "/conversations/:type/:id/messages", ["text", "thread_id"], (f, r) => ({
    credential: r.pick(["owner", "member"]),
    params: { type: "channel", id: f.channel.id },
    body: {
      text: r.pick(["hi there", "hey @Fuzz Agent, what's up?", "/aside a private note", "@Ada Admin look"]),
      ...(r.chance(0.3) ? { thread_id: f.message.id } : {}),
    },
  })),
  http("GET", "api", "/notifications", [], (f, r) => ({
    credential: "owner",
    query: pagingQuery(f, r).filter(([k]) => k !== "thread_id"),
  })),
  http("POST", "api", "/agents", ["name", "description", "webhook_url"], (_f, r) => ({
    credential: r.pick(["owner", "member"]),
    body: {
      name: name(r, "Bot"),
      description: "made by the fuzzer",
      ...(r.chance(0.5) ? { webhook_url: WEBHOOK_URL } : {}),
    },
  })),
  http("GET", "api", "/agents", [], (_f, r) => ({ credential: r.pick(["owner", "agentsRead"]) })),
  http("GET", "api", "/agents/:id", [], (f, r) => ({
    credential: r.pick(["owner", "agentsRead"]),
    params: { id: r.pick([f.agent.id, f.managedAgent.id]) },
  })),
  http("PATCH", "api", "/agents/:id", ["name", "description", "webhook_url"], (f, r) => ({
    credential: "owner",
    params: { id: f.managedAgent.id },
    body: r.pick([
      { description: "changed" },
      { name: "Managed Agent" },
      { webhook_url: null },
      { webhook_url: `${WEBHOOK_URL}/x` },
    ]),
  })),
  ...(["pause", "resume", "token", "signing-secret", "test-event"] as const).map((action) =>
    http("POST", "api", `/agents/:id/${action}`, [], (f) => ({
      credential: "owner",
      params: { id: f.managedAgent.id },
    })),
  ),
  http("DELETE", "api", "/agents/:id", [], (f) => ({ credential: "owner", params: { id: f.victimAgentId } })),
  http("GET", "api", "/agents/:id/deliveries", [], (f, r) => ({
    credential: "owner",
    params: { id: f.managedAgent.id },
    query: r.chance(0.6) ? [["limit", String(r.int(1, 100))]] : [],
  })),
  http("POST", "api", "/agents/:id/deliveries/:delivery_id/redeliver", [], (f) => ({
    credential: "owner",
    params: { id: f.managedAgent.id, delivery_id: f.managedAgent.deliveryId },
  })),

  // The Agent API.
  http("GET", "agentApi", "/me", [], () => ({ credential: "agent" })),
  http("GET", "agentApi", "/conversations", [], () => ({ credential: "agent" })),
  http("GET", "agentApi", "/conversations/:type/:id/messages", [], (f, r) => ({
    credential: "agent",
    params: r.chance(0.5) ? { type: "dm", id: f.dm.id } : { type: "channel", id: f.channel.id },
    query: pagingQuery(f, r),
  })),
  http("POST", "agentApi", "/conversations/:type/:id/messages", ["text", "thread_id"], (f, r) => ({
    credential: "agent",
    params: r.chance(0.5) ? { type: "dm", id: f.dm.id } : { type: "channel", id: f.channel.id },
    body: { text: "an answer from the agent", ...(r.chance(0.3) ? { thread_id: f.message.id } : {}) },
  })),

  // The API's OpenAPI document (docs/api.md): public.
  http("GET", "api", "/openapi.json", [], (_f, r) => ({ credential: r.pick(["none", "owner"]) })),

  // Operations: no authentication.
  http("GET", "root", "/healthz", [], () => ({ credential: "none" })),
  http("GET", "root", "/readyz", [], () => ({ credential: "none" })),
  http("GET", "root", "/metrics", [], () => ({ credential: "none" })),
  // Next edits (docs/api.md#next-edits), last so that the samples drawn before it stay as they were.
  http(
    "POST",
    "api",
    "/tab/next-edits",
    [
      "model",
      "workspace_slug",
      "file_path",
      "code_language",
      "document_version",
      "excerpt",
      "editable_region",
      "cursor",
      "recent_edits",
      "surrounding_context",
    ],
    (f, r) => ({ credential: r.pick(["owner", "tabOnly"]), body: nextEditSample(f, r) }),
  ),
  // The VS Code extension's package (relay/src/routes/downloads.ts): public.
  http("GET", "root", "/downloads/tab-relay.vsix", [], () => ({ credential: "none" })),
];

/** The console's pages (relay/src/routes/console.ts), by the source of the pattern they were reviewed against. */
export const PATTERN_ROUTES: readonly PatternRoute[] = [
  {
    kind: "pattern",
    method: "GET",
    source: String.raw`^\/(?:$|signin$|keys$|playground$|people$|audit$|insights$|agents(?:\/[^/]+)?$|conversations\/(?:channel|dm)\/[^/]+(?:\/messages\/[^/]+)?$)`,
    samples: (f) => [
      "/",
      "/signin",
      "/keys",
      "/playground",
      "/people",
      "/audit",
      "/insights",
      "/agents",
      `/agents/${f.agent.id}`,
      `/conversations/channel/${f.channel.id}`,
      `/conversations/dm/${f.dm.id}`,
      `/conversations/channel/${f.channel.id}/messages/${f.message.id}`,
    ],
  },
  // Any other GET outside the API (relay/src/routes/console.ts): a browser's mistyped console address gets the
  // console's not-found page (404, HTML); anything preferring JSON falls through to the JSON NOT_FOUND.
  {
    kind: "pattern",
    method: "GET",
    source: ".*",
    samples: (f) => ["/consol", `/agents/${f.agent.id}/nothing`, "/no/such/page"],
  },
];

export const STATIC_ROUTES: readonly StaticRoute[] = [{ kind: "static", method: "GET" }];

export const SOCKET_ROUTES: readonly SocketRoute[] = [
  { kind: "socket", paths: ["/api/v1/live", "/v1/live"], credential: "session" },
  { kind: "socket", paths: ["/api/v1/agent-api/socket", "/v1/agent-api/socket"], credential: "agent" },
];

/** Every field name a body of any route has, for checking that validation messages name a field. */
export const BODY_FIELDS: ReadonlySet<string> = new Set(HTTP_ROUTES.flatMap((route) => route.fields));

/** `METHOD /full/path` for every route and mount prefix, as the completeness test compares them. */
export function catalogueKeys(): Set<string> {
  const keys = new Set<string>();
  for (const route of HTTP_ROUTES)
    for (const prefix of MOUNTS[route.mount]) keys.add(`${route.method} ${prefix}${route.path}`);
  for (const route of PATTERN_ROUTES) keys.add(`${route.method} re:${route.source}`);
  for (const route of STATIC_ROUTES) keys.add(`${route.method} static`);
  return keys;
}

/** How a route is named in reports: `POST /api/v1/agents/:id/pause`. */
export function routeLabel(route: HttpRoute): string {
  return `${route.method} ${MOUNTS[route.mount][0]}${route.path}`;
}

/** Fills `:name` segments of an express pattern. */
export function fillPath(pattern: string, params: Record<string, string> = {}): string {
  return pattern.replace(/:([A-Za-z_]+)/g, (_match, key: string) => params[key] ?? `missing-${key}`);
}
