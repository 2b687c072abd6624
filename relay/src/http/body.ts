import { RelayError, describeZodError } from "@tab-relay/shared";
import type { Request, RequestHandler } from "express";
import type { z } from "zod";
import { JSON_SHAPE_LIMITS, jsonShapeProblem } from "../jsonShape";

const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([\w-]+)"?/i;

/**
 * Reads JSON bodies of POST, PUT and PATCH requests, up to `limitBytes`, as UTF-8. A body of another media type
 * is refused with 415, a larger one with 413 (at once when Content-Length says so), invalid JSON with 400.
 * It does only this, which keeps it cheap on the completion hot path.
 */
export function createJsonBody(limitBytes: number): RequestHandler {
  return function jsonBody(req, _res, next) {
    if (!BODY_METHODS.has(req.method) || !hasBody(req)) return next();
    const type = req.headers["content-type"] ?? "";
    if (!JSON_TYPE.test(type)) {
      return next(
        new RelayError(
          "UNSUPPORTED_MEDIA_TYPE",
          "Content-Type: the body must be JSON; send `Content-Type: application/json`",
        ),
      );
    }
    const charset = CHARSET.exec(type)?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
      return next(new RelayError("UNSUPPORTED_MEDIA_TYPE", `Content-Type: the body must be UTF-8, not ${charset}`));
    }
    const encoding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
    if (encoding !== "identity") {
      return next(new RelayError("UNSUPPORTED_MEDIA_TYPE", "Content-Encoding: the body must be sent uncompressed"));
    }
    const tooLarge = () => new RelayError("PAYLOAD_TOO_LARGE", `body: larger than ${limitBytes} bytes`);
    if (Number(req.headers["content-length"] ?? 0) > limitBytes) return next(tooLarge());

    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const fail = (error: RelayError) => {
      if (failed) return;
      failed = true;
      req.removeListener("data", onData);
      // Stop reading but leave the connection able to carry the error response.
      req.resume();
      next(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) fail(tooLarge());
      else chunks.push(chunk);
    };
    req.on("data", onData);
    req.on("error", () => fail(new RelayError("VALIDATION_ERROR", "body: not received completely")));
    req.on("end", () => {
      if (failed) return;
      const text =
        chunks.length === 1 ? (chunks[0] as Buffer).toString("utf8") : Buffer.concat(chunks).toString("utf8");
      // Checked before parsing, which costs by values, not bytes: 512 KiB of `[[[…` held the loop for a fifth of a
      // second, and the sign-in route reads its body before anyone is authenticated.
      if (jsonShapeProblem(text) !== undefined) {
        const { maxDepth, maxValues } = JSON_SHAPE_LIMITS;
        return fail(
          new RelayError(
            "VALIDATION_ERROR",
            `body: JSON nested more than ${maxDepth} deep or holding more than ${maxValues} values; no request of this API needs either`,
          ),
        );
      }
      try {
        req.body = JSON.parse(text) as unknown;
      } catch {
        return fail(new RelayError("VALIDATION_ERROR", "body: not valid JSON"));
      }
      next();
    });
  };
}

function hasBody(req: Request): boolean {
  const length = req.headers["content-length"];
  return length !== undefined ? length !== "0" : req.headers["transfer-encoding"] !== undefined;
}

/** Validates `value` against `schema` at the edge; the error names the offending field. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, root?: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new RelayError("VALIDATION_ERROR", describeZodError(result.error, root, { input: value }));
  return result.data;
}
