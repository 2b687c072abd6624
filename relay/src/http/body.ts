import { RelayError, describeZodError } from "@tab-relay/shared";
import express, { type RequestHandler } from "express";
import type { z } from "zod";

const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);

/** Parses JSON bodies up to `limitBytes`; a body of any other media type is refused with 415. */
export function createJsonBody(limitBytes: number): RequestHandler[] {
  const parse = express.json({ limit: limitBytes, strict: false });
  return [
    function requireJson(req, _res, next) {
      const hasBody = req.headers["content-length"] !== undefined ? req.headers["content-length"] !== "0" : req.headers["transfer-encoding"] !== undefined;
      if (BODY_METHODS.has(req.method) && hasBody && !req.is("application/json")) {
        return next(new RelayError("UNSUPPORTED_MEDIA_TYPE", "Request body must be JSON; send `Content-Type: application/json`"));
      }
      next();
    },
    parse,
  ];
}

/** Validates `value` against `schema` at the edge; the error names the offending field. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, root?: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new RelayError("VALIDATION_ERROR", describeZodError(result.error, root));
  return result.data;
}
