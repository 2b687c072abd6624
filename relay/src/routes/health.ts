import { Router } from "express";
import { named } from "../http/requestContext";
import type { Metrics } from "../metrics";

/** GET /healthz (no auth) and GET /metrics (Prometheus text). */
export function createHealthRouter(deps: { metrics: Metrics; provider: string }): Router {
  const router = Router();
  // While draining, the app answers 503 before this router is reached, so a load balancer stops sending.
  router.get("/healthz", named("/healthz"), (_req, res) => {
    res.json({ status: "ok", provider: deps.provider });
  });
  router.get("/metrics", named("/metrics"), (_req, res) => {
    res.type("text/plain; version=0.0.4").send(deps.metrics.render());
  });
  return router;
}
