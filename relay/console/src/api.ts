/** The one way the console talks to the relay: JSON in and out, the error envelope as ApiError, CSRF on writes. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

const CSRF_KEY = "tab-relay.csrf";
let csrfToken: string | null = null;
let unauthorized: (() => void) | null = null;

/** The CSRF token lives in memory and in sessionStorage (so a reload keeps it); the API key is never stored. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
  try {
    if (token) sessionStorage.setItem(CSRF_KEY, token);
    else sessionStorage.removeItem(CSRF_KEY);
  } catch {
    // Storage may be disabled; memory is enough for this page's life.
  }
}

export function restoreCsrfToken(): void {
  try {
    csrfToken = sessionStorage.getItem(CSRF_KEY);
  } catch {
    csrfToken = null;
  }
}

/** Called when the relay says the session is gone (ended elsewhere, key revoked), so the app can show sign-in. */
export function onUnauthorized(handler: () => void): void {
  unauthorized = handler;
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** A 401 here is an answer for the caller (wrong key at sign-in), not a lost session. */
  expect401?: boolean;
}

export async function api<T>(method: "GET" | "POST" | "PATCH" | "DELETE", path: string, options: RequestOptions = {}): Promise<T> {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) params.set(name, String(value));
  const search = params.toString();
  const headers: Record<string, string> = { Accept: "application/json" };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrfToken) headers["X-CSRF-Token"] = csrfToken;

  let response: Response;
  try {
    response = await fetch(`/api/v1${path}${search ? `?${search}` : ""}`, {
      method,
      headers,
      body: options.body === undefined ? null : JSON.stringify(options.body),
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError(0, "NETWORK_ERROR", "Could not reach the relay. Check the connection and try again.");
  }

  const text = await response.text();
  let payload: unknown = null;
  if (text) {
    try {
      payload = JSON.parse(text);
    } catch {
      payload = null;
    }
  }
  if (!response.ok) {
    const envelope = (payload as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    const code = typeof envelope?.code === "string" ? envelope.code : `HTTP_${response.status}`;
    let message = typeof envelope?.message === "string" && envelope.message ? envelope.message : `The relay answered ${response.status} ${response.statusText}`.trim();
    const retryAfter = response.headers.get("Retry-After");
    if (response.status === 429 && retryAfter) message += ` Try again in ${retryAfter} s.`;
    if (response.status === 401 && !options.expect401) unauthorized?.();
    throw new ApiError(response.status, code, message);
  }
  return (payload as { data: T } | null)?.data as T;
}
