/**
 * Every HTTP route of the relay, as the OpenAPI document (relay/src/openapi/document.ts) describes it: where it is
 * mounted, who may call it, the zod schemas its handler validates its path, query and body with (the same objects,
 * imported from the route files), and what it answers (schemas from answers.ts, by name).
 *
 * Adding a route is adding one entry here. test/openapi/catalogue.test.ts walks the routes the express app really
 * registers and fails, naming them, when one is missing here (or listed here and not served).
 */
import {
  CompletionRequest,
  NextEditRequest,
  OPENAI_BASE_PATH,
  OPENAI_COMPLETIONS_PATH,
  type Scope,
  TAB_COMPLETIONS_PATH,
  TAB_NEXT_EDITS_PATH,
  TabUsageBatch,
} from "@tab-relay/shared";
import type { z } from "zod";
import {
  AddMemberBody,
  ConversationParams,
  CreateChannelBody,
  CreateDmBody,
  MessagesQuery,
  NotificationsQuery,
  PostMessageBody,
} from "../conversations/schemas";
import { AgentParams, DeliveriesQuery, DeliveryParams, agentBodies } from "../routes/agents";
import { CreateApiKeyBody, KeyIdParams } from "../routes/apiKeys";
import { AuditQuery } from "../routes/audit";
import { ChannelParams } from "../routes/conversations";
import { SignInBody } from "../routes/sessions";
import { ModelParams } from "../routes/tab";
import { UsageQuery } from "../routes/usage";
import { CreateUserBody, PatchUserBody, UserParams } from "../routes/users";
import type { ANSWER_COMPONENTS } from "./answers";

/** Where a group of routes is mounted; each prefix serves the same routes (docs/api.md, "Base paths"). */
export const MOUNTS = {
  api: ["/api/v1", "/v1"],
  agentApi: ["/api/v1/agent-api", "/v1/agent-api"],
  root: [""],
} as const;
export type Mount = keyof typeof MOUNTS;

/**
 * How a route is authenticated: an API key (`Authorization: Bearer svc_ws_…`) or the console's session cookie, the
 * agent token (`Authorization: Bearer svc_agent_…`), or nothing.
 */
export type Auth = "keyOrSession" | "agent" | "none";

export type ComponentName = keyof typeof ANSWER_COMPONENTS;

/** One success answer: `data` wraps the named schema (or a list of it) in `{ "data": … }`, `body` is the schema as is. */
export type Answer = { status: number; description: string } & (
  | { data: ComponentName | [ComponentName] }
  | { body: ComponentName }
  | { stream: ComponentName }
  | { text: string }
  | { upgrade: true }
);

export interface Operation {
  method: "get" | "post" | "patch" | "delete";
  mount: Mount;
  /** The express pattern inside the mount (`/agents/:id`). */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  auth: Auth;
  /** The scope a key needs (docs/api.md#authentication-and-keys); `description` says when it is more than one. */
  scope?: Scope;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** The component name of the request body's schema. */
  bodyName?: string;
  answers: Answer[];
  /** Refusal statuses beyond those the route's shape implies (400 with input, 401 with auth, 403 with a scope, …). */
  refusals?: number[];
  /** Counted against the rate limits (every route but health, metrics and the document itself). */
  rateLimited?: boolean;
}

const { CreateAgentBody, PatchAgentBody } = agentBodies(false);

const completionAnswers: Answer[] = [
  { status: 200, description: "Without `stream: true`: the whole answer, in OpenAI's shape", body: "ChatCompletion" },
  {
    status: 200,
    description:
      "With `stream: true`: server-sent events, each `data:` line a ChatCompletionChunk, then `data: [DONE]`; a failure after the first chunk is an `event: error` frame holding the error envelope",
    stream: "ChatCompletionChunk",
  },
];

const agentAction = (action: "pause" | "resume", summary: string): Operation => ({
  method: "post",
  mount: "api",
  path: `/agents/:id/${action}`,
  operationId: `${action}Agent`,
  tag: "Agents",
  summary,
  auth: "keyOrSession",
  scope: "agents.write",
  params: AgentParams,
  answers: [{ status: 200, description: "The agent", data: "Agent" }],
});

