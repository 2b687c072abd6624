import { ERROR_CODES, isErrorCode } from "@tab-relay/shared";
import { BODY_FIELDS, HTTP_ROUTES, MOUNTS } from "./catalogue";
import { type RawOutcome, type RawResponse, header } from "./rawHttp";

/** One broken promise of the relay's, seen in one response (or in the lack of one). */
export interface Violation {
  kind:
    | "5xx"
    | "envelope"
    | "validation-message"
    | "no-response"
    | "hung"
    | "retry-after"
    | "bad-json"
    | "stream"
    | "crash"
    | "health"
    | "rss"
    | "metrics";
  detail: string;
  status?: number | undefined;
  code?: string | undefined;
}

/** The first segment a VALIDATION_ERROR's message may start with besides a body field: what is validated as a whole (the request, when HTTP itself is malformed). */
const ROOTS = new Set(["request", "body", "path", "query", "headers", "method"]);
/** `field.sub[0].x: message` (a field path, a colon, a space, then the message) or `field.sub is required`. */
const FIELD_PATH = /^([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+|\[\d+\])*)(?:: \S| is required\b)/;
/** A header named as the field (`Sec-WebSocket-Key: ...`), as the WebSocket handshake's checks do. */
const HEADER_FIELD = /^([A-Za-z][A-Za-z0-9-]*): \S/;
const HEADERS = new Set([
  "authorization",
  "cookie",
  "content-type",
  "content-length",
  "content-encoding",
  "transfer-encoding",
  "x-csrf-token",
  "host",
  "origin",
  "upgrade",
  "connection",
  "sec-websocket-key",
  "sec-websocket-version",
  "sec-websocket-protocol",
  "sec-websocket-extensions",
]);

/**
 * Whether a validation message starts with the offending field's path, as README's API reference promises: the
 * relay's describeZodError names body fields bare (`tab_context.surface: ...`) and path and query fields under
 * `path.` and `query.`; the body as a whole is `body`, a header by its name.
 */
export function namesAField(message: string, fields: readonly string[]): boolean {
  const first = FIELD_PATH.exec(message)?.[1];
  if (first !== undefined && (ROOTS.has(first) || fields.includes(first) || BODY_FIELDS.has(first))) return true;
  const headerName = HEADER_FIELD.exec(message)?.[1];
  return headerName !== undefined && HEADERS.has(headerName.toLowerCase());
}

/** Checks `body` is exactly `{error: {code, message}}` with a code of the table and the table's status. */
export function envelopeProblems(
  status: number,
  contentType: string | undefined,
  body: Buffer,
): { problems: string[]; code?: string; message?: string } {
  if (!/^application\/json\b/i.test(contentType ?? "")) {
    return {
      problems: [
        `Content-Type ${JSON.stringify(contentType ?? null)}, body ${JSON.stringify(body.toString("utf8").slice(0, 80))}`,
      ],
    };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return { problems: [`body is not JSON: ${JSON.stringify(body.toString("utf8").slice(0, 80))}`] };
  }
  const problems: string[] = [];
  const envelope = parsed as { error?: { code?: unknown; message?: unknown } };
  if (
    parsed === null ||
    typeof parsed !== "object" ||
    Array.isArray(parsed) ||
    Object.keys(parsed).join() !== "error"
  ) {
    return { problems: [`not {error}: ${JSON.stringify(parsed).slice(0, 120)}`] };
  }
  const error = envelope.error;
  if (error === null || typeof error !== "object" || Object.keys(error).sort().join() !== "code,message") {
    return { problems: [`error is not {code, message}: ${JSON.stringify(error).slice(0, 120)}`] };
  }
  const { code, message } = error;
  if (!isErrorCode(code)) problems.push(`code ${JSON.stringify(code)} is not in shared/src/errors.ts`);
  else if (ERROR_CODES[code].status !== status)
    problems.push(`code ${code} belongs with ${ERROR_CODES[code].status}, answered ${status}`);
  if (typeof message !== "string" || message.trim() === "") problems.push("empty message");
  return {
    problems,
    ...(typeof code === "string" ? { code } : {}),
    ...(typeof message === "string" ? { message } : {}),
  };
}

