import { Router } from "express";
import { named } from "../http/requestContext";
import type { Metrics } from "../metrics";

/** GET /healthz and /readyz (no auth) and GET /metrics (Prometheus text). */
export function createHealthRouter(deps: {
  metrics: Metrics;
  provider: string;
  ready(): Promise<{ database: boolean; redis: boolean | undefined }>;
}): Router {
  const router = Router();
  // While draining, the app answers 503 before this router is reached, so a load balancer stops sending.
  router.get("/healthz", named("/healthz"), (_req, res) => {
    res.json({ status: "ok", provider: deps.provider });
  });
  // Live is /healthz; ready is this: the relay can serve because its database (and Redis, when used) answer.
  router.get("/readyz", named("/readyz"), async (_req, res) => {
    const checks = await deps.ready();
    const ok = checks.database && checks.redis !== false;
    res.status(ok ? 200 : 503).json({
      status: ok ? "ready" : "not ready",
      database: checks.database,
      ...(checks.redis !== undefined ? { redis: checks.redis } : {}),
    });
  });
  router.get("/metrics", named("/metrics"), async (_req, res) => {
    res.type("text/plain; version=0.0.4").send(await deps.metrics.render());
  });
  return router;
}