export const OPERATIONS: readonly Operation[] = [
  // Tab: completions, models, usage.
  {
    method: "post",
    mount: "api",
    path: TAB_COMPLETIONS_PATH,
    operationId: "createCompletion",
    tag: "Tab",
    summary: "Complete the text at the cursor",
    description: "docs/api.md#completions. The editor's context travels in `tab_context`.",
    auth: "keyOrSession",
    scope: "tab.complete",
    body: CompletionRequest,
    bodyName: "CompletionRequest",
    answers: completionAnswers,
    refusals: [502, 504],
  },
  {
    method: "post",
    mount: "api",
    path: TAB_NEXT_EDITS_PATH,
    operationId: "createNextEdit",
    tag: "Tab",
    summary: "The edit likely to come next, after an edit",
    description:
      "docs/api.md#next-edits. Edits are ranges of the excerpt sent and their new text; an empty list comes with `reason`.",
    auth: "keyOrSession",
    scope: "tab.complete",
    body: NextEditRequest,
    bodyName: "NextEditRequest",
    answers: [{ status: 200, description: "The proposed edits, or none and why", body: "NextEditResponse" }],
    refusals: [502, 504],
  },
  {
    method: "get",
    mount: "api",
    path: "/tab/models",
    operationId: "listTabModels",
    tag: "Tab",
    summary: "The models this relay completes with",
    auth: "keyOrSession",
    answers: [{ status: 200, description: "The models", data: "TabModels" }],
  },
  {
    method: "get",
    mount: "api",
    path: `${OPENAI_BASE_PATH}/models`,
    operationId: "listOpenAiModels",
    tag: "Tab",
    summary: "The models, in OpenAI's shape (the openai SDK's base URL)",
    auth: "keyOrSession",
    answers: [{ status: 200, description: "OpenAI's model list", body: "OpenAiModelList" }],
  },
  {
    method: "get",
    mount: "api",
    path: `${OPENAI_BASE_PATH}/models/:id`,
    operationId: "getOpenAiModel",
    tag: "Tab",
    summary: "One model, in OpenAI's shape",
    auth: "keyOrSession",
    params: ModelParams,
    answers: [{ status: 200, description: "The model", body: "OpenAiModel" }],
  },
  {
    method: "post",
    mount: "api",
    path: OPENAI_COMPLETIONS_PATH,
    operationId: "createOpenAiCompletion",
    tag: "Tab",
    summary: "The completion route, where the openai SDK asks for it",
    auth: "keyOrSession",
    scope: "tab.complete",
    body: CompletionRequest,
    bodyName: "CompletionRequest",
    answers: completionAnswers,
    refusals: [502, 504],
  },
  {
    method: "post",
    mount: "api",
    path: "/tab/events",
    operationId: "reportTabUsage",
    tag: "Usage",
    summary: "Report what became of shown suggestions",
    description: "docs/api.md#reporting-events: sizes and times, never code text.",
    auth: "keyOrSession",
    scope: "tab.complete",
    body: TabUsageBatch,
    bodyName: "TabUsageBatch",
    answers: [{ status: 202, description: "How many events were counted", data: "TabUsageAccepted" }],
  },
  {
    method: "get",
    mount: "api",
    path: "/tab/usage",
    operationId: "readTabUsage",
    tag: "Usage",
    summary: "Tab's usage per day, person, language or model",
    description:
      "docs/api.md#reading-usage. A key with `tab.complete` reads its own usage; `users.write` as an owner or admin reads the workspace's.",
    auth: "keyOrSession",
    query: UsageQuery,
    answers: [{ status: 200, description: "The report", data: "TabUsageReport" }],
  },

  // Who the caller is, and keys.
  {
    method: "get",
    mount: "api",
    path: "/me",
    operationId: "getMe",
    tag: "Keys",
    summary: "The key, its person and workspace, and its scopes",
    auth: "keyOrSession",
    answers: [{ status: 200, description: "Who is calling", data: "Me" }],
  },
  {
    method: "post",
    mount: "api",
    path: "/api-keys",
    operationId: "createApiKey",
    tag: "Keys",
    summary: "Make an API key (its secret is in this answer only)",
    auth: "keyOrSession",
    scope: "keys.write",
    body: CreateApiKeyBody,
    bodyName: "CreateApiKeyRequest",
    answers: [{ status: 201, description: "The key with its secret, shown this once", data: "ApiKeyCreated" }],
  },
  {
    method: "get",
    mount: "api",
    path: "/api-keys",
    operationId: "listApiKeys",
    tag: "Keys",
    summary: "The calling person's keys, without secrets",
    auth: "keyOrSession",
    scope: "keys.write",
    answers: [{ status: 200, description: "The keys, newest first", data: ["ApiKey"] }],
  },
  {
    method: "delete",
    mount: "api",
    path: "/api-keys/:id",
    operationId: "revokeApiKey",
    tag: "Keys",
    summary: "Revoke a key at once",
    description:
      "`keys.write`, or none to revoke the calling key itself; another person's key needs an owner or admin.",
    auth: "keyOrSession",
    params: KeyIdParams,
    answers: [{ status: 200, description: "The key, revoked", data: "ApiKey" }],
  },

  // People.
  {
    method: "get",
    mount: "api",
    path: "/users",
    operationId: "listUsers",
    tag: "People",
    summary: "The workspace's people",
    auth: "keyOrSession",
    scope: "workspace.read",
    answers: [{ status: 200, description: "The people", data: ["User"] }],
  },
  {
    method: "post",
    mount: "api",
    path: "/users",
    operationId: "addUser",
    tag: "People",
    summary: "Add a person with a first API key",
    auth: "keyOrSession",
    scope: "users.write",
    body: CreateUserBody,
    bodyName: "AddUserRequest",
    answers: [{ status: 201, description: "The person and their first key", data: "UserCreated" }],
  },
  {
    method: "patch",
    mount: "api",
    path: "/users/:id",
    operationId: "changeUserRole",
    tag: "People",
    summary: "Change a person's role",
    auth: "keyOrSession",
    scope: "users.write",
    params: UserParams,
    body: PatchUserBody,
    bodyName: "ChangeUserRoleRequest",
    answers: [{ status: 200, description: "The person", data: "User" }],
    refusals: [409],
  },
  {
    method: "delete",
    mount: "api",
    path: "/users/:id",
    operationId: "removeUser",
    tag: "People",
    summary: "Remove a person (their keys stop working, their agents are paused)",
    auth: "keyOrSession",
    scope: "users.write",
    params: UserParams,
    answers: [{ status: 200, description: "Removed", data: "UserRemoved" }],
  },
  {
    method: "get",
    mount: "api",
    path: "/audit",
    operationId: "readAuditLog",
    tag: "Audit",
    summary: "The workspace's audit log, newest first",
    description: "docs/api.md#audit-log; owners and admins.",
    auth: "keyOrSession",
    scope: "users.write",
    query: AuditQuery,
    answers: [{ status: 200, description: "The records", data: ["AuditEntry"] }],
  },

  // Console sessions.
  {
    method: "post",
    mount: "api",
    path: "/sessions",
    operationId: "signIn",
    tag: "Sessions",
    summary: "Sign in to the console with an API key",
    description: "Sets the session cookie (`tab_session`, or `__Host-tab_session` behind https).",
    auth: "none",
    body: SignInBody,
    bodyName: "SignInRequest",
    answers: [{ status: 201, description: "The session", data: "Session" }],
    // A key for the editor alone (tab.complete) cannot sign in to the console.
    refusals: [403],
  },
  {
    method: "get",
    mount: "api",
    path: "/sessions/current",
    operationId: "getSession",
    tag: "Sessions",
    summary: "The console session this request carries",
    auth: "keyOrSession",
    answers: [{ status: 200, description: "The session", data: "Session" }],
  },
  {
    method: "delete",
    mount: "api",
    path: "/sessions/current",
    operationId: "signOut",
    tag: "Sessions",
    summary: "End the console session",
    auth: "keyOrSession",
    answers: [{ status: 200, description: "Ended", data: "SessionEnded" }],
  },

  // Conversations.
  {
    method: "post",
    mount: "api",
    path: "/channels",
    operationId: "createChannel",
    tag: "Conversations",
    summary: "Create a channel",
    auth: "keyOrSession",
    scope: "messages.write",
    body: CreateChannelBody,
    bodyName: "CreateChannelRequest",
    answers: [{ status: 201, description: "The channel", data: "Conversation" }],
    refusals: [409],
  },
  {
    method: "post",
    mount: "api",
    path: "/channels/:id/members",
    operationId: "addChannelMember",
    tag: "Conversations",
    summary: "Add a person or an agent to a channel",
    auth: "keyOrSession",
    scope: "messages.write",
    params: ChannelParams,
    body: AddMemberBody,
    bodyName: "AddChannelMemberRequest",
    answers: [
      { status: 201, description: "Added", data: "ChannelMemberAdded" },
      { status: 200, description: "Already a member (`added: false`)", data: "ChannelMemberAdded" },
    ],
  },
  {
    method: "post",
    mount: "api",
    path: "/dms",
    operationId: "openDm",
    tag: "Conversations",
    summary: "Open the DM of a group of people and agents",
    auth: "keyOrSession",
    scope: "messages.write",
    body: CreateDmBody,
    bodyName: "OpenDmRequest",
    answers: [
      { status: 201, description: "Created", data: "Conversation" },
      { status: 200, description: "The same members' existing DM", data: "Conversation" },
    ],
  },
  {
    method: "get",
    mount: "api",
    path: "/conversations",
    operationId: "listConversations",
    tag: "Conversations",
    summary: "The channels and DMs the caller sees",
    auth: "keyOrSession",
    scope: "messages.read",
    answers: [{ status: 200, description: "The conversations", data: ["Conversation"] }],
  },
  {
    method: "get",
    mount: "api",
    path: "/conversations/:type/:id/messages",
    operationId: "listMessages",
    tag: "Conversations",
    summary: "A conversation's messages, or a thread's, newest first",
    auth: "keyOrSession",
    scope: "messages.read",
    params: ConversationParams,
    query: MessagesQuery,
    answers: [{ status: 200, description: "The messages", data: ["Message"] }],
  },
  {
    method: "post",
    mount: "api",
    path: "/conversations/:type/:id/messages",
    operationId: "postMessage",
    tag: "Conversations",
    summary: "Post a message (`/aside …` hides it from agents)",
    auth: "keyOrSession",
    scope: "messages.write",
    params: ConversationParams,
    body: PostMessageBody,
    bodyName: "PostMessageRequest",
    answers: [{ status: 201, description: "The message", data: "Message" }],
  },
  {
    method: "get",
    mount: "api",
    path: "/notifications",
    operationId: "listNotifications",
    tag: "Conversations",
    summary: "The caller's notifications (DMs from agents), newest first",
    auth: "keyOrSession",
    scope: "messages.read",
    query: NotificationsQuery,
    answers: [{ status: 200, description: "The notifications", data: ["Notification"] }],
  },

  // Agents.
  {
    method: "post",
    mount: "api",
    path: "/agents",
    operationId: "createAgent",
    tag: "Agents",
    summary: "Connect an outside agent (its token and signing secret are in this answer only)",
    auth: "keyOrSession",
    scope: "agents.write",
    body: CreateAgentBody,
    bodyName: "CreateAgentRequest",
    answers: [{ status: 201, description: "The agent and both secrets, shown this once", data: "AgentCreated" }],
    refusals: [409],
  },
  {
    method: "get",
    mount: "api",
    path: "/agents",
    operationId: "listAgents",
    tag: "Agents",
    summary: "The workspace's agents",
    auth: "keyOrSession",
    scope: "agents.read",
    answers: [{ status: 200, description: "The agents", data: ["Agent"] }],
  },
  {
    method: "get",
    mount: "api",
    path: "/agents/:id",
    operationId: "getAgent",
    tag: "Agents",
    summary: "One agent",
    auth: "keyOrSession",
    scope: "agents.read",
    params: AgentParams,
    answers: [{ status: 200, description: "The agent", data: "Agent" }],
  },
  {
    method: "patch",
    mount: "api",
    path: "/agents/:id",
    operationId: "updateAgent",
    tag: "Agents",
    summary: "Rename an agent, or change its description or webhook URL",
    auth: "keyOrSession",
    scope: "agents.write",
    params: AgentParams,
    body: PatchAgentBody,
    bodyName: "UpdateAgentRequest",
    answers: [{ status: 200, description: "The agent", data: "Agent" }],
    refusals: [409],
  },
  agentAction("pause", "Pause an agent: no events queue for it, its sockets close"),
  agentAction("resume", "Resume a paused agent"),
  {
    method: "post",
    mount: "api",
    path: "/agents/:id/token",
    operationId: "replaceAgentToken",
    tag: "Agents",
    summary: "Give an agent a new token (the old one stops working)",
    auth: "keyOrSession",
    scope: "agents.write",
    params: AgentParams,
    answers: [{ status: 200, description: "The new token, shown this once", data: "AgentTokenRotated" }],
  },
  {
    method: "post",
    mount: "api",
    path: "/agents/:id/signing-secret",
    operationId: "replaceAgentSigningSecret",
    tag: "Agents",
    summary: "Give an agent a new signing secret (the old one stops working)",
    auth: "keyOrSession",
    scope: "agents.write",
    params: AgentParams,
    answers: [{ status: 200, description: "The new secret, shown this once", data: "AgentSigningSecretRotated" }],
  },
  {
    method: "post",
    mount: "api",
    path: "/agents/:id/test-event",
    operationId: "sendTestEvent",
    tag: "Agents",
    summary: "Send the agent a ping event, tried once",
    auth: "keyOrSession",
    scope: "agents.write",
    params: AgentParams,
    answers: [{ status: 202, description: "The event, queued", data: "Delivery" }],
  },
  {
    method: "delete",
    mount: "api",
    path: "/agents/:id",
    operationId: "removeAgent",
    tag: "Agents",
    summary: "Remove an agent",
    auth: "keyOrSession",
    scope: "agents.write",
    params: AgentParams,
    answers: [{ status: 200, description: "Removed", data: "AgentRemoved" }],
  },
  {
    method: "get",
    mount: "api",
    path: "/agents/:id/deliveries",
    operationId: "listDeliveries",
    tag: "Agents",
    summary: "The agent's delivery log: recent events with their attempts",
    auth: "keyOrSession",
    scope: "agents.read",
    params: AgentParams,
    query: DeliveriesQuery,
    answers: [{ status: 200, description: "The deliveries, newest first", data: ["Delivery"] }],
  },
  {
    method: "post",
    mount: "api",
    path: "/agents/:id/deliveries/:delivery_id/redeliver",
    operationId: "redeliver",
    tag: "Agents",
    summary: "Send an event again, under its own webhook-id",
    auth: "keyOrSession",
    scope: "agents.write",
    params: DeliveryParams,
    answers: [{ status: 202, description: "The event, queued again", data: "Delivery" }],
  },

  // The Agent API, with the agent's token.
  {
    method: "get",
    mount: "agentApi",
    path: "/me",
    operationId: "agentGetMe",
    tag: "Agent API",
    summary: "The agent and its workspace",
    auth: "agent",
    answers: [{ status: 200, description: "The agent", data: "AgentApiMe" }],
  },
  {
    method: "get",
    mount: "agentApi",
    path: "/conversations",
    operationId: "agentListConversations",
    tag: "Agent API",
    summary: "The channels and DMs the agent is in",
    auth: "agent",
    answers: [{ status: 200, description: "The conversations", data: ["AgentApiConversation"] }],
  },
  {
    method: "get",
    mount: "agentApi",
    path: "/conversations/:type/:id/messages",
    operationId: "agentListMessages",
    tag: "Agent API",
    summary: "A conversation's messages (never asides), or a thread's, newest first",
    auth: "agent",
    params: ConversationParams,
    query: MessagesQuery,
    answers: [{ status: 200, description: "The messages", data: ["AgentApiMessage"] }],
  },
  {
    method: "post",
    mount: "agentApi",
    path: "/conversations/:type/:id/messages",
    operationId: "agentPostMessage",
    tag: "Agent API",
    summary: "Post as the agent (a reply: `thread_id` from the event's `reply`)",
    auth: "agent",
    params: ConversationParams,
    body: PostMessageBody,
    bodyName: "PostMessageRequest",
    answers: [{ status: 201, description: "The message", data: "AgentApiMessage" }],
  },

  // WebSockets (the upgrade requests; the frames are in docs/api.md).
  {
    method: "get",
    mount: "agentApi",
    path: "/socket",
    operationId: "agentSocket",
    tag: "Agent API",
    summary: "Socket Mode: events over a WebSocket, for an agent without a public URL",
    description:
      'docs/api.md#socket-mode-agents-without-a-public-url. Each event is an envelope `{type: "event", envelope_id, headers, body}` with the webhook\'s signed body and headers; acknowledge it with `{type: "ack", envelope_id}` within 10 s.',
    auth: "agent",
    answers: [{ status: 101, description: "Switching to the WebSocket protocol", upgrade: true }],
  },
  {
    method: "get",
    mount: "api",
    path: "/live",
    operationId: "liveUpdates",
    tag: "Sessions",
    summary: "The console's live updates over a WebSocket (session cookie, same origin)",
    auth: "keyOrSession",
    answers: [{ status: 101, description: "Switching to the WebSocket protocol", upgrade: true }],
  },

  // This document, and operations.
  {
    method: "get",
    mount: "api",
    path: "/openapi.json",
    operationId: "getOpenApiDocument",
    tag: "Operations",
    summary: "This OpenAPI 3.1 document",
    auth: "none",
    rateLimited: false,
    answers: [{ status: 200, description: "The document", text: "application/json" }],
  },
  {
    method: "get",
    mount: "root",
    path: "/healthz",
    operationId: "health",
    tag: "Operations",
    summary: "Live: 200 while serving, 503 once shutting down",
    auth: "none",
    rateLimited: false,
    answers: [{ status: 200, description: "Serving", body: "Health" }],
  },
  {
    method: "get",
    mount: "root",
    path: "/readyz",
    operationId: "ready",
    tag: "Operations",
    summary: "Ready: the database (and Redis, when used) answer",
    auth: "none",
    rateLimited: false,
    answers: [{ status: 200, description: "Ready (503 with the same shape when not)", body: "Readiness" }],
  },
  {
    method: "get",
    mount: "root",
    path: "/metrics",
    operationId: "metrics",
    tag: "Operations",
    summary: "Prometheus metrics",
    description:
      "With `TAB_RELAY_METRICS_TOKEN` set, only with `Authorization: Bearer <that token>` (else 401); without it, only to a client on the relay's machine that no proxy forwarded (else 403).",
    auth: "none",
    rateLimited: false,
    answers: [{ status: 200, description: "Prometheus text format 0.0.4", text: "text/plain" }],
    refusals: [401, 403],
  },
  {
    method: "get",
    mount: "root",
    path: "/downloads/tab-relay.vsix",
    operationId: "downloadExtension",
    tag: "Operations",
    summary: "The VS Code extension that matches this relay, as a .vsix package",
    description:
      "Built by `npm start` in the relay's checkout; 404 `NOT_FOUND` where the relay has no package to serve (an installed relay package carries none).",
    auth: "none",
    rateLimited: false,
    answers: [{ status: 200, description: "The .vsix package (a zip archive)", text: "application/vsix" }],
    refusals: [404],
  },
];

/**
 * Routes the express app registers that are not API operations, so the document leaves them out: the console's
 * pages (one regular expression) and its files. The catalogue test skips these keys.
 */
export const NOT_OPERATIONS: readonly string[] = ["GET static", "GET re:"];

/** `METHOD /full/path` for every mount prefix of an operation, as the express app registers it. */
export function operationKeys(operation: Pick<Operation, "method" | "mount" | "path">): string[] {
  return MOUNTS[operation.mount].map((prefix) => `${operation.method.toUpperCase()} ${prefix}${operation.path}`);
}

/** Operations served over a WebSocket upgrade rather than an express route. */
export function isUpgrade(operation: Operation): boolean {
  return operation.answers.some((answer) => "upgrade" in answer);
}
