/**
 * Every error the relay can answer with, and the HTTP status that goes with it.
 * The relay renders these in one place; clients branch on `code`, never on message text.
 * There is no "retryable" column: whether to try again depends on the request and is each client's decision, from
 * the HTTP status (a proxy's error page has no code). The extension waits out a 429 and stops at 401/403
 * (extension/src/core/status.ts); the Socket Mode client stops at 401/403; a post answered 5xx, by the relay or a
 * proxy in front of it, may already be stored, so an agent that posts it again can say it twice.
 */
export const ERROR_CODES = {
  VALIDATION_ERROR: { status: 400 },
  UNAUTHORIZED: { status: 401 },
  INVALID_TOKEN: { status: 401 },
  FORBIDDEN: { status: 403 },
  AGENT_PAUSED: { status: 403 },
  NOT_IN_CONVERSATION: { status: 403 },
  NOT_FOUND: { status: 404 },
  METHOD_NOT_ALLOWED: { status: 405 },
  CONFLICT: { status: 409 },
  PAYLOAD_TOO_LARGE: { status: 413 },
  UNSUPPORTED_MEDIA_TYPE: { status: 415 },
  RATE_LIMIT_EXCEEDED: { status: 429 },
  INTERNAL_ERROR: { status: 500 },
  UPSTREAM_ERROR: { status: 502 },
  SERVICE_UNAVAILABLE: { status: 503 },
  UPSTREAM_TIMEOUT: { status: 504 },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.prototype.hasOwnProperty.call(ERROR_CODES, value);
}

/** The one error type: a code from the table, a message for people, and optional response headers. */
export class RelayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; headers?: Record<string, string> } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RelayError";
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.headers = options.headers ?? {};
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message } };
  }
}

export interface ErrorBody {
  error: { code: string; message: string };
}

/** Wraps anything thrown into a RelayError; unknown failures become INTERNAL_ERROR without leaking details. */
export function toRelayError(value: unknown): RelayError {
  if (value instanceof RelayError) return value;
  return new RelayError("INTERNAL_ERROR", "Internal error", { cause: value });
}

/** Maps an HTTP status (from a response without a usable body) to the closest code. */
export function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
    case 422:
      return "VALIDATION_ERROR";
    case 401:
      return "UNAUTHORIZED";
    case 403:
      return "FORBIDDEN";
    case 404:
      return "NOT_FOUND";
    case 409:
      return "CONFLICT";
    case 413:
      return "PAYLOAD_TOO_LARGE";
    case 415:
      return "UNSUPPORTED_MEDIA_TYPE";
    case 429:
      return "RATE_LIMIT_EXCEEDED";
    case 502:
      return "UPSTREAM_ERROR";
    case 503:
      return "SERVICE_UNAVAILABLE";
    case 504:
      return "UPSTREAM_TIMEOUT";
    default:
      return "INTERNAL_ERROR";
  }
}
