/**
 * The relay's JSON answers and webhook events as zod schemas, for the OpenAPI document (relay/src/openapi/document.ts).
 * Their one home is the plain types the presenters declare (shared/src/protocol/api.ts, shared/src/webhooks/events.ts),
 * which the console imports without zod; each schema here is checked at compile time to describe exactly its type
 * (`exactly<Type>()(schema)`), so a field added to a type and not here, or here and not there, fails
 * `npm run typecheck` on that line. test/openapi/contract.test.ts checks the relay's real answers against the
 * document built from these.
 */
import {
  AUDIT_ACTIONS,
  type Api,
  ChatCompletion,
  ChatCompletionChunk,
  ErrorEnvelope,
  NextEditResponse,
  type MessageCreatedEvent,
  type PingEvent,
  ROLES,
  SCOPES,
  TabModel,
} from "@tab-relay/shared";
import { z } from "zod";

/** True when A and B are the same type, not merely assignable one way. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** True when each of A and B is assignable to the other: the same values, though spelled differently. */
type Equivalent<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** The schema, when its output is exactly `Type`; otherwise the call asks for a second argument and fails to compile. */
function exactly<Type>() {
  return <Schema extends z.ZodType>(
    schema: Schema,
    ..._mismatch: Same<z.output<Schema>, Type> extends true ? [] : [describes: z.output<Schema>]
  ): Schema => schema;
}

const Id = z.string();
const Instant = z.string().meta({ description: "ISO 8601, UTC, with milliseconds", format: "date-time" });
const Scope = z.enum(SCOPES);
const Role = z.enum(ROLES);

export const UserRef = exactly<Api.UserRef>()(z.object({ id: Id, name: z.string(), role: Role }));
export const WorkspaceRef = exactly<Api.WorkspaceRef>()(z.object({ id: Id, slug: z.string(), name: z.string() }));

export const Me = exactly<Api.Me>()(
  z.object({
    key: z.object({ id: Id, name: z.string(), hint: z.string(), scopes: z.array(Scope), created_at: Instant }),
    user: UserRef,
    workspace: WorkspaceRef,
  }),
);

export const User = exactly<Api.User>()(UserRef.extend({ created_at: Instant }));
export const UserCreated = exactly<Api.UserCreated>()(
  z.object({
    user: User,
    api_key: z.object({ id: Id, name: z.string(), scopes: z.array(Scope), created_at: Instant, secret: z.string() }),
  }),
);
export const UserRemoved = exactly<Api.UserRemoved>()(
  z.object({ id: Id, removed: z.literal(true), paused_agent_ids: z.array(Id) }),
);

export const ApiKey = exactly<Api.ApiKey>()(
  z.object({
    id: Id,
    name: z.string(),
    hint: z.string(),
    scopes: z.array(Scope),
    created_at: Instant,
    revoked_at: Instant.nullable(),
  }),
);
export const ApiKeyCreated = exactly<Api.ApiKeyCreated>()(
  ApiKey.extend({ secret: z.string().meta({ description: "The key, shown this once" }) }),
);

export const Session = exactly<Api.Session>()(
  z.object({
    user: UserRef,
    workspace: WorkspaceRef,
    key: z.object({ id: Id, name: z.string(), hint: z.string() }),
    scopes: z.array(Scope),
    csrf_token: z.string().meta({ description: "Sent back as X-CSRF-Token on the session's writes" }),
  }),
);
export const SessionEnded = exactly<Api.SessionEnded>()(z.object({ ended: z.literal(true) }));

const ConversationType = z.enum(["channel", "dm"]);
const Visibility = z.enum(["public", "private"]);
export const Member = exactly<Api.Member>()(z.object({ id: Id, type: z.enum(["user", "agent"]), name: z.string() }));
export const ConversationRef = exactly<Api.ConversationRef>()(z.object({ type: ConversationType, id: Id }));

const conversationFields = {
  type: ConversationType,
  id: Id,
  name: z.string().nullable().meta({ description: "`#name` for a channel; null for a DM" }),
  visibility: Visibility.nullable(),
  created_at: Instant,
  members: z.array(Member).exactOptional(),
};
export const AgentApiConversation = exactly<Api.AgentApiConversation>()(z.object(conversationFields));
export const Conversation = exactly<Api.Conversation>()(z.object({ ...conversationFields, is_member: z.boolean() }));
export const ChannelMemberAdded = exactly<Api.ChannelMemberAdded>()(
  z.object({ ...conversationFields, is_member: z.boolean(), added: z.boolean() }),
);

