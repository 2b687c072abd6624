import { RelayError, toRelayError } from "@tab-relay/shared";
import type { ErrorRequestHandler, RequestHandler } from "express";
import type { Logger } from "../logger";

/** body-parser's error types, mapped onto the one error table. */
function fromBodyParser(error: unknown): RelayError | undefined {
  if (typeof error !== "object" || error === null || !("type" in error)) return undefined;
  switch ((error as { type: unknown }).type) {
    case "entity.too.large":
      return new RelayError("PAYLOAD_TOO_LARGE", `Request body is larger than ${(error as { limit?: number }).limit ?? "the limit of"} bytes`);
    case "entity.parse.failed":
      return new RelayError("VALIDATION_ERROR", "Request body is not valid JSON");
    case "encoding.unsupported":
    case "charset.unsupported":
      return new RelayError("UNSUPPORTED_MEDIA_TYPE", "Request body must be UTF-8 JSON");
    case "request.aborted":
      return new RelayError("VALIDATION_ERROR", "Request body was not received completely");
    default:
      return undefined;
  }
}

/** The one place errors become responses: `{ error: { code, message } }` with the table's status. */
export function createErrorHandler(deps: { logger: Logger }): ErrorRequestHandler {
  return function errorHandler(error, req, res, _next) {
    const relayError = fromBodyParser(error) ?? toRelayError(error);
    if (relayError.status >= 500) {
      deps.logger.error("request failed", { request_id: req.requestId, code: relayError.code, error: relayError.cause ?? relayError });
    }
    // A stream already under way cannot change its status; ending the connection is the only honest signal.
    if (res.headersSent) {
      res.destroy();
      return;
    }
    for (const [name, value] of Object.entries(relayError.headers)) res.setHeader(name, value);
    res.status(relayError.status).json(relayError.toBody());
  };
}

export const notFound: RequestHandler = function notFound(req, _res, next) {
  next(new RelayError("NOT_FOUND", `No route for ${req.method} ${req.path}`));
};
