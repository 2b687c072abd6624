/**
 * The OpenAPI 3.1 document of the relay's API, built from the operations (operations.ts) and the zod schemas the routes
 * validate with (request bodies, queries, paths) and describe their answers with (answers.ts), through zod's own JSON
 * Schema output (draft 2020-12, OpenAPI 3.1's dialect). Served at /api/v1/openapi.json; docs/api.md links it.
 */
import { ERROR_CODES, TAB_LIMITS } from "@tab-relay/shared";
import { z } from "zod";
import { ANSWER_COMPONENTS } from "./answers";
import { type Answer, MOUNTS, OPERATIONS, type Operation } from "./operations";

type Json = Record<string, unknown>;

const SCHEMAS = "#/components/schemas/";
const ref = (name: string) => ({ $ref: `${SCHEMAS}${name}` });

const STATUS_TEXT: Record<number, string> = {
  400: "The request is malformed; the message names the field (`VALIDATION_ERROR`)",
  401: "No valid credential (`UNAUTHORIZED`, `INVALID_TOKEN`)",
  403: "The credential may not do this (`FORBIDDEN`, `AGENT_PAUSED`, `NOT_IN_CONVERSATION`)",
  404: "No such resource in this workspace (`NOT_FOUND`)",
  409: "It conflicts with what exists (`CONFLICT`)",
  413: "The body is too large (`PAYLOAD_TOO_LARGE`)",
  415: "The body is not JSON in UTF-8 (`UNSUPPORTED_MEDIA_TYPE`)",
  429: "Over the rate limit (`RATE_LIMIT_EXCEEDED`); wait for Retry-After",
  500: "The relay failed (`INTERNAL_ERROR`)",
  502: "The model server failed (`UPSTREAM_ERROR`)",
  503: "Shutting down, or the database is away (`SERVICE_UNAVAILABLE`); retry after Retry-After",
  504: "The model server did not answer in time (`UPSTREAM_TIMEOUT`)",
};

const TAG_DESCRIPTIONS: Record<string, string> = {
  Tab: "Inline completions (docs/api.md#completions), in OpenAI's shapes",
  Usage: "What became of suggestions, and the figures read back (docs/api.md#usage-insights)",
  Keys: "API keys and their scopes (docs/api.md#authentication-and-keys)",
  People: "The workspace's people and roles (docs/api.md#people-and-conversations)",
  Audit: "Security-relevant changes (docs/api.md#audit-log)",
  Sessions: "Console sign-in and live updates (docs/api.md#console-sessions-and-live-updates)",
  Conversations: "Channels, DMs, messages and notifications (docs/api.md#people-and-conversations)",
  Agents: "Connecting and managing outside agents, and their delivery log (docs/api.md#outside-agents)",
  "Agent API": "What an agent calls with its token (docs/api.md#agent-api), and Socket Mode",
  Operations: "Health, readiness, metrics and this document (docs/operating.md)",
};

/** The OpenAPI path of an express pattern: `/agents/:id` → `/agents/{id}`. */
export function openApiPath(operation: Pick<Operation, "mount" | "path">): string {
  return `${MOUNTS[operation.mount][0]}${operation.path}`.replace(/:([A-Za-z_]+)/g, "{$1}");
}

/** zod's JSON Schema, without what only a standalone schema carries (`$schema`, and a fragment `$id`). */
function clean(schema: Json): Json {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return rest;
}

function jsonSchema(schema: z.ZodType, io: "input" | "output"): Json {
  return clean(z.toJSONSchema(schema, { io, unrepresentable: "any" }));
}

/** The components built from a registry in one pass, so a schema named there is referenced wherever it is used. */
function componentSchemas(named: Record<string, z.ZodType>, io: "input" | "output"): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    io,
    unrepresentable: "any",
    uri: (id) => `${SCHEMAS}${id}`,
  }) as { schemas: Record<string, Json> };
  return Object.fromEntries(Object.entries(schemas).map(([id, schema]) => [id, clean(schema)]));
}

/** Path or query parameters from the zod object a route parses them with. */
function parameters(schema: z.ZodObject | undefined, where: "path" | "query"): Json[] {
  if (schema === undefined) return [];
  const object = jsonSchema(schema, "input") as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: where,
      required: where === "path" || (object.required ?? []).includes(name),
      ...(typeof description === "string" ? { description } : {}),
      schema: rest,
    };
  });
}

