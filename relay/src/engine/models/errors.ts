/**
 * Why a model could not be had. `tab-relay models` prints the message and exits 1 (2 for `unknown_model`, a
 * mistake in the command); the engine shows it at start. Every message says what to do next.
 */
export type ModelErrorReason =
  /** A name the registry does not know, or a path that is not a file. */
  | "unknown_model"
  /** An entry whose hash was not confirmed at a source, asked for without `--allow-unverified`. */
  | "unverified"
  /** The hub could not be reached at all (no network, no DNS, refused): nothing was retried. */
  | "offline"
  /** The file's sha256 is not the registry's: the download was removed (a file placed by hand is kept). */
  | "checksum_mismatch"
  /** Not enough room in the data folder for the rest of the file. */
  | "disk_full"
  /** The hub answered something a model file never is: another length, a broken range, a redirect loop. */
  | "bad_response"
  /** 401/403/404 and the like: asking again will not help. */
  | "http_error"
  /** Retries ran out (cuts, stalls, 5xx). The partial file stays, so the next pull resumes. */
  | "gave_up"
  /** Another process is pulling the same file and did not finish or let go in time. */
  | "busy"
  /** A setting a download needs cannot be used (a proxy variable that is not an http(s) URL). */
  | "misconfigured"
  | "aborted";

export class ModelError extends Error {
  constructor(
    readonly reason: ModelErrorReason,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ModelError";
  }
}
