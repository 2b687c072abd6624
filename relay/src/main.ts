import { once } from "node:events";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { awaitedLater } from "@tab-relay/shared";
import { createApp } from "./app";
import { refusedWebhookWarning, refusedWebhooks } from "./agents/refusedWebhooks";
import { startAuditRetention } from "./audit/retention";
import { type UsageRecorder, createUsageRecorder } from "./usage/recorder";
import { createClientAddress } from "./http/clientAddress";
import { HTTP_TIMEOUTS, type HttpTimeouts, attachClientErrors } from "./http/clientErrors";
import { type Clock, systemClock } from "./clock";
import { createCompletionService } from "./completion/service";
import { createSlicedTokenCounter } from "./completion/tokenCounter";
import { type Config, plainHttpWarning, SETTINGS } from "./config";
import { createLifecycle } from "./lifecycle";
import { type Logger, createStreamLogger } from "./logger";
import { type Metrics, createMetrics } from "./metrics";
import { createLocalProvider } from "./providers/local";
import { type HttpPost, createHttpPost } from "./providers/httpPost";
import { createUpstreamProvider, deprecatedApiWarning, upstreamMode } from "./providers/upstream";
import type { ModelProvider } from "./providers/types";
import { createNextEditService } from "./nextEdits/service";
import { createMemoryRateLimitStore } from "./rateLimit/memoryStore";
import { type DeliveryWorker, createDeliveryWorker } from "./delivery/worker";
import { createWebhookClient } from "./delivery/webhookClient";
import { newId } from "./auth/secrets";
import { type Links, createLinks } from "./links";
import { createPostgresBus } from "./bus/postgres";
import { createMemorySocketSlots, createRedisSocketSlots } from "./live/socketSlots";
import { createLocalBus } from "./bus/types";
import { type RedisRateLimitStore, createRedisRateLimitStore } from "./rateLimit/redisStore";
import type { RateLimitStore } from "./rateLimit/types";
import { openPostgresStore } from "./store/postgres";
import type { Bus } from "./bus/types";
import { type AgentSockets, CLOSE, createAgentSockets } from "./live/agentSockets";
import { type LiveHub, createLiveHub } from "./live/hub";
import { attachUpgrades } from "./live/upgrade";
import { type SortableIds, createSortableIds } from "./store/sortableIds";
import { openSqliteStore } from "./store/sqlite";
import { lockDataFolder, looseModeWarnings, worldWritableProblems } from "./dataFolder";
import { type Engine, EngineLoadError, type ForkChild, createEngine, forkEngineChild } from "./engine/engine";
import { engineInstalled, engineModuleUrl, notInstalledMessage } from "./engine/install";
import type { EngineConfig } from "./config";
import type { Store } from "./store/types";
import { resumeOptimizer } from "./startupCompiler";

export const DATABASE_FILE = "relay.db";
/** How long a relay's record of an agent socket lasts without renewal (renewed every third of it). */
const SOCKET_PRESENCE_MS = 45_000;

export function databasePath(dataDir: string): string {
  return join(dataDir, DATABASE_FILE);
}

/**
 * PostgreSQL when a database URL is configured (several relays can share it), else SQLite in the data folder. The
 * serving relay passes its `logger`; on SQLite that also moves WAL checkpoints to a worker thread (store/walCheckpointer.ts).
 */
export function openStore(config: Pick<Config, "dataDir" | "databaseUrl">, logger?: Logger): Promise<Store> {
  return config.databaseUrl
    ? openPostgresStore(config.databaseUrl, logger ? { logger } : {})
    : openSqliteStore(databasePath(config.dataDir), logger ? { logger } : {});
}

