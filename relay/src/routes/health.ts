import { Router } from "express";
import { named } from "../http/requestContext";
import type { Metrics } from "../metrics";

/** The embedded engine as /healthz and /readyz show it. */
export interface EngineHealth {
  state: "starting" | "ready" | "restarting" | "stopped";
  model: string | undefined;
  restarts: number;
  /** Why it last stopped, while it is not ready. */
  problem: string | undefined;
  /** Seconds until the next start, while restarting. */
  retry_after: number | undefined;
}

/**
 * GET /healthz and /readyz (no auth) and GET /metrics (Prometheus text). With the embedded engine, both say its
 * state; the relay is live while the engine restarts (it answers 503 to completions itself), and not ready.
 */
export function createHealthRouter(deps: {
  metrics: Metrics;
  provider: string;
  ready(): Promise<{ database: boolean; redis: boolean | undefined }>;
  engine?: () => EngineHealth;
}): Router {
  const router = Router();
  // While draining, the app answers 503 before this router is reached, so a load balancer stops sending.
  router.get("/healthz", named("/healthz"), (_req, res) => {
    res.json({ status: "ok", provider: deps.provider, ...(deps.engine ? { engine: deps.engine() } : {}) });
  });
  // Live is /healthz; ready is this: the relay can serve because its database (and Redis, when used) answer.
  router.get("/readyz", named("/readyz"), async (_req, res) => {
    const checks = await deps.ready();
    const engine = deps.engine?.();
    const ok = checks.database && checks.redis !== false && (engine === undefined || engine.state === "ready");
    if (!ok && engine?.retry_after !== undefined) res.setHeader("Retry-After", String(engine.retry_after));
    res.status(ok ? 200 : 503).json({
      status: ok ? "ready" : "not ready",
      database: checks.database,
      ...(checks.redis !== undefined ? { redis: checks.redis } : {}),
      ...(engine ? { engine } : {}),
    });
  });
  router.get("/metrics", named("/metrics"), async (_req, res) => {
    res.type("text/plain; version=0.0.4").send(await deps.metrics.render());
  });
  return router;
}
