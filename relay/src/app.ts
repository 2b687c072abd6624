import {
  API_PREFIX,
  OPENAI_COMPLETIONS_PATH,
  RelayError,
  TAB_COMPLETIONS_PATH,
  TAB_NEXT_EDITS_PATH,
} from "@tab-relay/shared";
import type { RequestListener } from "node:http";
import express, { type Request, type RequestHandler, Router } from "express";
import type { Clock } from "./clock";
import type { CompletionService } from "./completion/service";
import type { TokenCounter } from "./completion/tokenCounter";
import type { Config } from "./config";
import { createAuthenticate, requireCaller } from "./http/authenticate";
import { createJsonBody } from "./http/body";
import { rejectUndecodablePath } from "./http/decodablePath";
import { createErrorHandler, notFound } from "./http/errors";
import { type ClientAddress, rateLimitAddress } from "./http/clientAddress";
import { type LimitClass, classify, createRateLimit } from "./http/rateLimit";
import { setOrHold } from "./http/heldHeaders";
import { createLane } from "./http/lane";
import { createRequestContext, named } from "./http/requestContext";
import { createDownloadsRouter } from "./routes/downloads";
import type { Lifecycle } from "./lifecycle";
import type { Logger } from "./logger";
import type { Metrics } from "./metrics";
import type { RateLimitStore } from "./rateLimit/types";
import { createApiKeysRouter } from "./routes/apiKeys";
import { createAuditRouter } from "./routes/audit";
import { createAudit } from "./audit/record";
import { type EngineHealth, createHealthRouter } from "./routes/health";
import type { TabModelServedBy } from "@tab-relay/shared";
import { createMeRouter } from "./routes/me";
import { createCompletionHandlers, createTabRouter } from "./routes/tab";
import { createNextEditHandlers, createNextEditsRouter } from "./routes/nextEdits";
import type { NextEditService } from "./nextEdits/service";
import { createAgentService } from "./agents/service";
import { createConversationService } from "./conversations/service";
import type { Links } from "./links";
import type { Bus, SessionsOf } from "./bus/types";
import type { AgentSockets } from "./live/agentSockets";
import { createConsoleRouter } from "./routes/console";
import { createAgentApiRouter } from "./routes/agentApi";
import { createAgentsRouter } from "./routes/agents";
import { createConversationsRouter } from "./routes/conversations";
import { createSessionsRouter, createSignInHandler } from "./routes/sessions";
import { sessionBucket } from "./auth/sessions";
import { createUsersRouter } from "./routes/users";
import { createUsageRouter } from "./routes/usage";
import { createOpenApiHandler } from "./routes/openapi";
import type { UsageRecorder } from "./usage/recorder";
import type { SortableIds } from "./store/sortableIds";
import type { Store } from "./store/types";

/** The most agents a post names when it wakes the delivery workers; more wake them for the whole outbox. */
const MAX_AGENTS_WOKEN = 32;

export interface AppDeps {
  config: Pick<Config, "rateLimits" | "rateLimitWindowMs" | "maxBodyBytes" | "webhooks" | "metricsToken">;
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  rateLimitStore: RateLimitStore;
  /** Who sent a request, behind whichever proxies are trusted: the subject of per-address limits, and logged. */
  clientAddress: ClientAddress;
  completions: CompletionService;
  nextEdits: NextEditService;
  tokens: TokenCounter;
  providerName: string;
  lifecycle: Lifecycle;
  /** Tab's usage counts, kept in memory and flushed on a timer: completions and reports never wait for the store. */
  usage: UsageRecorder;
  ids: SortableIds;
  links: Links;
  /** Tells every relay (this one included) about new events, messages and agent changes. */
  bus: Pick<Bus, "publish">;
  agentSockets: Pick<AgentSockets, "connected">;
  /** Where the console's built files are; the console is not served when it is missing. */
  consoleDir: string | undefined;
  /** The VS Code extension's package served at /downloads/tab-relay.vsix (a checkout's build), if any. */
  extensionVsix?: string | undefined;
  /** Whether the database (and Redis, when used) answer, for `/readyz`. */
  ready(): Promise<{ database: boolean; redis: boolean | undefined }>;
  /** The embedded engine's state, for `/healthz`, `/readyz` and the model list; undefined without one. */
  engine?: () => EngineHealth;
  servedBy?: () => TabModelServedBy | undefined;
}

