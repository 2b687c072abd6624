import { API_PREFIX, RelayError, TAB_COMPLETIONS_PATH } from "@tab-relay/shared";
import express, { type Express, Router } from "express";
import type { Clock } from "./clock";
import type { CompletionService } from "./completion/service";
import type { TokenCounter } from "./completion/tokenCounter";
import type { Config } from "./config";
import { createAuthenticate, requireCaller } from "./http/authenticate";
import { createJsonBody } from "./http/body";
import { createErrorHandler, notFound } from "./http/errors";
import { createRateLimit } from "./http/rateLimit";
import { createRequestContext } from "./http/requestContext";
import type { Lifecycle } from "./lifecycle";
import type { Logger } from "./logger";
import type { Metrics } from "./metrics";
import type { RateLimitStore } from "./rateLimit/types";
import { createApiKeysRouter } from "./routes/apiKeys";
import { createHealthRouter } from "./routes/health";
import { createMeRouter } from "./routes/me";
import { createTabRouter } from "./routes/tab";
import type { Store } from "./store/types";

export interface AppDeps {
  config: Pick<Config, "rateLimits" | "rateLimitWindowMs" | "maxBodyBytes">;
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  rateLimitStore: RateLimitStore;
  completions: CompletionService;
  tokens: TokenCounter;
  providerName: string;
  lifecycle: Lifecycle;
}

/** Builds the HTTP application. It never listens: main.ts (or a test) decides where. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(createRequestContext(deps));
  app.use(function refuseWhileDraining(_req, res, next) {
    if (!deps.lifecycle.draining) return next();
    res.setHeader("Connection", "close");
    next(new RelayError("SERVICE_UNAVAILABLE", "The relay is shutting down; retry on another instance"));
  });

  const api = Router();
  api.use(
    createAuthenticate(deps),
    createRateLimit({
      store: deps.rateLimitStore,
      clock: deps.clock,
      metrics: deps.metrics,
      limits: deps.config.rateLimits,
      windowMs: deps.config.rateLimitWindowMs,
      // Express matches routes ignoring case and a trailing slash; so must this, or a spelling would count as a write.
      isStreamingRoute: (req) => req.method === "POST" && req.path.toLowerCase().replace(/\/+$/, "") === TAB_COMPLETIONS_PATH,
    }),
    requireCaller,
    createJsonBody(deps.config.maxBodyBytes),
  );
  // The completion route is the hot path, so its router is tried first.
  api.use(createTabRouter(deps), createMeRouter(), createApiKeysRouter(deps), notFound);

  // The spec's samples use both prefixes, so both serve the same API; it is mounted before the health routes
  // so API requests pass through as few layers as possible.
  app.use([API_PREFIX, "/v1"], api);
  app.use(createHealthRouter({ metrics: deps.metrics, provider: deps.providerName }));
  app.use(notFound);
  app.use(createErrorHandler(deps));
  return app;
}