/** The model provider; `logger` gets the start-up warning for a deprecated mode name and the upstream's hints. */
export function createProvider(
  config: Pick<Config, "provider" | "upstream">,
  post: HttpPost,
  logger?: Logger,
  metrics?: Pick<Metrics, "controlTokensNeutralised" | "upstreamLimits">,
): ModelProvider {
  if (config.provider === "openai" && config.upstream) {
    const { url, model, apiKey, api, apiAlias, fimTemplate, infillMaxPredictMs, timeoutMs, limits } = config.upstream;
    const deprecated = apiAlias === undefined ? undefined : deprecatedApiWarning(apiAlias);
    if (deprecated !== undefined) logger?.warn(deprecated);
    const mode = upstreamMode({ api, baseUrl: url, model, fimTemplate, infillMaxPredictMs });
    return createUpstreamProvider({
      mode,
      model,
      post,
      timeoutMs,
      limits,
      ...(apiKey ? { apiKey } : {}),
      ...(logger ? { logger } : {}),
      ...(metrics
        ? {
            onNeutralised: () => metrics.controlTokensNeutralised.inc({ upstream_api: api }),
            onLimit: (limit: string) => metrics.upstreamLimits.inc({ limit }),
          }
        : {}),
    });
  }
  return createLocalProvider();
}

/** `dist/console` of the relay package, from the bundle (`dist/cli.js`) or the sources (`src/main.ts`). */
function consoleDir(): string | undefined {
  const bundled = import.meta.url.endsWith(".js");
  const dir = fileURLToPath(new URL(bundled ? "./console/" : "../dist/console/", import.meta.url));
  return existsSync(join(dir, "index.html")) ? dir : undefined;
}

/** The extension's package in a checkout (`npm start` builds it), from the bundle or the sources; else undefined. */
function extensionVsix(): string | undefined {
  // relay/dist/cli.js and relay/src/main.ts are both two folders below the repository's root.
  const file = fileURLToPath(new URL("../../extension/dist/tab-relay-vscode.vsix", import.meta.url));
  return existsSync(join(file, "..")) ? file : undefined;
}

export interface RunningRelay {
  url: string;
  server: Server;
  store: Store;
  /** The relay's own counters, as /metrics renders them. */
  metrics: Pick<Metrics, "render">;
  /** Stops accepting, lets streams finish within the grace period, then closes everything. */
  close(graceMs?: number): Promise<void>;
}

/** `store`, when given, becomes the relay's: `close()` closes it. */
export interface StartOptions {
  logger?: Logger;
  clock?: Clock;
  /** The upstream transport; the default is node:http with keep-alive pools. */
  post?: HttpPost;
  store?: Store;
  /** How relays sharing a database tell each other things; alone, the relay talks to itself. */
  bus?: Bus;
  /** The console's built files; `null` serves no console. Default: `dist/console` beside the relay. */
  consoleDir?: string | null;
  /** How often live connections are pinged and their sessions rechecked (tests shorten it). Default: 15 s. */
  liveCheckMs?: number;
  /** How long a request may take to arrive (tests shorten it). Default: HTTP_TIMEOUTS. */
  httpTimeouts?: Partial<HttpTimeouts>;
  /** The embedded engine's model file, already resolved from `config.engine.model` (the CLI downloads by name). */
  modelPath?: string;
  /** A fixed sampling seed for the embedded engine (tests). */
  engineSeed?: number;
  /** How the engine child is started; tests wrap the default to watch what it is sent. */
  engineFork?: ForkChild;
}