/** Builds the HTTP application. It never listens: main.ts (or a test) decides where. */
export function createApp(deps: AppDeps): RequestListener {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  const requestContext = createRequestContext(deps);
  const refuseWhileDraining: RequestHandler = function refuseWhileDraining(_req, res, next) {
    if (!deps.lifecycle.draining) return next();
    setOrHold(res, "Connection", "close");
    next(new RelayError("SERVICE_UNAVAILABLE", "The relay is shutting down; retry on another instance"));
  };
  app.use(requestContext, refuseWhileDraining, rejectUndecodablePath);

  const limits = deps.config.rateLimits;
  // Naming the agents lets each worker read only their events; past a few, the message would grow towards NOTIFY's
  // 8,000-byte limit on PostgreSQL, and one look at everything costs no more than many looks at one agent each.
  const eventsQueued = (agentIds?: readonly string[]) =>
    deps.bus.publish(
      agentIds === undefined || agentIds.length > MAX_AGENTS_WOKEN
        ? { topic: "events" }
        : { topic: "events", agentIds },
    );
  // Live sockets of these sessions, on every relay, are rechecked at once instead of at their next periodic check.
  const sessionsChanged = (workspaceId: string, of: SessionsOf) =>
    deps.bus.publish({ topic: "sessions", workspaceId, of });
  // Connected here, or to another relay sharing the database (whose renewed row says so).
  const socketConnected = async (agentId: string) =>
    deps.agentSockets.connected(agentId) ||
    deps.store.agentSockets.connected(agentId, new Date(deps.clock.now()).toISOString());
  const conversations = createConversationService({
    ...deps,
    eventsQueued,
    posted(conversation, message) {
      deps.bus.publish({
        topic: "message",
        workspaceId: conversation.workspace_id,
        conversationId: conversation.id,
        messageId: message.id,
      });
    },
  });
  const agents = createAgentService({
    ...deps,
    eventsQueued,
    agentChanged(agent, change) {
      deps.bus.publish({ topic: "agent", workspaceId: agent.workspace_id, agentId: agent.id, change });
    },
    socketConnected,
  });
  const audit = createAudit(deps);
  const authenticate = createAuthenticate(deps);
  const jsonBody = createJsonBody(deps.config.maxBodyBytes);
  const isCompletion = (req: Request) => {
    // Express matches routes ignoring case and a trailing slash; so must this, or a spelling would count as a write.
    const path = req.path.toLowerCase().replace(/\/+$/, "");
    return req.method === "POST" && (path === TAB_COMPLETIONS_PATH || path === OPENAI_COMPLETIONS_PATH);
  };
  const isNextEdit = (req: Request) =>
    req.method === "POST" && req.path.toLowerCase().replace(/\/+$/, "") === TAB_NEXT_EDITS_PATH;
  const rateLimit = (classOf: (req: Request) => LimitClass, completions: (req: Request) => boolean) =>
    createRateLimit({
      store: deps.rateLimitStore,
      clock: deps.clock,
      metrics: deps.metrics,
      windowMs: deps.config.rateLimitWindowMs,
      refused(req) {
        if (req.caller && completions(req))
          deps.usage.rateLimited({ workspaceId: req.caller.workspace.id, userId: req.caller.user.id });
      },
      policy(req) {
        const label = classOf(req);
        // Every session made from one key shares the key's session counters: signing in again buys nothing.
        if (req.session && req.caller) {
          return {
            bucket: sessionBucket(req.caller.key.id, label),
            limit: label === "read" ? limits.session_reads : limits.session_writes,
            label,
          };
        }
        const subject = req.caller ? `key:${req.caller.key.id}` : `ip:${rateLimitAddress(deps.clientAddress(req))}`;
        return { bucket: `${subject}:${label}`, limit: label === "read" ? limits.reads : limits.writes, label };
      },
    });
  const api = Router();
  api.use(
    authenticate,
    // A next edit is asked for after each pause, as a completion is: it counts against the same (read) limit.
    rateLimit((req) => classify(req.method, isCompletion(req) || isNextEdit(req)), isCompletion),
    requireCaller,
    jsonBody,
  );
  // The completion route is the hot path, so its router is tried first.
  const completionHandlers = createCompletionHandlers(deps);
  const nextEditHandlers = createNextEditHandlers(deps);
  api.use(
    createTabRouter(deps, completionHandlers),
    createNextEditsRouter(deps, nextEditHandlers),
    createMeRouter(),
    createApiKeysRouter({ ...deps, audit, sessionsChanged }),
    createUsersRouter({ ...deps, audit, agents, sessionsChanged }),
    createSessionsRouter({ ...deps, sessionsChanged }),
    createConversationsRouter({ ...deps, conversations }),
    createAgentsRouter({
      store: deps.store,
      agents,
      audit,
      allowPrivateWebhooks: deps.config.webhooks.allowPrivate,
      socketConnected,
    }),
    createAuditRouter(deps),
    createUsageRouter(deps),
    notFound,
  );

  // Signing in takes the key in the body, so it runs before the API's header authentication; attempts are
  // counted per address like any unauthenticated request.
  app.post(
    [`${API_PREFIX}/sessions`, "/v1/sessions"],
    named("/api/v1/sessions"),
    createRateLimit({
      store: deps.rateLimitStore,
      clock: deps.clock,
      metrics: deps.metrics,
      windowMs: deps.config.rateLimitWindowMs,
      policy: (req) => ({
        bucket: `ip:${rateLimitAddress(deps.clientAddress(req))}:sign-in`,
        limit: limits.writes,
        label: "sign-in",
      }),
    }),
    jsonBody,
    createSignInHandler({ ...deps, audit, sessionsChanged }),
  );
  // The API's description is public, so it is served before the API's authentication.
  app.get(
    [`${API_PREFIX}/openapi.json`, "/v1/openapi.json"],
    named(`${API_PREFIX}/openapi.json`),
    createOpenApiHandler(),
  );
  // The Agent API authenticates agents, not keys, so it is mounted ahead of the main API that shares its prefix.
  const agentApi = createAgentApiRouter({ ...deps, conversations, limits, windowMs: deps.config.rateLimitWindowMs });
  app.use([`${API_PREFIX}/agent-api`, "/v1/agent-api"], agentApi);
  // Clients are told both prefixes serve the same API (docs/api.md, "Base paths"); it is mounted before the health routes
  // so API requests pass through as few layers as possible.
  app.use([API_PREFIX, "/v1"], api);
  app.use(
    createHealthRouter({
      metrics: deps.metrics,
      provider: deps.providerName,
      ready: () => deps.ready(),
      metricsToken: deps.config.metricsToken,
      ...(deps.engine ? { engine: deps.engine } : {}),
    }),
  );
  app.use(createDownloadsRouter(deps.extensionVsix));
  if (deps.consoleDir !== undefined) app.use(createConsoleRouter(deps.consoleDir));
  app.use(notFound);
  const errorHandler = createErrorHandler(deps);
  app.use(errorHandler);

  // An authenticated caller within its limits: the provider may get ready while the body arrives and is checked
  // (the embedded engine wakes its child). Only on the completion lane, the hot path.
  const prepareProvider: RequestHandler = (_req, _res, next) => {
    deps.completions.prepare();
    next();
  };
  // The same chain as above, for a POST route's canonical spellings, without express's router. Both routes count as
  // reads; only a refused completion is counted in Tab usage as rate limited, as through express.
  const lane = (path: string, handlers: readonly RequestHandler[], isCompletionRoute: boolean) =>
    createLane({
      method: "POST",
      paths: [`${API_PREFIX}${path}`, `/v1${path}`],
      handlers: [
        requestContext,
        refuseWhileDraining,
        authenticate,
        rateLimit(
          () => "read",
          () => isCompletionRoute,
        ),
        requireCaller,
        ...(isCompletionRoute ? [prepareProvider] : []),
        jsonBody,
        ...handlers,
      ],
      onError: errorHandler,
    });
  const completionLane = lane(TAB_COMPLETIONS_PATH, completionHandlers, true);
  // A next edit is asked for after each pause too, right after the completion.
  const nextEditLane = lane(TAB_NEXT_EDITS_PATH, nextEditHandlers, false);
  // The completion lane, the hot path, is tried first.
  return function relayApp(req, res) {
    if (!completionLane(req, res) && !nextEditLane(req, res)) app(req, res);
  };
}
