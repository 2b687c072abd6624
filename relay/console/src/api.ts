/** The one way the console talks to the relay: JSON in and out, the error envelope as ApiError, CSRF on writes. */
import { ApiError, errorOfAnswer } from "./apiError";

export { ApiError };

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

export async function api<T>(
  method: "GET" | "POST" | "PATCH" | "DELETE",
  path: string,
  options: RequestOptions = {},
): Promise<T> {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(options.query ?? {}))
    if (value !== undefined) params.set(name, String(value));
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

  const payload = parseJson(await response.text());
  if (!response.ok) throw failureOf(response, payload, options.expect401 === true);
  return (payload as { data: T } | null)?.data as T;
}

function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The error envelope of a failed answer as an ApiError; a 401 also tells the app the session is gone. */
function failureOf(response: Response, payload: unknown, expect401: boolean): ApiError {
  if (response.status === 401 && !expect401) unauthorized?.();
  return errorOfAnswer(response, payload);
}

export interface StreamEvent {
  /** The SSE `event:` field; "message" when there was none. */
  event: string;
  data: string;
}

/**
 * POSTs a JSON body to a route that answers with server-sent events and hands each event over as it arrives; an error
 * before the stream is thrown as an ApiError like api()'s.
 */
export async function postForEvents(
  path: string,
  body: unknown,
  onEvent: (event: StreamEvent) => void,
  signal?: AbortSignal,
): Promise<void> {
  const headers: Record<string, string> = { Accept: "text/event-stream", "Content-Type": "application/json" };
  if (csrfToken) headers["X-CSRF-Token"] = csrfToken;
  let response: Response;
  try {
    response = await fetch(`/api/v1${path}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      credentials: "same-origin",
      signal: signal ?? null,
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ApiError(0, "NETWORK_ERROR", "Could not reach the relay. Check the connection and try again.");
  }
  if (!response.ok || !response.body) throw failureOf(response, parseJson(await response.text()), false);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    await readEvents(reader, onEvent);
  } catch (error) {
    // The handler refused an event (an error frame): the rest of the stream is not wanted.
    void reader.cancel().catch(() => undefined);
    throw error;
  }
}

async function readEvents(
  reader: ReadableStreamDefaultReader<string>,
  onEvent: (event: StreamEvent) => void,
): Promise<void> {
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value.replace(/\r\n?/g, "\n");
    let end: number;
    while ((end = buffered.indexOf("\n\n")) !== -1) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
      }
      if (data.length) onEvent({ event, data: data.join("\n") });
    }
  }
}