/** The composition root: builds the real dependencies from config and listens, one named step at a time. */
export async function startRelay(config: Readonly<Config>, options: StartOptions = {}): Promise<RunningRelay> {
  const clock = options.clock ?? systemClock;
  const logger =
    options.logger ?? createStreamLogger({ level: config.logLevel, stream: process.stdout, now: () => clock.now() });
  const store = options.store ?? (await openStore(config, logger));
  await requireWorkspace(config, store);
  const unlockDataFolder = await claimDataFolder(config, store, logger);
  const rateLimits = await connectRateLimits(config, logger);
  const metrics = createMetrics();
  let engine: Engine | undefined;
  try {
    engine = config.engine ? await startEngine(config.engine, options, logger, clock, metrics) : undefined;
  } catch (error) {
    await store.close();
    await rateLimits.redis?.close();
    unlockDataFolder();
    throw error;
  }
  const services = createServices(config, options, logger, clock, metrics, engine);
  const bus =
    options.bus ?? (config.databaseUrl ? await createPostgresBus(config.databaseUrl, logger) : createLocalBus());
  const realtime = wireRealtime({
    config,
    options,
    clock,
    logger,
    store,
    bus,
    ids: services.ids,
    links: services.links,
    metrics: services.metrics,
  });
  const usage = createUsageRecorder({ store, clock, logger, metrics: services.metrics });
  const http = createHttpServer({ config, options, clock, logger, store, bus, rateLimits, services, realtime, usage });
  observeState(services, realtime, store, clock);
  const url = await listen(http.server, config, async () => {
    // The port is taken or the address is wrong: release what was opened, so the caller can report and exit.
    await engine?.close();
    await store.close();
    await services.transport.destroy();
    unlockDataFolder();
  });
  services.links.setListeningUrl(url);
  // Off the request path, and after listening so start-up is not slower for it: the first completion then finds the
  // tokenizer warm (and the upstream's HTTP client loaded) instead of paying for their first use, and the first next
  // edit its schema and the local engine.
  setImmediate(() => {
    services.tokens.warm();
    if (services.provider.name !== "local") services.transport.warm();
    services.nextEdits.warm();
  });
  // Whatever was pending when the relay last stopped goes out now.
  await realtime.deliveries.start();
  // Audit records past the retention are deleted on a timer of their own, never while a request waits; the first
  // pass is over by the time the relay says it is up.
  const retention = startAuditRetention({ store, clock, logger, retentionDays: config.usageRetentionDays });
  await retention.idle();
  logger.info("relay listening", {
    url,
    public_url: services.links.base(),
    provider: services.provider.name,
    data: config.dataDir,
  });
  const exposed = plainHttpWarning(config);
  if (exposed !== undefined) logger.warn(exposed);
  // Said at start, not only in each failed delivery: a relay restarted without the setting its agents were made under.
  for (const refused of await refusedWebhooks(store, config.webhooks.allowPrivate))
    logger.warn(refusedWebhookWarning(refused), { agent_id: refused.agent.id });
  // Start-up is over: V8 may optimize again what gets hot from here on (src/startupCompiler.ts). In an immediate of
  // its own, queued after the tokenizer's warm-up above, so that one run is not optimized either.
  setImmediate(resumeOptimizer);
  const close = closer({ config, logger, store, bus, rateLimits, services, realtime, http, usage, unlockDataFolder });
  return {
    url,
    server: http.server,
    store,
    metrics: services.metrics,
    close: (graceMs?: number) => retention.stop().then(() => close(graceMs)),
  };
}

async function requireWorkspace(config: Readonly<Config>, store: Store): Promise<void> {
  if ((await store.workspaces.count()) > 0) return;
  await store.close();
  const where = config.databaseUrl ? "the database" : config.dataDir;
  const flag = config.databaseUrl ? "--database URL" : `--data ${config.dataDir}`;
  throw new Error(`No workspace in ${where}: run \`tab-relay init ${flag} --workspace SLUG --owner NAME\` first`);
}

/** SQLite's folder is this process's alone while it serves; returns what releases it. */
async function claimDataFolder(config: Readonly<Config>, store: Store, logger: Logger): Promise<() => void> {
  if (config.databaseUrl) return () => {};
  const writable = worldWritableProblems(config.dataDir, DATABASE_FILE);
  if (writable.length > 0 && !config.allowInsecureDataFolder) {
    await store.close();
    throw new Error(
      `${writable.join("\n")}\nRefusing to serve it. Close it with the chmod above, or set ${SETTINGS.allowInsecureDataFolder.env}=true to serve it anyway`,
    );
  }
  for (const problem of writable) logger.warn(`${problem} (served anyway: ${SETTINGS.allowInsecureDataFolder.env})`);
  let unlock: () => void;
  try {
    unlock = lockDataFolder(config.dataDir, process.pid);
  } catch (error) {
    await store.close();
    throw error;
  }
  for (const warning of looseModeWarnings(config.dataDir, DATABASE_FILE)) logger.warn(warning);
  return unlock;
}