const RATE_LIMIT_HEADERS = {
  "X-RateLimit-Limit": { $ref: "#/components/headers/X-RateLimit-Limit" },
  "X-RateLimit-Remaining": { $ref: "#/components/headers/X-RateLimit-Remaining" },
  "X-RateLimit-Reset": { $ref: "#/components/headers/X-RateLimit-Reset" },
};

function answerContent(answer: Answer): Json | undefined {
  if ("data" in answer) {
    const data = Array.isArray(answer.data) ? { type: "array", items: ref(answer.data[0]) } : ref(answer.data);
    return {
      "application/json": {
        schema: { type: "object", properties: { data }, required: ["data"], additionalProperties: false },
      },
    };
  }
  if ("body" in answer) return { "application/json": { schema: ref(answer.body) } };
  if ("stream" in answer)
    return {
      "text/event-stream": {
        schema: {
          type: "string",
          description: `Server-sent events: \`data: <${answer.stream}>\` frames, then \`data: [DONE]\``,
          // JSON Schema 2020-12's annotation for what a string holds: each frame's data is one of these.
          contentMediaType: "application/json",
          contentSchema: ref(answer.stream),
        },
      },
    };
  if ("text" in answer)
    return { [answer.text]: { schema: answer.text === "application/json" ? { type: "object" } : { type: "string" } } };
  return undefined;
}

function responses(operation: Operation): Json {
  const rateLimited = operation.rateLimited !== false;
  const headers = rateLimited ? { headers: RATE_LIMIT_HEADERS } : {};
  const out: Record<string, Json> = {};
  for (const answer of operation.answers) {
    const key = String(answer.status);
    const content = answerContent(answer);
    const existing = out[key];
    if (existing !== undefined && content !== undefined) {
      // Two shapes under one status (a completion, whole or streamed): both media types.
      existing["content"] = { ...(existing["content"] as Json), ...content };
      existing["description"] = `${String(existing["description"])}. ${answer.description}`;
      continue;
    }
    out[key] = { description: answer.description, ...headers, ...(content ? { content } : {}) };
  }
  // Every path answers 400 when it does not percent-decode (docs/api.md), before anything else.
  const refusals = new Set<number>([400, ...(operation.refusals ?? [])]);
  if (operation.auth !== "none") refusals.add(401);
  if (operation.auth !== "none") refusals.add(403);
  if (operation.params) refusals.add(404);
  if (operation.body) refusals.add(413).add(415);
  if (rateLimited) refusals.add(429);
  refusals.add(503);
  for (const status of [...refusals].sort((a, b) => a - b)) {
    out[String(status)] =
      status === 429 ? { $ref: "#/components/responses/RateLimited" } : errorResponse(status, headers);
  }
  return out;
}

function errorResponse(status: number, headers: Json): Json {
  return {
    description: STATUS_TEXT[status] ?? "Refused",
    ...headers,
    content: { "application/json": { schema: ref("Error") } },
  };
}

function security(operation: Operation): Json[] {
  switch (operation.auth) {
    case "keyOrSession":
      return [{ apiKey: [] }, { session: [] }];
    case "agent":
      return [{ agentToken: [] }];
    case "none":
      return [];
  }
}

function operationObject(operation: Operation): Json {
  const scope = operation.scope ? `Scope: \`${operation.scope}\`.` : "";
  const description = [scope, operation.description].filter(Boolean).join(" ");
  return {
    operationId: operation.operationId,
    tags: [operation.tag],
    summary: operation.summary,
    ...(description ? { description } : {}),
    ...(operation.scope ? { "x-scope": operation.scope } : {}),
    security: security(operation),
    ...(operation.params || operation.query
      ? { parameters: [...parameters(operation.params, "path"), ...parameters(operation.query, "query")] }
      : {}),
    ...(operation.body && operation.bodyName
      ? { requestBody: { required: true, content: { "application/json": { schema: ref(operation.bodyName) } } } }
      : {}),
    responses: responses(operation),
  };
}

