import { Router } from "express";
import { named } from "../http/requestContext";
import type { Lifecycle } from "../lifecycle";
import type { Metrics } from "../metrics";

/** GET /healthz (no auth) and GET /metrics (Prometheus text). */
export function createHealthRouter(deps: { lifecycle: Lifecycle; metrics: Metrics; provider: string }): Router {
  const router = Router();
  router.get("/healthz", named("/healthz"), (_req, res) => {
    if (deps.lifecycle.draining) {
      res.status(503).json({ status: "draining" });
      return;
    }
    res.json({ status: "ok", provider: deps.provider });
  });
  router.get("/metrics", named("/metrics"), (_req, res) => {
    res.type("text/plain; version=0.0.4").send(deps.metrics.render());
  });
  return router;
}