interface RateLimits {
  store: RateLimitStore;
  redis: RedisRateLimitStore | undefined;
}

/** Counters in Redis are shared by every relay; if Redis stops answering, each relay counts alone until it is back. */
async function connectRateLimits(config: Readonly<Config>, logger: Logger): Promise<RateLimits> {
  const memory = createMemoryRateLimitStore();
  const redis = config.redisUrl
    ? createRedisRateLimitStore({ url: config.redisUrl, logger, fallback: memory })
    : undefined;
  if (redis && !(await redis.ready())) logger.warn("Redis is not answering; rate limits hold per relay until it does");
  return { store: redis ?? memory, redis };
}

/** What requests use and nothing else wires: the model, completions, token counting, ids and links. */
function createServices(
  config: Readonly<Config>,
  options: StartOptions,
  logger: Logger,
  clock: Clock,
  metrics: Metrics,
  engine: Engine | undefined,
) {
  const transport = createHttpPost();
  const provider = engine?.provider ?? createProvider(config, options.post ?? transport, logger, metrics);
  return {
    metrics,
    engine,
    lifecycle: createLifecycle(),
    transport,
    provider,
    completions: createCompletionService({ provider, metrics, logger, cacheEntries: config.cacheEntries }),
    nextEdits: createNextEditService({
      upstream: config.upstream && {
        url: config.upstream.url,
        model: config.upstream.model,
        apiKey: config.upstream.apiKey,
        timeoutMs: config.upstream.timeoutMs,
        deadlineMs: config.upstream.limits.deadlineMs,
        format: config.upstream.nextEditFormat,
      },
      post: options.post ?? transport,
      metrics,
      logger,
    }),
    tokens: createSlicedTokenCounter({ now: () => performance.now() }),
    ids: createSortableIds(clock),
    links: createLinks(config.publicUrl),
  };
}
type Services = ReturnType<typeof createServices>;

interface RealtimeDeps {
  config: Readonly<Config>;
  options: StartOptions;
  clock: Clock;
  logger: Logger;
  store: Store;
  bus: Bus;
  ids: SortableIds;
  links: Links;
  metrics: Metrics;
}

/** Agents' sockets, the console's live updates and the outbox's deliveries, and the bus messages that move them. */
function wireRealtime(deps: RealtimeDeps) {
  const relayId = newId("rly");
  const state = { shuttingDown: false };
  const agentSockets = createAgentSocketsRecorded(deps, relayId, state, () => deliveries.wake());
  const live = createLiveHub({
    store: deps.store,
    links: deps.links,
    logger: deps.logger,
    clock: deps.clock,
    ...(deps.options.liveCheckMs === undefined ? {} : { checkMs: deps.options.liveCheckMs }),
  });
  const presence = renewSocketPresence(deps, relayId, agentSockets);
  const memorySlots = createMemorySocketSlots();
  const socketSlots = deps.config.redisUrl
    ? createRedisSocketSlots({ url: deps.config.redisUrl, logger: deps.logger, relayId, fallback: memorySlots })
    : memorySlots;
  const deliveries = createDeliveries(deps, agentSockets);
  subscribeToBus(deps, { deliveries, live, agentSockets });
  return {
    agentSockets,
    live,
    deliveries,
    socketSlots,
    /** Stops the sockets and live updates and drops this relay's socket records (deliveries stop separately). */
    async close(): Promise<void> {
      state.shuttingDown = true;
      live.close();
      clearInterval(presence);
      agentSockets.close();
      await socketSlots.close();
      await deps.store.agentSockets.unmarkRelay(relayId).catch(() => undefined);
    },
  };
}
type Realtime = ReturnType<typeof wireRealtime>;

