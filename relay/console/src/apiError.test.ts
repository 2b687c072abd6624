import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError, errorOfAnswer } from "./apiError";

test("a 429 shows the relay's message, which says when to try again, once", () => {
  const message = "Rate limit of 60 requests per minute exceeded; retry after 12 s";
  const response = new Response(null, { status: 429, headers: { "Retry-After": "12" } });
  const error = errorOfAnswer(response, { error: { code: "RATE_LIMIT_EXCEEDED", message } });
  assert.ok(error instanceof ApiError);
  assert.deepEqual([error.status, error.code, error.message], [429, "RATE_LIMIT_EXCEEDED", message]);
});

test("an answer without an error envelope is named by its status", () => {
  const error = errorOfAnswer(new Response(null, { status: 502, statusText: "Bad Gateway" }), null);
  assert.deepEqual([error.status, error.code, error.message], [502, "HTTP_502", "The relay answered 502 Bad Gateway"]);
});
