import { once } from "node:events";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createApp } from "./app";
import { createClientAddress } from "./http/clientAddress";
import { HTTP_TIMEOUTS, type HttpTimeouts, attachClientErrors } from "./http/clientErrors";
import { type Clock, systemClock } from "./clock";
import { createCompletionService } from "./completion/service";
import { createWorkerTokenCounter } from "./completion/tokenCounter";
import { type Config, plainHttpWarning } from "./config";
import { createLifecycle } from "./lifecycle";
import { type Logger, createJsonLogger } from "./logger";
import { createMetrics } from "./metrics";
import { createLocalProvider } from "./providers/local";
import { type HttpPost, createHttpPost } from "./providers/httpPost";
import { createUpstreamProvider, deprecatedApiWarning, upstreamMode } from "./providers/upstream";
import type { ModelProvider } from "./providers/types";
import { createMemoryRateLimitStore } from "./rateLimit/memoryStore";
import { createDeliveryWorker } from "./delivery/worker";
import { createWebhookClient } from "./delivery/webhookClient";
import { newId } from "./auth/secrets";
import { createLinks } from "./links";
import { createPostgresBus } from "./bus/postgres";
import { createLocalBus } from "./bus/types";
import { createRedisRateLimitStore } from "./rateLimit/redisStore";
import { openPostgresStore } from "./store/postgres";
import type { Bus } from "./bus/types";
import { CLOSE, createAgentSockets } from "./live/agentSockets";
import { createLiveHub } from "./live/hub";
import { attachUpgrades } from "./live/upgrade";
import { createSortableIds } from "./store/sortableIds";
import { openSqliteStore } from "./store/sqlite";
import { lockDataFolder, looseModeWarnings } from "./dataFolder";
import type { Store } from "./store/types";

export const DATABASE_FILE = "relay.db";
/** How long a relay's record of an agent socket lasts without renewal (renewed every third of it). */
const SOCKET_PRESENCE_MS = 45_000;

export function databasePath(dataDir: string): string {
  return join(dataDir, DATABASE_FILE);
}

/** PostgreSQL when a database URL is configured (several relays can share it), else SQLite in the data folder. */
export function openStore(config: Pick<Config, "dataDir" | "databaseUrl">, logger?: Logger): Promise<Store> {
  return config.databaseUrl ? openPostgresStore(config.databaseUrl, logger ? { logger } : {}) : openSqliteStore(databasePath(config.dataDir));
}

/** The model provider; `logger` gets the start-up warning for a deprecated mode name and the upstream's hints. */
export function createProvider(config: Pick<Config, "provider" | "upstream">, post: HttpPost, logger?: Logger): ModelProvider {
  if (config.provider === "openai" && config.upstream) {
    const { url, model, apiKey, api, apiAlias, fimTemplate, infillMaxPredictMs, timeoutMs } = config.upstream;
    const deprecated = apiAlias === undefined ? undefined : deprecatedApiWarning(apiAlias);
    if (deprecated !== undefined) logger?.warn(deprecated);
    const mode = upstreamMode({ api, baseUrl: url, model, fimTemplate, infillMaxPredictMs });
    return createUpstreamProvider({ mode, model, post, timeoutMs, ...(apiKey ? { apiKey } : {}), ...(logger ? { logger } : {}) });
  }
  return createLocalProvider();
}

/** The worker sits beside this module: `tokenWorker.ts` in the sources, `tokenWorker.js` in the bundle. */
function tokenWorkerUrl(): URL {
  const bundled = import.meta.url.endsWith(".js");
  return new URL(bundled ? "./tokenWorker.js" : "./completion/tokenWorker.ts", import.meta.url);
}

/** `dist/console` of the relay package, from the bundle (`dist/cli.js`) or the sources (`src/main.ts`). */
function consoleDir(): string | undefined {
  const bundled = import.meta.url.endsWith(".js");
  const dir = fileURLToPath(new URL(bundled ? "./console/" : "../dist/console/", import.meta.url));
  return existsSync(join(dir, "index.html")) ? dir : undefined;
}

