import { RelayError, toRelayError } from "@tab-relay/shared";
import type { ServerResponse } from "node:http";
import type { ErrorRequestHandler, RequestHandler } from "express";
import type { Logger } from "../logger";

/** The one place errors become responses: `{ error: { code, message } }` with the table's status. */
export function createErrorHandler(deps: { logger: Logger }): ErrorRequestHandler {
  return function errorHandler(error, req, res, _next) {
    const relayError = toRelayError(error);
    // Provider failures (502, 504) are logged where they happen; here only what nobody else has seen.
    if (relayError.code === "INTERNAL_ERROR") {
      deps.logger.error("request failed", { request_id: req.requestId, code: relayError.code, error: relayError.cause ?? relayError });
    }
    // A stream already under way cannot change its status; ending the connection is the only honest signal.
    if (res.headersSent) {
      res.destroy();
      return;
    }
    for (const [name, value] of Object.entries(relayError.headers)) res.setHeader(name, value);
    sendJson(res, relayError.status, relayError.toBody());
  };
}

/** A JSON response with Node's own API, so it also serves requests that never went through express. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

export const notFound: RequestHandler = function notFound(req, _res, next) {
  next(new RelayError("NOT_FOUND", `No route for ${req.method} ${req.path}`));
};
