import { createHash, timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import { RelayError } from "@tab-relay/shared";
import { type Request, Router } from "express";
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
  /** TAB_RELAY_METRICS_TOKEN: when set, /metrics needs it as a bearer token. */
  metricsToken?: string | undefined;
  engine?: () => EngineHealth;
}): Router {
  const wanted = deps.metricsToken === undefined ? undefined : digest(deps.metricsToken);
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
  router.get("/metrics", named("/metrics"), async (req, res) => {
    // The series name every workspace's usage (languages, routes, counts), so they are the operator's alone.
    if (wanted !== undefined) {
      const given = /^Bearer ([^\s]+)$/.exec(req.headers.authorization ?? "")?.[1];
      if (given === undefined || !timingSafeEqual(digest(given), wanted))
        throw new RelayError("UNAUTHORIZED", "Authorization: /metrics needs `Bearer <TAB_RELAY_METRICS_TOKEN>`");
    } else if (!directFromThisMachine(req)) {
      throw new RelayError(
        "FORBIDDEN",
        "/metrics answers only on this machine without TAB_RELAY_METRICS_TOKEN; set it and send it as a bearer token",
      );
    }
    res.type("text/plain; version=0.0.4").send(await deps.metrics.render());
  });
  return router;
}

/** Both sides hashed first, so the comparison takes the same time whatever the lengths. */
function digest(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}

/**
 * A client on this machine, connected to the relay itself: a loopback socket that no proxy forwarded (a proxy on this
 * machine connects from loopback too, but adds `X-Forwarded-For` or `Forwarded`, as nginx's and Caddy's recipes do).
 */
function directFromThisMachine(req: Request): boolean {
  if (req.headers["x-forwarded-for"] !== undefined || req.headers.forwarded !== undefined) return false;
  const address = req.socket.remoteAddress ?? "";
  const v4 = address.startsWith("::ffff:") ? address.slice(7) : address;
  if (isIP(v4) === 4) return v4.startsWith("127.");
  return address === "::1";
}
