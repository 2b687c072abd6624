/**
 * What one completion may take of a model server, in time and in size. A model server is not trusted (issue 19): a
 * 300 MB answer once ran the relay out of memory, one endless SSE line made /healthz time out, and a stream of empty
 * deltas never ended. Configured by TAB_RELAY_UPSTREAM_DEADLINE_MS and TAB_RELAY_UPSTREAM_MAX_* (config.ts).
 */
export interface UpstreamLimits {
  /** The longest a whole completion may take, from the request to the last byte. */
  deadlineMs: number;
  /** The largest answer that is one JSON object (not streamed), after decompression. */
  maxBodyBytes: number;
  /** The longest line, and the longest event, of a stream, in characters. */
  maxEventChars: number;
  /** The most bytes a whole stream may carry, after decompression. */
  maxStreamBytes: number;
}

export const DEFAULT_UPSTREAM_LIMITS: Readonly<UpstreamLimits> = Object.freeze({
  deadlineMs: 60_000,
  maxBodyBytes: 2 * 1024 * 1024,
  maxEventChars: 256 * 1024,
  maxStreamBytes: 8 * 1024 * 1024,
});

/** Which limit stopped an answer: the metric's label and, with its setting, the error message's subject. */
export type UpstreamLimitName = "deadline" | "progress" | "body" | "event" | "stream" | "json";