export interface RunningRelay {
  url: string;
  server: Server;
  store: Store;
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
}

/** The composition root: builds the real dependencies from config and listens. */
export async function startRelay(config: Readonly<Config>, options: StartOptions = {}): Promise<RunningRelay> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createJsonLogger({ level: config.logLevel, write: (line) => process.stdout.write(line), now: () => clock.now() });
  const store = options.store ?? (await openStore(config, logger));
  if ((await store.workspaces.count()) === 0) {
    await store.close();
    const where = config.databaseUrl ? "the database" : config.dataDir;
    const flag = config.databaseUrl ? "--database URL" : `--data ${config.dataDir}`;
    throw new Error(`No workspace in ${where}: run \`tab-relay init ${flag} --workspace SLUG --owner NAME\` first`);
  }
  let unlockDataFolder = () => {};
  if (!config.databaseUrl) {
    try {
      unlockDataFolder = lockDataFolder(config.dataDir, process.pid);
    } catch (error) {
      await store.close();
      throw error;
    }
    for (const warning of looseModeWarnings(config.dataDir, DATABASE_FILE)) logger.warn(warning);
  }
  // Counters in Redis are shared by every relay; if Redis stops answering, each relay counts alone until it is back.
  const memoryLimits = createMemoryRateLimitStore();
  const redisLimits = config.redisUrl ? createRedisRateLimitStore({ url: config.redisUrl, logger, fallback: memoryLimits }) : undefined;
  if (redisLimits && !(await redisLimits.ready())) logger.warn("Redis is not answering; rate limits hold per relay until it does");
  const metrics = createMetrics();
  const lifecycle = createLifecycle();
  const transport = createHttpPost();
  const provider = createProvider(config, options.post ?? transport, logger);
  const completions = createCompletionService({ provider, metrics, logger, cacheEntries: config.cacheEntries });
  const tokens = createWorkerTokenCounter({ workerUrl: tokenWorkerUrl(), logger });
  const ids = createSortableIds(clock);
  const links = createLinks(config.publicUrl);
  const relayId = newId("rly");
  let shuttingDown = false;
  const bus = options.bus ?? (config.databaseUrl ? await createPostgresBus(config.databaseUrl, logger) : createLocalBus());
  const agentSockets = createAgentSockets({
    logger,
    clock,
    ackTimeoutMs: config.webhooks.socketAckTimeoutMs,
    onChange(agent, connected) {
      // At shutdown the relay's records are dropped at once (unmarkRelay); sockets closing then need nothing.
      if (shuttingDown) return;
      bus.publish({ topic: "agent", workspaceId: agent.workspace_id, agentId: agent.id, change: "updated" });
      const now = clock.now();
      if (!connected) {
        store.agentSockets.unmark(agent.id, relayId).catch((error: unknown) => logger.error("could not record a closed agent socket", { error }));
        return;
      }
      // Other relays leave this agent's events to this one; whatever waited for it goes out on the new connection.
      store.agentSockets
        .mark([agent.id], relayId, new Date(now + SOCKET_PRESENCE_MS).toISOString())
        .then(() => store.events.dueNow(agent.id, new Date(now).toISOString()))
        .then(
          () => deliveries.wake(),
          (error: unknown) => logger.error("could not release an agent's waiting events", { error }),
        );
    },
  });
  const live = createLiveHub({ store, links, logger, clock, ...(options.liveCheckMs === undefined ? {} : { checkMs: options.liveCheckMs }) });
  // This relay's sockets are renewed in the database while they last, so a dead relay's lapse within a minute.
  const presence = setInterval(() => {
    const until = new Date(clock.now() + SOCKET_PRESENCE_MS).toISOString();
    store.agentSockets.mark([...agentSockets.connectedIds()], relayId, until).catch((error: unknown) => logger.warn("could not renew agent sockets", { error }));
  }, SOCKET_PRESENCE_MS / 3);
  presence.unref();
  const deliveries = createDeliveryWorker({
    store,
    clock,
    logger,
    ids,
    client: createWebhookClient({ allowPrivate: config.webhooks.allowPrivate, timeoutMs: config.webhooks.timeoutMs, now: () => clock.now() }),
    retryScheduleMs: config.webhooks.retryScheduleMs,
    // A claim outlives any attempt (an attempt ends at its timeout), with room for signing and recording it.
    leaseMs: Math.max(config.webhooks.timeoutMs, config.webhooks.socketAckTimeoutMs) + 10_000,
    sockets: agentSockets,
    onAttempt: (event) => bus.publish({ topic: "attempt", workspaceId: event.workspace_id, agentId: event.agent_id }),
  });
  bus.subscribe(function onBus(message) {
    switch (message.topic) {
      case "events":
        return deliveries.wake();
      case "message":
        if (live.listening(message.workspaceId)) void forwardMessage(message.workspaceId, message.conversationId, message.messageId);
        return;
      case "agent":
        if (message.change !== "updated") agentSockets.closeAgent(message.agentId, CLOSE[message.change]);
        return live.agentUpdated(message.workspaceId, message.agentId);
      case "attempt":
        return live.agentUpdated(message.workspaceId, message.agentId);
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
  const clientAddress = createClientAddress(config.trustProxy);
  const app = createApp({
    config,
    store,
    clock,
    logger,
    metrics,
    rateLimitStore: redisLimits ?? memoryLimits,
    clientAddress,
    async ready() {
      // Ready when the database (and Redis, when configured) answer: a load balancer sends nothing before.
      const [database, redis] = await Promise.all([
        store.workspaces.count().then(() => true, () => false),
        redisLimits ? redisLimits.ready() : Promise.resolve(true),
      ]);
      return { database, redis: redisLimits ? redis : undefined };
    },
    completions,
    tokens,
    providerName: provider.name,
    lifecycle,
    ids,
    links,
    bus,
    agentSockets,
    consoleDir: options.consoleDir === null ? undefined : (options.consoleDir ?? consoleDir()),
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
    metrics,
    links,
    live,
    agentSockets,
    rateLimitStore: redisLimits ?? memoryLimits,
    limits: config.rateLimits,
    windowMs: config.rateLimitWindowMs,
    clientAddress,
  });
  server.listen(config.port, config.host);
  try {
    await once(server, "listening");
  } catch (error) {
    // The port is taken or the address is wrong: release what was opened, so the caller can report and exit.
    await Promise.all([store.close(), tokens.close()]);
    await transport.destroy();
    unlockDataFolder();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  links.setListeningUrl(url);
  // Whatever was pending when the relay last stopped goes out now.
  await deliveries.start();
  logger.info("relay listening", { url, public_url: links.base(), provider: provider.name, data: config.dataDir });
  const exposed = plainHttpWarning(config);
  if (exposed !== undefined) logger.warn(exposed);

  let closing: Promise<void> | undefined;
  const close = (graceMs = config.shutdownGraceMs) => {
    closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Stopped before the sockets close, so the envelopes they cut short are not recorded as the agents' failures.
      const deliveriesStopped = deliveries.stop(graceMs);
      shuttingDown = true;
      live.close();
      clearInterval(presence);
      agentSockets.close();
      await store.agentSockets.unmarkRelay(relayId).catch(() => undefined);
      await bus.close();
      upgrades.close();
      const [{ finished, aborted }] = await Promise.all([lifecycle.drain(graceMs), deliveriesStopped]);
      server.closeAllConnections();
      await closed;
      await store.close();
      await redisLimits?.close();
      await tokens.close();
      await transport.destroy();
      unlockDataFolder();
      logger.info("relay stopped", { streams_finished: finished, streams_aborted: aborted });
    })();
    return closing;
  };
  return { url, server, store, close };
}
