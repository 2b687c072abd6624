import { RelayError } from "@tab-relay/shared";
import type { RequestHandler } from "express";

/** Long enough to recognise the path in an error, short enough that an echo of a 16 KiB request line stays small. */
const SHOWN_PATH_CHARS = 256;

/**
 * Answers 400 for a path that does not percent-decode (`%ZZ`, a truncated `%E0%A4%A`, bytes that are not UTF-8),
 * before any route sees it. Express 5 decodes paths in two places, each its own way: router 2.x's `decodeParam`
 * (node_modules/router/lib/layer.js) throws a `URIError` while matching a layer with parameters, which reached the
 * error handler as an unknown error (500); send 1.x's `decode` (node_modules/send/index.js, used by serve-static)
 * turns it into a 400 that serve-static's `fallthrough` swallows, so a console path then fell through to a 404 or
 * even to the console's page. One check here gives every family the same answer. Paths without `%` (the completion
 * lane's, and nearly every request's) cost one `indexOf`.
 */
export const rejectUndecodablePath: RequestHandler = function rejectUndecodablePath(req, _res, next) {
  const url = req.url;
  const query = url.indexOf("?");
  const path = query === -1 ? url : url.slice(0, query);
  if (path.indexOf("%") === -1) return next();
  try {
    decodeURIComponent(path);
  } catch {
    const shown = path.length > SHOWN_PATH_CHARS ? `${path.slice(0, SHOWN_PATH_CHARS)}…` : path;
    return next(
      new RelayError(
        "VALIDATION_ERROR",
        `path: ${JSON.stringify(shown)} has a broken %-escape (each % must begin an escaped UTF-8 byte such as %20)`,
      ),
    );
  }
  next();
};