/** Agent sockets whose opening and closing are told to the other relays and recorded in the database. */
function createAgentSocketsRecorded(
  deps: RealtimeDeps,
  relayId: string,
  state: { shuttingDown: boolean },
  wakeDeliveries: () => void,
): AgentSockets {
  const { store, bus, clock, logger } = deps;
  return createAgentSockets({
    logger,
    clock,
    ackTimeoutMs: deps.config.webhooks.socketAckTimeoutMs,
    onChange(agent, connected) {
      // At shutdown the relay's records are dropped at once (unmarkRelay); sockets closing then need nothing.
      if (state.shuttingDown) return;
      bus.publish({ topic: "agent", workspaceId: agent.workspace_id, agentId: agent.id, change: "updated" });
      const now = clock.now();
      if (!connected) {
        store.agentSockets
          .unmark(agent.id, relayId)
          .catch((error: unknown) => logger.error("could not record a closed agent socket", { error }));
        return;
      }
      // Other relays leave this agent's events to this one; whatever waited for it goes out on the new connection.
      store.agentSockets
        .mark([agent.id], relayId, new Date(now + SOCKET_PRESENCE_MS).toISOString())
        .then(() => store.events.dueNow(agent.id, new Date(now).toISOString()))
        .then(
          () => wakeDeliveries(),
          (error: unknown) => logger.error("could not release an agent's waiting events", { error }),
        );
    },
  });
}

/** This relay's sockets are renewed in the database while they last, so a dead relay's lapse within a minute. */
function renewSocketPresence(deps: RealtimeDeps, relayId: string, agentSockets: AgentSockets): NodeJS.Timeout {
  const presence = setInterval(() => {
    const until = new Date(deps.clock.now() + SOCKET_PRESENCE_MS).toISOString();
    deps.store.agentSockets
      .mark([...agentSockets.connectedIds()], relayId, until)
      .catch((error: unknown) => deps.logger.warn("could not renew agent sockets", { error }));
  }, SOCKET_PRESENCE_MS / 3);
  presence.unref();
  return presence;
}

function createDeliveries(deps: RealtimeDeps, agentSockets: AgentSockets): DeliveryWorker {
  const { webhooks } = deps.config;
  return createDeliveryWorker({
    store: deps.store,
    clock: deps.clock,
    logger: deps.logger,
    ids: deps.ids,
    client: createWebhookClient({
      allowPrivate: webhooks.allowPrivate,
      timeoutMs: webhooks.timeoutMs,
      now: () => deps.clock.now(),
    }),
    retryScheduleMs: webhooks.retryScheduleMs,
    // A claim outlives any attempt (an attempt ends at its timeout), with room for signing and recording it.
    leaseMs: Math.max(webhooks.timeoutMs, webhooks.socketAckTimeoutMs) + 10_000,
    sockets: agentSockets,
    onAttempt(event, result) {
      deps.metrics.deliveries.inc({ outcome: result.outcome, via: result.via });
      deps.bus.publish({ topic: "attempt", workspaceId: event.workspace_id, agentId: event.agent_id });
    },
  });
}

function subscribeToBus(
  deps: RealtimeDeps,
  parts: { deliveries: DeliveryWorker; live: LiveHub; agentSockets: AgentSockets },
): void {
  const { store, logger } = deps;
  const { deliveries, live, agentSockets } = parts;
  deps.bus.subscribe(function onBus(message) {
    switch (message.topic) {
      case "events":
        return deliveries.wake(message.agentIds);
      case "message":
        if (live.listening(message.workspaceId))
          void forwardMessage(message.workspaceId, message.conversationId, message.messageId);
        return;
      case "agent":
        if (message.change !== "updated") agentSockets.closeAgent(message.agentId, CLOSE[message.change]);
        return live.agentUpdated(message.workspaceId, message.agentId);
      case "attempt":
        return live.agentUpdated(message.workspaceId, message.agentId);
      case "sessions":
        return live.sessionsChanged(message.workspaceId, message.of);
    }
  });
  async function forwardMessage(workspaceId: string, conversationId: string, messageId: string): Promise<void> {
    try {
      const conversation = await store.conversations.byId(workspaceId, conversationId);
      const message = conversation && (await store.messages.get(conversation.id, messageId));
      if (conversation && message) await live.messagePosted(conversation, message);
    } catch (error) {
      logger.error("live update failed", { error });
    }
  }
}

