import { RelayError } from "@tab-relay/shared";
import type { RequestHandler } from "express";
import type { ClientAddress } from "./clientAddress";
import type { Logger } from "../logger";
import { setOrHold } from "./heldHeaders";
import { createIdSequence } from "./ids";
import type { Metrics } from "../metrics";

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Gives every request an id (echoed in `X-Request-Id`), and logs and measures it when the response ends. */
export function createRequestContext(deps: {
  logger: Logger;
  metrics: Metrics;
  clientAddress: ClientAddress;
}): RequestHandler {
  const nextRequestId = createIdSequence("req_");
  return function requestContext(req, res, next) {
    const started = process.hrtime.bigint();
    const incoming = req.headers["x-request-id"];
    req.requestId = typeof incoming === "string" && CLIENT_REQUEST_ID.test(incoming) ? incoming : nextRequestId();
    setOrHold(res, "X-Request-Id", req.requestId);
    res.on("close", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = req.routeName ?? "unmatched";
      const status = res.headersSent ? res.statusCode : 499;
      const labels = { route, method: req.method, status: String(status) };
      deps.metrics.httpRequests.inc(labels);
      deps.metrics.httpDuration.observe(labels, seconds);
      if (!deps.logger.enabled("info")) return;
      deps.logger.info("request", {
        request_id: req.requestId,
        method: req.method,
        route,
        status,
        duration_ms: Math.round(seconds * 1e6) / 1e3,
        client: deps.clientAddress(req),
        key_id: req.caller?.key.id,
        agent_id: req.agentCaller?.agent.id,
        aborted: !res.writableFinished || undefined,
      });
    });
    // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host. Node would, but bare
    // (lib/_http_server.js, `requireHostHeader`, turned off in main.ts so the answer carries the envelope).
    if (req.headers.host === undefined && req.httpVersionMinor === 1 && req.httpVersionMajor === 1) {
      return next(new RelayError("VALIDATION_ERROR", "Host: required in an HTTP/1.1 request (RFC 9112 §3.2)"));
    }
    // RFC 9112 §3.2: a server MUST answer 400 to a request with more than one Host field. Node keeps the first and
    // drops the rest (lib/_http_incoming.js, matchKnownFields), so a proxy that read the other one would disagree.
    if (hostFields(req.rawHeaders) > 1) {
      return next(
        new RelayError("VALIDATION_ERROR", "Host: sent more than once; send one Host header (RFC 9112 §3.2)"),
      );
    }
    next();
  };
}

/**
 * Names the route (mount point + pattern) for logs and metrics, so neither ids in paths nor spellings become labels.
 * `req.baseUrl` is the mount path as this request spelled it: express matches mount paths ignoring case, so
 * `/ApI/V1` reaches the `/api/v1` mount. Every mount path of the app is a lower-case literal, so the lower-cased
 * spelling is the mount path itself, and the labels stay a fixed set however requests spell their paths.
 */
export function named(pattern: string): RequestHandler {
  return function nameRoute(req, _res, next) {
    req.routeName = req.baseUrl.toLowerCase() + pattern;
    next();
  };
}

/** How many Host fields a request carries (rawHeaders alternates names and values). */
export function hostFields(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    // Only a four-letter name is lower-cased: a copy of every header name per request was garbage for nothing.
    const name = rawHeaders[i];
    if (name?.length === 4 && name.toLowerCase() === "host") count++;
  }
  return count;
}
