import type { IncomingMessage, ServerResponse } from "node:http";
import type { ErrorRequestHandler, Request, RequestHandler, Response } from "express";
import { holdHeaders, releaseHeaders } from "./heldHeaders";

/**
 * One route served in front of express: the completion route is the relay's hot path, and going around express's
 * router (path matching through every layer, a per-request prototype swap that defeats V8's inline caches) cut
 * its CPU per request by nearly a third. The next-edit route, asked after every pause right after a completion, has
 * a lane too. A lane runs the same middleware, in order, with express's `next` contract (an error skips to
 * `onError`; an async handler's rejection is an error), for one method and exact paths; every other spelling falls
 * through to express, which serves it the same way. Handlers given here may use only Node's request and response
 * API and the fields of `context.ts`, not express's helpers.
 */
export function createLane(options: {
  method: string;
  /** Exact paths (a query string is allowed); each is also the route name it is logged and measured under. */
  paths: readonly string[];
  handlers: readonly RequestHandler[];
  onError: ErrorRequestHandler;
}): (req: IncomingMessage, res: ServerResponse) => boolean {
  const paths = new Set(options.paths);
  const { handlers, onError } = options;
  return function lane(incoming, outgoing) {
    if (incoming.method !== options.method) return false;
    const url = incoming.url ?? "";
    const query = url.indexOf("?");
    const path = query === -1 ? url : url.slice(0, query);
    if (!paths.has(path)) return false;
    const req = incoming as Request;
    const res = outgoing as Response;
    req.routeName = path;
    let index = 0;
    // The headers decided on the way (request id, rate limit) wait for the answer, so a stream can be written
    // with one `writeHead` (heldHeaders.ts); an error's answer gets them first, in the order they were decided.
    holdHeaders(res);
    const fail = (error: unknown) => {
      releaseHeaders(res);
      onError(error, req, res, () => undefined);
    };
    const next = (error?: unknown) => {
      const handler = handlers[index++];
      if (error !== undefined && error !== null) fail(error);
      else if (handler) run(handler);
    };
    const run = (handler: RequestHandler) => {
      try {
        const result: unknown = handler(req, res, next);
        if (result instanceof Promise) result.catch(fail);
      } catch (thrown) {
        fail(thrown);
      }
    };
    next();
    return true;
  };
}
