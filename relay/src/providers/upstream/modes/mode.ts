import type { CompletionInput } from "../../types";
import type { UpstreamApi } from "../api";

/** Something the operator should change, logged once per relay and added to the client's error message. */
export interface Hint {
  /** Identifies the hint, so it is logged once. */
  key: string;
  text: string;
}

/** What differs between the upstream APIs: where to post, what to send, and how to read the answer. */
export interface UpstreamMode {
  readonly api: UpstreamApi;
  readonly url: string;
  /** Text that ends a completion wherever it appears in the output; the postprocessor cuts it there. */
  readonly stops: readonly string[];
  /** The JSON request body. */
  body(input: CompletionInput): string;
  /** The text of one stream event, or of a whole JSON answer. */
  text(json: unknown): string | undefined;
  /** Whether this event is the last of the stream, for servers that send no `[DONE]`. */
  isLast?(json: unknown): boolean;
  /** A hint from a successful answer: a server that took the request but is the wrong kind for this mode. */
  notice?(json: unknown): Hint | undefined;
}

/** The settings every mode is built from. */
export interface ModeOptions {
  /** TAB_RELAY_UPSTREAM_URL as configured. */
  baseUrl: string;
  model: string;
}

/**
 * At most this many `stop` sequences go upstream: OpenAI's documented limit, and TGI's default
 * `--max-stop-sequences` (huggingface/text-generation-inference launcher/src/main.rs @ db931fcf, which answers
 * 422 "`stop` supports up to 4 stop sequences" beyond it, router/src/validation.rs). The postprocessor still
 * cuts at the rest.
 */
export const MAX_UPSTREAM_STOPS = 4;

/** Joins a base URL and a path with exactly one slash, keeping the base's own path (`/v1`) and dropping its query. */
export function joinUrl(baseUrl: string, path: string): string {
  const base = new URL(baseUrl);
  base.pathname = `${base.pathname.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
  base.search = "";
  base.hash = "";
  return base.toString();
}