/** A streamed completion ends with `data: [DONE]`, or with one `event: error` frame carrying the envelope. */
function streamProblems(body: string): string | undefined {
  const trimmed = body.trimEnd();
  if (trimmed.endsWith("data: [DONE]")) return undefined;
  const error = /event: error\ndata: (.*)$/.exec(trimmed);
  if (!error) return `stream ends with neither [DONE] nor an error event: ${JSON.stringify(trimmed.slice(-120))}`;
  try {
    const { problems } = envelopeProblems(500, "application/json", Buffer.from(error[1] as string));
    const real = problems.filter((problem) => !problem.startsWith("code "));
    return real.length > 0 ? `error event: ${real.join("; ")}` : undefined;
  } catch {
    return "error event is not JSON";
  }
}

/** Every promise one HTTP answer breaks. */
export function judgeResponse(
  request: { method: string; fields: readonly string[] },
  response: RawResponse,
): Violation[] {
  const out: Violation[] = [];
  const { status } = response;
  const contentType = header(response, "content-type");
  if (status >= 500) {
    const code = /"code":"([A-Z_]+)"/.exec(response.body.toString("utf8"))?.[1];
    out.push({ kind: "5xx", status, code, detail: `${status} ${code ?? ""}`.trim() });
  }
  // A browser's GET at an address nothing serves gets the console's not-found page (HTML), as docs/api.md says.
  const consoleNotFound = status === 404 && request.method === "GET" && /^text\/html/.test(contentType ?? "");
  if (status >= 400 && request.method !== "HEAD" && !consoleNotFound) {
    const { problems, code, message } = envelopeProblems(status, contentType, response.body);
    // An answer without the relay's request id was written before the app saw the request (Node's HTTP parser).
    const where =
      header(response, "x-request-id") === undefined ? " (no X-Request-Id: not answered by the relay's app)" : "";
    if (problems.length > 0 && status < 500)
      out.push({ kind: "envelope", status, code, detail: `${status}: ${problems.join("; ")}${where}` });
    if (code === "VALIDATION_ERROR" && message !== undefined && !namesAField(message, request.fields)) {
      out.push({
        kind: "validation-message",
        status,
        code,
        detail: `message does not start with a field path: ${JSON.stringify(message.slice(0, 120))}`,
      });
    }
    if (status === 429 && !/^\d+$/.test(header(response, "retry-after") ?? ""))
      out.push({ kind: "retry-after", status, code, detail: "429 without a Retry-After in seconds" });
  }
  if (status >= 200 && status < 300) {
    if (/^application\/json\b/i.test(contentType ?? "") && request.method !== "HEAD") {
      try {
        JSON.parse(response.body.toString("utf8"));
      } catch {
        out.push({
          kind: "bad-json",
          status,
          detail: `a ${status} whose JSON does not parse: ${JSON.stringify(response.body.toString("utf8").slice(0, 80))}`,
        });
      }
    }
    if (/^text\/event-stream/i.test(contentType ?? "")) {
      const problem = streamProblems(response.body.toString("utf8"));
      if (problem) out.push({ kind: "stream", status, detail: problem });
    }
  }
  return out;
}

/** Every promise an outcome breaks, including never answering. */
export function judgeOutcome(
  request: { method: string; fields: readonly string[]; mayGoUnanswered: boolean },
  outcome: RawOutcome,
): Violation[] {
  switch (outcome.kind) {
    case "response":
      return judgeResponse(request, outcome.response);
    case "timeout":
      return [{ kind: "hung", detail: `no answer within ${Math.round(outcome.ms)} ms` }];
    case "closed":
      return request.mayGoUnanswered
        ? []
        : [
            {
              kind: "no-response",
              detail: `the connection closed after ${outcome.received} bytes and no complete response`,
            },
          ];
    case "error":
      return request.mayGoUnanswered ? [] : [{ kind: "no-response", detail: `connection error: ${outcome.message}` }];
  }
}

/** Route names the relay may measure under: every catalogued route under each of its prefixes, the console, and `unmatched`. */
export function metricRouteNames(): Set<string> {
  const names = new Set(["/console", "unmatched"]);
  for (const route of HTTP_ROUTES) for (const prefix of MOUNTS[route.mount]) names.add(`${prefix}${route.path}`);
  return names;
}

/**
 * The `route` labels of `/metrics` that are not route names. Labels must come from the routes, never from how a
 * request spelled its path: each spelling would be a new series, and the metrics would grow without bound.
 */
export function strayMetricRoutes(metrics: string): string[] {
  const allowed = metricRouteNames();
  const found = new Set([...metrics.matchAll(/route="((?:[^"\\]|\\.)*)"/g)].map((match) => match[1] as string));
  return [...found].filter((name) => !allowed.has(name));
}