/** /metrics reads open sockets and the outbox when scraped: nothing is counted for it on the request path. */
function observeState(services: Services, realtime: Realtime, store: Store, clock: Clock): void {
  services.metrics.observe({
    sockets() {
      let socketMode = 0;
      for (const agentId of realtime.agentSockets.connectedIds()) socketMode += realtime.agentSockets.count(agentId);
      return { console: realtime.live.connections(), socket_mode: socketMode, sse: services.lifecycle.count("stream") };
    },
    async outbox() {
      const { count, oldestCreatedAt } = await store.events.pendingSummary();
      return { pending: count, oldestCreatedAt };
    },
    now: () => clock.now(),
    ...(services.engine
      ? {
          engine: () => {
            const status = services.engine!.status();
            return { queued: status.queued, running: status.running, loadMs: status.info?.loadMs };
          },
        }
      : {}),
  });
}

interface HttpDeps {
  config: Readonly<Config>;
  options: StartOptions;
  clock: Clock;
  logger: Logger;
  store: Store;
  bus: Bus;
  rateLimits: RateLimits;
  services: Services;
  realtime: Realtime;
  usage: UsageRecorder;
}

/** The app, the node:http server in front of it, and the WebSocket upgrades beside it. */
function createHttpServer(deps: HttpDeps) {
  const { config, options, clock, logger, store, rateLimits, services, realtime } = deps;
  const clientAddress = createClientAddress(config.trustProxy);
  const app = createApp({
    config,
    store,
    clock,
    logger,
    metrics: services.metrics,
    rateLimitStore: rateLimits.store,
    clientAddress,
    async ready() {
      // Ready when the database (and Redis, when configured) answer: a load balancer sends nothing before.
      const [database, redis] = await Promise.all([
        store.workspaces.count().then(
          () => true,
          () => false,
        ),
        rateLimits.redis ? rateLimits.redis.ready() : Promise.resolve(true),
      ]);
      return { database, redis: rateLimits.redis ? redis : undefined };
    },
    completions: services.completions,
    nextEdits: services.nextEdits,
    tokens: services.tokens,
    providerName: services.provider.name,
    lifecycle: services.lifecycle,
    usage: deps.usage,
    ids: services.ids,
    links: services.links,
    bus: deps.bus,
    agentSockets: realtime.agentSockets,
    consoleDir: options.consoleDir === null ? undefined : (options.consoleDir ?? consoleDir()),
    ...(services.engine ? engineViews(services.engine, clock) : {}),
    extensionVsix: extensionVsix(),
  });
  const timeouts = { ...HTTP_TIMEOUTS, ...options.httpTimeouts };
  const server = createServer(
    {
      noDelay: true,
      keepAliveTimeout: 65_000,
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      connectionsCheckingInterval: timeouts.checkIntervalMs,
      // Node answers a missing Host with a bare 400; the app answers it with the envelope (requestContext.ts).
      requireHostHeader: false,
    },
    app,
  );
  attachClientErrors(server, { logger, now: () => clock.now(), app, timeouts });
  const upgrades = attachUpgrades(server, {
    store,
    clock,
    logger,
    metrics: services.metrics,
    links: services.links,
    live: realtime.live,
    agentSockets: realtime.agentSockets,
    socketSlots: realtime.socketSlots,
    rateLimitStore: rateLimits.store,
    limits: config.rateLimits,
    windowMs: config.rateLimitWindowMs,
    clientAddress,
  });
  return { server, upgrades };
}