const messageFields = {
  id: Id,
  conversation: ConversationRef,
  thread_id: Id.nullable(),
  text: z.string(),
  author: Member,
  mentions: z.array(Member),
  created_at: Instant,
  url: z.string().meta({ description: "Opens the message in the console" }),
};
export const AgentApiMessage = exactly<Api.AgentApiMessage>()(z.object(messageFields));
export const Message = exactly<Api.Message>()(z.object({ ...messageFields, aside: z.boolean() }));
export const Notification = exactly<Api.Notification>()(
  z.object({ id: Id, type: z.string(), created_at: Instant, message: Message.nullable() }),
);

export const DeliveryAttempt = exactly<Api.DeliveryAttempt>()(
  z.object({
    id: Id,
    attempt: z.number().int(),
    trigger: z.enum(["scheduled", "manual", "test"]),
    at: Instant,
    url: z.string(),
    outcome: z.enum(["success", "failed"]),
    status_code: z.number().int().nullable(),
    error: z.string().nullable(),
    duration_ms: z.number().int(),
    response_excerpt: z.string(),
    next_attempt_at: Instant.nullable(),
  }),
);
export const Delivery = exactly<Api.Delivery>()(
  z.object({
    id: Id.meta({ description: "The event id, sent as webhook-id" }),
    event_type: z.string(),
    status: z.enum(["pending", "sending", "delivered", "failed", "cancelled"]),
    created_at: Instant,
    next_attempt_at: Instant.nullable(),
    attempts: z.array(DeliveryAttempt),
  }),
);

const AgentState = z.enum(["active", "paused"]);
const agentFields = {
  id: Id,
  name: z.string(),
  description: z.string(),
  state: AgentState,
  owner_user_id: Id,
  created_at: Instant,
  updated_at: Instant,
};
/** Api.Agent is an intersection with a union inside, which zod spells as a union of objects: the same values. */
function equivalent<Type>() {
  return <Schema extends z.ZodType>(
    schema: Schema,
    ..._mismatch: Equivalent<z.output<Schema>, Type> extends true ? [] : [describes: z.output<Schema>]
  ): Schema => schema;
}

export const Agent = equivalent<Api.Agent>()(
  z
    .discriminatedUnion("can_manage", [
      z.object({
        ...agentFields,
        can_manage: z.literal(true),
        webhook_url: z.string().nullable(),
        connection: z.object({ webhook_url: z.string().nullable(), socket: z.enum(["connected", "disconnected"]) }),
        token_hint: z.string(),
        last_delivery: DeliveryAttempt.nullable(),
      }),
      z.object({
        ...agentFields,
        can_manage: z.literal(false),
        webhook_url: z.never().exactOptional(),
        connection: z.never().exactOptional(),
        token_hint: z.never().exactOptional(),
        last_delivery: z.never().exactOptional(),
      }),
    ])
    .meta({ description: "Where it is connected and how delivery goes come with can_manage: true only" }),
);
export const AgentCreated = equivalent<Api.AgentCreated>()(
  z.object({ agent: Agent, token: z.string(), signing_secret: z.string() }),
);
export const AgentTokenRotated = equivalent<Api.AgentTokenRotated>()(z.object({ agent: Agent, token: z.string() }));
export const AgentSigningSecretRotated = equivalent<Api.AgentSigningSecretRotated>()(
  z.object({ agent: Agent, signing_secret: z.string() }),
);
export const AgentRemoved = exactly<Api.AgentRemoved>()(z.object({ id: Id, removed: z.literal(true) }));

export const AuditEntry = exactly<Api.AuditEntry>()(
  z.object({
    id: Id,
    at: Instant,
    action: z.enum(AUDIT_ACTIONS),
    actor: z.object({
      user_id: Id.nullable(),
      via: z.enum(["api_key", "session", "none", "cli"]),
      via_id: Id.nullable(),
      address: z.string(),
    }),
    target: z.object({ type: z.enum(["user", "api_key", "session", "agent", "delivery"]), id: Id }).nullable(),
    details: z.record(z.string(), z.union([z.string(), z.array(z.string()), z.null()])),
  }),
);

