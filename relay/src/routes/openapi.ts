import type { RequestHandler } from "express";
import { openApiDocumentText } from "../openapi/document";
import { packageVersion } from "../version";

/**
 * `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of this relay's API (relay/src/openapi/). Public, like the
 * API reference it mirrors: it holds no workspace's data. Built on the first request and kept.
 */
export function createOpenApiHandler(): RequestHandler {
  return function openApi(_req, res) {
    res.setHeader("Content-Type", "application/json; charset=utf-8");
    res.setHeader("Cache-Control", "no-cache");
    res.end(openApiDocumentText(packageVersion()));
  };
}
