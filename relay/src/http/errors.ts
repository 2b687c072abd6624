import {
  API_PREFIX,
  OPENAI_BASE_PATH,
  OPENAI_COMPLETIONS_PATH,
  RelayError,
  TAB_COMPLETIONS_PATH,
  toRelayError,
} from "@tab-relay/shared";
import type { ServerResponse } from "node:http";
import type { ErrorRequestHandler, RequestHandler } from "express";
import type { Logger } from "../logger";
import { releaseHeaders } from "./heldHeaders";

/** How long a client waits before trying a write again that found the database busy. */
const BUSY_RETRY_AFTER_S = 1;

/**
 * SQLite gave up waiting for another connection's write lock (past `busy_timeout`): better-sqlite3 throws a
 * SqliteError whose `code` is SQLite's result code as a string (its docs/api.md, "class SqliteError"), SQLITE_BUSY or
 * an extended SQLITE_BUSY_* code. That is a database busy for now, not a failure of the relay.
 */
function databaseBusy(error: unknown): RelayError | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !/^SQLITE_BUSY(_|$)/.test(code)) return undefined;
  return new RelayError(
    "SERVICE_UNAVAILABLE",
    `The database is busy with another writer (${code}); nothing was changed. Try again after Retry-After seconds`,
    { cause: error, headers: { "Retry-After": String(BUSY_RETRY_AFTER_S) } },
  );
}

/** The one place errors become responses: `{ error: { code, message } }` with the table's status. */
export function createErrorHandler(deps: { logger: Logger }): ErrorRequestHandler {
  return function errorHandler(error, req, res, _next) {
    const busy = databaseBusy(error);
    if (busy !== undefined) deps.logger.warn("database busy", { request_id: req.requestId, error });
    const relayError = busy ?? toRelayError(error);
    // Provider failures (502, 504) are logged where they happen; here only what nobody else has seen.
    if (relayError.code === "INTERNAL_ERROR") {
      deps.logger.error("request failed", {
        request_id: req.requestId,
        code: relayError.code,
        error: relayError.cause ?? relayError,
      });
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
  releaseHeaders(res);
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

/** How much of an unknown path the answer repeats. */
const ECHOED_PATH_CHARS = 200;
/** A path that was meant for the completion route: OpenAI's `/v1/chat/completions`, a missing `/tab`, and so on. */
const LOOKS_LIKE_COMPLETIONS = /\/(?:chat\/)?completions?\/?$/i;
/** The completion routes (as the API router sees them, below its mount point), which answer POST only. */
const COMPLETION_PATHS = new Set([TAB_COMPLETIONS_PATH, OPENAI_COMPLETIONS_PATH]);

/** The path as the client sent it (a router mounted at a prefix sees only the rest of it), without the query. */
function pathAsSent(req: Parameters<RequestHandler>[0]): string {
  const path = (req.originalUrl || req.url).split("?")[0] ?? "";
  return path.length > ECHOED_PATH_CHARS ? `${path.slice(0, ECHOED_PATH_CHARS)}…` : path;
}

export const notFound: RequestHandler = function notFound(req, _res, next) {
  const path = pathAsSent(req);
  // Express matches routes ignoring case and a trailing slash; so does this.
  if (COMPLETION_PATHS.has(req.path.toLowerCase().replace(/\/+$/, "")) && req.method !== "POST")
    return next(
      new RelayError("METHOD_NOT_ALLOWED", `${req.method} ${path}: completions are asked for with POST`, {
        headers: { Allow: "POST" },
      }),
    );
  const hint = LOOKS_LIKE_COMPLETIONS.test(path)
    ? `; completions are at POST ${API_PREFIX}${TAB_COMPLETIONS_PATH} (for the openai SDK, the base URL ${API_PREFIX}${OPENAI_BASE_PATH})`
    : "";
  next(new RelayError("NOT_FOUND", `No route for ${req.method} ${path}${hint}`));
};