const usageFigures = {
  requests: z.number().int(),
  cache_hits: z.number().int(),
  errors: z.number().int(),
  rate_limited: z.number().int(),
  suggestions_shown: z.number().int(),
  acceptances: z.number().int(),
  partial_acceptances: z.number().int(),
  dismissals: z.number().int(),
  typed_over: z.number().int(),
  acceptance_rate: z.number().nullable(),
  chars_shown: z.number().int(),
  chars_accepted: z.number().int(),
  lines_shown: z.number().int(),
  lines_accepted: z.number().int(),
  time_to_ghost_ms: z.object({ p50: z.number().nullable(), p90: z.number().nullable() }),
  active_users: z.number().int(),
  next_edits: z.object({
    shown: z.number().int(),
    accepted: z.number().int(),
    dismissed: z.number().int(),
    typed_over: z.number().int(),
    acceptance_rate: z.number().nullable(),
    chars_shown: z.number().int(),
    chars_accepted: z.number().int(),
    mean_time_to_show_ms: z.number().nullable(),
  }),
};
export const TabUsageFigures = exactly<Api.TabUsageFigures>()(z.object(usageFigures));
export const TabUsageRow = exactly<Api.TabUsageRow>()(
  z.object({ ...usageFigures, key: z.string(), name: z.string().nullable().exactOptional() }),
);
export const TabUsageReport = exactly<Api.TabUsageReport>()(
  z.object({
    since: z.string(),
    until: z.string(),
    group_by: z.enum(["day", "user", "language", "model"]),
    scope: z.enum(["workspace", "self"]),
    rows: z.array(TabUsageRow),
    totals: TabUsageFigures,
  }),
);
export const TabUsageAccepted = exactly<Api.TabUsageAccepted>()(z.object({ counted: z.number().int() }));

export const AgentApiMe = exactly<Api.AgentApiMe>()(
  z.object({
    agent: z.object({ id: Id, name: z.string(), description: z.string(), state: AgentState, created_at: Instant }),
    workspace: z.object({ slug: z.string(), name: z.string() }),
  }),
);

/** OpenAI's model object, as `GET /tab/openai/models` lists it for the openai SDK. */
export const OpenAiModel = z.object({
  id: z.string(),
  object: z.literal("model"),
  created: z.number().int(),
  owned_by: z.string(),
});
export const OpenAiModelList = z.object({ object: z.literal("list"), data: z.array(OpenAiModel) });
export const TabModels = z.object({ models: z.array(TabModel) });

export const Health = z.object({ status: z.string(), provider: z.string() }).catchall(z.unknown());
export const Readiness = z
  .object({ status: z.enum(["ready", "not ready"]), database: z.boolean(), redis: z.boolean().exactOptional() })
  .catchall(z.unknown());

const webhookWorkspace = z.object({ slug: z.string(), name: z.string() });
const webhookAgent = z.object({ id: Id, name: z.string() });
export const MessageCreatedEventSchema = exactly<MessageCreatedEvent>()(
  z.object({
    id: Id.meta({ description: "Event id, prefix evt_; also the webhook-id header" }),
    type: z.literal("message.created"),
    created_at: Instant,
    workspace: webhookWorkspace,
    agent: webhookAgent,
    conversation: z.object({ type: ConversationType, id: Id, name: z.string() }),
    message: z.object({
      id: Id,
      text: z.string(),
      thread_id: Id.nullable(),
      author: z.object({ id: Id, name: z.string() }),
      mentioned: z.boolean(),
      direct: z.boolean(),
      url: z.string(),
    }),
    reply: z.object({
      url: z.string().meta({ description: "The Agent API messages URL of the conversation" }),
      thread_id: Id.nullable(),
    }),
  }),
);
export const PingEventSchema = exactly<PingEvent>()(
  z.object({
    id: Id,
    type: z.literal("ping"),
    created_at: Instant,
    workspace: webhookWorkspace,
    agent: webhookAgent,
  }),
);

/**
 * The named schemas of the document's components, by the name they take there. An answer or event schema used by an
 * operation and listed here is referenced as `#/components/schemas/<name>`.
 */
export const ANSWER_COMPONENTS = {
  Error: ErrorEnvelope,
  UserRef,
  WorkspaceRef,
  Me,
  User,
  UserCreated,
  UserRemoved,
  ApiKey,
  ApiKeyCreated,
  Session,
  SessionEnded,
  Member,
  ConversationRef,
  Conversation,
  AgentApiConversation,
  ChannelMemberAdded,
  Message,
  AgentApiMessage,
  Notification,
  DeliveryAttempt,
  Delivery,
  Agent,
  AgentCreated,
  AgentTokenRotated,
  AgentSigningSecretRotated,
  AgentRemoved,
  AuditEntry,
  TabUsageFigures,
  TabUsageRow,
  TabUsageReport,
  TabUsageAccepted,
  AgentApiMe,
  TabModel,
  TabModels,
  OpenAiModel,
  OpenAiModelList,
  ChatCompletion,
  ChatCompletionChunk,
  NextEditResponse,
  Health,
  Readiness,
  MessageCreatedEvent: MessageCreatedEventSchema,
  PingEvent: PingEventSchema,
} as const satisfies Record<string, z.ZodType>;