function webhook(name: string, summary: string, schema: string): Json {
  const header = (header: string, description: string) => ({
    name: header,
    in: "header",
    required: true,
    description,
    schema: { type: "string" },
  });
  return {
    post: {
      operationId: `webhook_${name.replace(/\W/g, "_")}`,
      summary,
      // Signed by the relay (the webhook-signature header), not authenticated with one of the API's schemes.
      security: [],
      description:
        "Sent to the agent's webhook URL, signed as Standard Webhooks v1 (docs/api.md#webhook-events); the same body and headers travel over Socket Mode. Verify the signature over the raw body. Any 2xx is delivered; anything else is tried again for about a day under the same webhook-id (410 and 413 stop it).",
      parameters: [
        header("webhook-id", "The event id, the same on every attempt: drop repeats"),
        header("webhook-timestamp", "Unix seconds of this attempt"),
        header("webhook-signature", "`v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`, space-separated"),
      ],
      requestBody: { required: true, content: { "application/json": { schema: ref(schema) } } },
      responses: {
        "2XX": { description: "Delivered (answer at once, then do the work)" },
        default: { description: "Not delivered: tried again later" },
      },
    },
  };
}

function build(version: string): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const requests: Record<string, z.ZodType> = {};
  for (const operation of OPERATIONS) {
    const path = openApiPath(operation);
    paths[path] = { ...paths[path], [operation.method]: operationObject(operation) };
    if (operation.body && operation.bodyName) requests[operation.bodyName] = operation.body;
  }
  const errorCodes = Object.keys(ERROR_CODES);
  const schemas = {
    ...componentSchemas(ANSWER_COMPONENTS, "output"),
    ...componentSchemas(requests, "input"),
  };
  const error = schemas["Error"] as { properties: { error: { properties: { code: Json } } } };
  error.properties.error.properties.code = {
    type: "string",
    enum: errorCodes,
    description: "Branch on this, never on the message (docs/api.md#error-codes)",
  };
  const rateHeader = (description: string) => ({ description, schema: { type: "integer" } });
  return {
    openapi: "3.1.0",
    info: {
      title: "tab-relay",
      version,
      summary: "Inline completions, conversations and outside agents",
      description: [
        "The self-hostable relay behind the Tab extension (docs/api.md is the reference this document follows).",
        "Every route also answers under `/v1` in place of `/api/v1`.",
        'Answers are `{ "data": … }` (the completion routes answer in OpenAI\'s shapes); refusals are the error envelope `{ "error": { "code", "message" } }`.',
        `A completion's \`tab_context.active_text_before_cursor\` holds at most ${TAB_LIMITS.activeTextBeforeCursor} characters.`,
      ].join("\n\n"),
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: "/", description: "The relay that serves this document" }],
    tags: [...new Set(OPERATIONS.map((operation) => operation.tag))].map((name) => ({
      name,
      description: TAG_DESCRIPTIONS[name] ?? name,
    })),
    paths,
    webhooks: {
      "message.created": webhook(
        "message.created",
        "A person mentioned the agent, wrote it a DM, or replied in a thread it posted in",
        "MessageCreatedEvent",
      ),
      ping: webhook("ping", "Send test event (tried once)", "PingEvent"),
    },
    components: {
      schemas,
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "A workspace API key, `svc_ws_…`" },
        session: {
          type: "apiKey",
          in: "cookie",
          name: "tab_session",
          description:
            "The console's session cookie (`__Host-tab_session` behind https); writes also send `X-CSRF-Token` from the session",
        },
        agentToken: { type: "http", scheme: "bearer", description: "An agent token, `svc_agent_…`" },
      },
      headers: {
        "X-RateLimit-Limit": rateHeader("Requests allowed in the current 60-second window"),
        "X-RateLimit-Remaining": rateHeader("Requests left in the window"),
        "X-RateLimit-Reset": rateHeader("When the window ends, in Unix seconds"),
        "Retry-After": rateHeader("Seconds to wait; the same moment as X-RateLimit-Reset"),
      },
      responses: {
        RateLimited: {
          description: STATUS_TEXT[429],
          headers: { ...RATE_LIMIT_HEADERS, "Retry-After": { $ref: "#/components/headers/Retry-After" } },
          content: { "application/json": { schema: ref("Error") } },
        },
      },
    },
  };
}

let built: { version: string; text: string } | undefined;

/** The document as JSON text, built once per version (it takes some milliseconds, and never changes while serving). */
export function openApiDocumentText(version: string): string {
  if (built?.version !== version) built = { version, text: JSON.stringify(build(version)) };
  return built.text;
}

export function openApiDocument(version: string): Json {
  return JSON.parse(openApiDocumentText(version)) as Json;
}
