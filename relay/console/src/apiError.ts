/** A failed answer of the relay's API, as the console shows it (DOM-free, so its tests run in Node). */
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

/**
 * The error envelope of a failed answer as an ApiError, its message as the relay wrote it. A 429's message already
 * says when to try again (written from the same moment as Retry-After), so the console reads no header of its own.
 */
export function errorOfAnswer(response: Pick<Response, "status" | "statusText">, payload: unknown): ApiError {
  const envelope = (payload as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  const code = typeof envelope?.code === "string" ? envelope.code : `HTTP_${response.status}`;
  const message =
    typeof envelope?.message === "string" && envelope.message
      ? envelope.message
      : `The relay answered ${response.status} ${response.statusText}`.trim();
  return new ApiError(response.status, code, message);
}