/** Listens and answers the URL served; if listening fails, `release` runs before the error is thrown. */
async function listen(server: Server, config: Readonly<Config>, release: () => Promise<void>): Promise<string> {
  server.listen(config.port, config.host);
  try {
    await once(server, "listening");
  } catch (error) {
    await release();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/** The relay's close(): stops taking work, lets streams and deliveries finish within the grace period, then closes everything, once. */
function closer(deps: {
  config: Readonly<Config>;
  logger: Logger;
  store: Store;
  bus: Bus;
  rateLimits: RateLimits;
  services: Services;
  realtime: Realtime;
  http: ReturnType<typeof createHttpServer>;
  usage: UsageRecorder;
  unlockDataFolder: () => void;
}): RunningRelay["close"] {
  const { server, upgrades } = deps.http;
  const { services, realtime } = deps;
  let closing: Promise<void> | undefined;
  return (graceMs = deps.config.shutdownGraceMs) => {
    closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Stopped before the sockets close, so the envelopes they cut short are not recorded as the agents' failures.
      const deliveriesStopped = awaitedLater(realtime.deliveries.stop(graceMs));
      await realtime.close();
      await deps.bus.close();
      upgrades.close();
      const [{ finished, aborted }] = await Promise.all([services.lifecycle.drain(graceMs), deliveriesStopped]);
      server.closeAllConnections();
      await closed;
      // Every completion and report is over: what they counted goes to the store before it closes.
      await deps.usage.stop();
      await deps.store.close();
      await deps.rateLimits.redis?.close();
      await services.transport.destroy();
      await services.engine?.close();
      deps.unlockDataFolder();
      deps.logger.info("relay stopped", { streams_finished: finished, streams_aborted: aborted });
    })();
    return closing;
  };
}

/**
 * Starts the embedded engine's child and waits for its model to load: a file that cannot be served fails the start
 * with the child's own message (not a GGUF file, damaged, no FIM tokens) rather than a relay that answers 503 forever.
 */
async function startEngine(
  settings: Readonly<EngineConfig>,
  options: StartOptions,
  logger: Logger,
  clock: Clock,
  metrics: Metrics,
): Promise<Engine> {
  if (!(await engineInstalled(settings.dir)))
    throw new EngineLoadError("not_installed", notInstalledMessage(settings.dir));
  const engine = createEngine({
    settings: {
      modelPath: options.modelPath ?? resolve(settings.model),
      moduleUrl: engineModuleUrl(settings.dir),
      sequences: settings.sequences,
      queue: settings.queue,
      threads: settings.threads,
      contextSize: settings.contextSize,
      nice: settings.nice,
      gpu: settings.gpu,
      ...(settings.fimTemplate === undefined ? {} : { fimTemplate: settings.fimTemplate }),
    },
    logger,
    clock,
    fork: options.engineFork ?? forkEngineChild(process.env),
    observer: {
      completed(stats) {
        if (stats.firstTokenMs !== undefined) metrics.engineFirstToken.observe({}, stats.firstTokenMs / 1000);
        const decodeMs = stats.generationMs - (stats.firstTokenMs ?? 0);
        if (stats.generatedTokens > 1 && decodeMs > 0)
          metrics.engineTokensPerSecond.observe({}, (stats.generatedTokens - 1) / (decodeMs / 1000));
        metrics.engineTokens.inc({ kind: "prompt" }, stats.promptTokens);
        metrics.engineTokens.inc({ kind: "evaluated" }, stats.evaluatedTokens);
        metrics.engineTokens.inc({ kind: "reused" }, stats.reusedTokens);
        metrics.engineTokens.inc({ kind: "generated" }, stats.generatedTokens);
      },
      restarted() {
        metrics.engineRestarts.inc();
      },
    },
    ...(options.engineSeed === undefined ? {} : { seed: options.engineSeed }),
  });
  try {
    await engine.started;
  } catch (error) {
    await engine.close();
    throw error;
  }
  return engine;
}

/** The engine as /healthz, /readyz and the model list show it. */
function engineViews(engine: Engine, clock: Clock) {
  return {
    engine: () => {
      const status = engine.status();
      return {
        state: status.state,
        model: status.info?.model,
        restarts: status.restarts,
        problem: status.state === "ready" ? undefined : status.lastProblem,
        retry_after:
          status.restartAt === undefined ? undefined : Math.max(1, Math.ceil((status.restartAt - clock.now()) / 1000)),
      };
    },
    servedBy: () => {
      const status = engine.status();
      return {
        provider: "engine",
        state: status.state,
        ...(status.info
          ? { model: status.info.model, engine: status.info.binary, context_size: status.info.contextSize }
          : {}),
      };
    },
  };
}
