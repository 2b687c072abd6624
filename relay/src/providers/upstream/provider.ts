import { StringDecoder } from "node:string_decoder";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import { LineDecoder, RelayError, SSE_DONE, SseDecoder, type SseEvent, SseLimitExceeded } from "@tab-relay/shared";
import type { Logger } from "../../logger";
import { type HttpPost, type UpstreamResponse, UpstreamSilence } from "../httpPost";
import { type AbortLike, Aborter } from "../../aborter";
import { neutraliseContext } from "../../completion/controlTokens";
import type { CompletionInput, ModelProvider, TextSink } from "../types";
import { hintFor } from "./hints";
import { JSON_SHAPE_LIMITS, jsonShapeProblem } from "../../jsonShape";
import { field } from "./json";
import { DEFAULT_UPSTREAM_LIMITS, type UpstreamLimitName, type UpstreamLimits } from "./limits";
import type { Hint, UpstreamMode } from "./modes/mode";

export interface UpstreamProviderOptions {
  mode: UpstreamMode;
  /** The upstream model, named in hints. */
  model: string;
  apiKey?: string;
  post: HttpPost;
  /** The longest silence allowed: before the response headers, and between chunks of the stream. */
  timeoutMs: number;
  /** Where hints about the configuration go, each once. */
  logger?: Logger;
  /** Called for each request whose client text held model control tokens, neutralised before templating. */
  onNeutralised?: () => void;
  /** The answer's limits in time and size; DEFAULT_UPSTREAM_LIMITS when not given. */
  limits?: Readonly<UpstreamLimits>;
  /** Called once for each answer a limit stopped. */
  onLimit?: (limit: UpstreamLimitName) => void;
}

const EXCERPT_MAX_CHARS = 200;
const EXCERPT_MAX_BYTES = 4_096;

/**
 * A provider for a model server: llama.cpp, vLLM, SGLang, TGI, Ollama, LM Studio, Mistral's API, OpenAI. The mode
 * decides the route, the body and where the text is in an answer; this part posts, reads the stream and turns
 * failures into RelayErrors, with a hint for the operator when an answer shows the mode is the wrong one.
 */
export function createUpstreamProvider(options: UpstreamProviderOptions): ModelProvider {
  const { mode } = options;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
  if (options.apiKey) headers["authorization"] = `Bearer ${options.apiKey}`;
  const redact = (text: string) => (options.apiKey ? text.split(options.apiKey).join("[redacted]") : text);
  const logged = new Set<string>();
  /** Each hint is logged once per relay: the operator needs it once, not per keystroke. */
  const logHint = (hint: Hint, fields: Record<string, unknown>) => {
    if (logged.has(hint.key)) return;
    logged.add(hint.key);
    options.logger?.warn(`upstream: ${hint.text}`, { upstream_api: mode.api, ...fields });
  };
  let noticed = mode.notice === undefined;

  const limits = options.limits ?? DEFAULT_UPSTREAM_LIMITS;

  async function complete(input: CompletionInput, outer: AbortLike, onText: TextSink): Promise<void> {
    outer.throwIfAborted();
    const ms = options.timeoutMs;
    /**
     * Aborted by the caller's signal (with its reason) or by a limit (the deadline, a stream that makes no progress)
     * with the error that names it, whichever comes first. An `Aborter` and a listener rather than `AbortSignal.any`,
     * which cost a second controller and a weakly held dependent signal per request: about 2 % of the relay's CPU per
     * stream in `npm run bench -- --cpu-prof` (docs/benchmarks.md).
     */
    const limiter = new Aborter();
    const signal = limiter;
    const forward = () => limiter.abort(outer.reason);
    outer.addEventListener("abort", forward, { once: true });
    const limitError = (limit: UpstreamLimitName): RelayError => {
      options.onLimit?.(limit);
      return new RelayError("UPSTREAM_ERROR", limitMessage(limit, limits, ms));
    };
    const deadline = setTimeout(() => limiter.abort(limitError("deadline")), limits.deadlineMs);
    let progress: ReturnType<typeof setTimeout> | undefined;
    try {
      await completeWithin(input, signal, onText);
    } finally {
      outer.removeEventListener("abort", forward);
      clearTimeout(deadline);
      clearTimeout(progress);
    }

    async function completeWithin(input: CompletionInput, signal: AbortLike, onText: TextSink): Promise<void> {
      // Every failure goes through here so an abort stays an abort and a silence becomes a timeout.
      const classify = (error: unknown): unknown => {
        if (outer.aborted) return outer.reason;
        if (limiter.aborted) return limiter.reason;
        if (error instanceof SseLimitExceeded) return limitError("event");
        if (error instanceof UpstreamSilence) {
          const message =
            error.phase === "headers"
              ? `Upstream sent no response within ${ms} ms`
              : error.sawBody
                ? `Upstream went silent for ${ms} ms mid-stream`
                : `Upstream sent no data within ${ms} ms of its headers`;
          return new RelayError("UPSTREAM_TIMEOUT", message);
        }
        if (error instanceof RelayError) return error;
        return new RelayError("UPSTREAM_ERROR", `Upstream connection failed: ${describeNetworkError(error)}`, {
          cause: error,
        });
      };
      /** The text of a parsed event or answer; looks once for a sign that the server is the wrong kind. */
      const textOfJson = (json: unknown): string => {
        if (!noticed) {
          const hint = mode.notice?.(json);
          if (hint) {
            noticed = true;
            logHint(hint, {});
          }
        }
        return mode.text(json) ?? "";
      };

      let response: UpstreamResponse;
      try {
        // A repository's text is not trusted: a control token in it would rewrite the prompt's structure.
        const { context, changed } = neutraliseContext(input.context);
        if (changed) options.onNeutralised?.();
        const body = mode.body(changed ? { ...input, context } : input);
        response = await options.post(mode.url, { headers, body, signal, idleTimeoutMs: ms });
      } catch (error) {
        throw classify(error);
      }
      if (response.status < 200 || response.status > 299) {
        const excerpt = redact(await readExcerpt(response));
        if (signal.aborted) throw signal.reason;
        const hint = hintFor(mode.api, response.status, excerpt, options.model);
        if (hint) logHint(hint, { status: response.status, upstream_message: excerpt });
        const said = `Upstream answered ${response.status}${excerpt ? `: ${excerpt}` : ""}`;
        throw new RelayError(
          "UPSTREAM_ERROR",
          hint ? `${said}${/[.!?]$/.test(said) ? "" : "."} Hint: ${hint.text}` : said,
        );
      }
      try {
        if (/^application\/json/i.test(response.contentType)) {
          // Some servers ignore `stream: true`; their whole answer is still a usable suggestion.
          const text = textOfJson(
            parseJson(await readText(decodedBody(response, limits.maxBodyBytes, () => limitError("body"))), () =>
              limitError("json"),
            ),
          );
          if (text) onText(text);
          return;
        }
        // Node's own UTF-8 decoder costs far less per request than a TextDecoder; it also keeps split sequences.
        // (Reading an all-ASCII chunk as latin1 and making the decoder only for the first other chunk was measured
        // dearer: `isAscii` and `toString("latin1")` are two native calls where the decoder's `write` is one.)
        const utf8 = new StringDecoder("utf8");
        const lines = new LineDecoder(limits.maxEventChars);
        const events = new SseDecoder(limits.maxEventChars);
        // A stream must make progress: empty deltas, or spaces, forever would each reset the idle timer.
        progress = setTimeout(() => limiter.abort(limitError("progress")), ms);
        const read = decodedBody(response, limits.maxStreamBytes, () => limitError("stream"));
        let sawData = false;
        let finished = false;
        /** The text of one event (none for `[DONE]`, which marks the stream finished); throws on an upstream error. */
        const textOf = (event: SseEvent): string => {
          if (event.data === SSE_DONE) {
            finished = true;
            return "";
          }
          const json = parseJson(event.data, () => limitError("json"));
          const upstreamError = streamErrorMessage(json);
          if (event.event === "error" || upstreamError !== undefined) {
            throw new RelayError(
              "UPSTREAM_ERROR",
              `Upstream reported an error mid-stream: ${redact(excerptOf(upstreamError ?? event.data))}`,
            );
          }
          sawData = true;
          if (mode.isLast?.(json)) finished = true;
          return textOfJson(json);
        };
        let stopped = false;
        await read((chunk) => {
          // Fragments that arrive together leave together: one call, one frame, one write.
          let text = "";
          for (const line of lines.decode(utf8.write(chunk))) {
            const event = events.decode(line);
            if (event) text += textOf(event);
            if (finished) break;
          }
          if (/\S/.test(text)) progress?.refresh();
          if (text !== "" && onText(text) === false) {
            stopped = true;
            // Nothing more is wanted: drop the request rather than let the upstream keep generating.
            return finished ? "release" : "drop";
          }
          return finished ? "release" : undefined;
        });
        if (finished || stopped) return;
        // A server may end without the blank line after its last event.
        let text = "";
        for (const line of [...lines.decode(utf8.end()), ...lines.flush(), ""]) {
          const event = events.decode(line);
          if (event) text += textOf(event);
        }
        if (text !== "") onText(text);
        // A clean end after real chunks is a server that omits [DONE]; a bare end is a broken upstream.
        if (!sawData && !finished)
          throw new RelayError("UPSTREAM_ERROR", "Upstream stream ended without data or [DONE]");
      } catch (error) {
        throw classify(error);
      }
    }
  }

  // The provider keeps the name "openai" in metrics and /healthz whatever the mode: the configured provider.
  return { name: "openai", stopSequences: mode.stops, complete };
}

/** Parsed JSON of a model server, refused (as `tooComplex`) when its shape would hold the event loop to parse. */
function parseJson(text: string, tooComplex: () => RelayError): unknown {
  if (jsonShapeProblem(text) !== undefined) throw tooComplex();
  try {
    return JSON.parse(text);
  } catch {
    throw new RelayError("UPSTREAM_ERROR", `Upstream sent malformed data: ${excerptOf(text)}`);
  }
}

/** The error an event of a stream carries: OpenAI's `{"error": …}` (llama.cpp's and vLLM's too), vLLM's older flat `{"object": "error"}`. */
function streamErrorMessage(json: unknown): string | undefined {
  if (field(json, "object") === "error") {
    const message = field(json, "message");
    return typeof message === "string" ? message : JSON.stringify(json);
  }
  const error = field(json, "error");
  if (error === undefined || error === null) return undefined;
  if (typeof error === "string") return error;
  const message = field(error, "message");
  return typeof message === "string" ? message : JSON.stringify(error);
}

/**
 * The message of an error body: the stream shapes above, TGI's `{"error": "…", "error_type"}` and FastAPI's
 * `{"detail": "Not Found"}` or `{"detail": [{"loc": […], "msg"}]}` (Mistral's 422).
 */
function errorBodyMessage(json: unknown): string | undefined {
  const message = streamErrorMessage(json);
  if (message !== undefined) return message;
  const detail = field(json, "detail");
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((item) => {
        const loc = field(item, "loc");
        const msg = field(item, "msg");
        return `${Array.isArray(loc) ? `${loc.join(".")}: ` : ""}${typeof msg === "string" ? msg : JSON.stringify(item)}`;
      })
      .join("; ");
  }
  return undefined;
}

/** The start of an error body, bounded in bytes read, collapsed to one short line; never throws. */
async function readExcerpt(response: UpstreamResponse): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  let bytes = 0;
  try {
    await response.read((chunk) => {
      bytes += chunk.byteLength;
      text += decoder.decode(chunk, { stream: true });
      return bytes >= EXCERPT_MAX_BYTES ? "drop" : undefined;
    });
  } catch {
    // An error body that breaks off (or goes silent) still says something; keep what arrived.
  }
  const message = (() => {
    try {
      return errorBodyMessage(JSON.parse(text));
    } catch {
      return undefined;
    }
  })();
  return excerptOf(message ?? text);
}

/** What each limit's error says, naming the setting that raises it. */
function limitMessage(limit: UpstreamLimitName, limits: Readonly<UpstreamLimits>, idleMs: number): string {
  switch (limit) {
    case "deadline":
      return `Upstream did not finish within ${limits.deadlineMs} ms (the completion deadline, TAB_RELAY_UPSTREAM_DEADLINE_MS)`;
    case "progress":
      return `Upstream sent no new text for ${idleMs} ms (TAB_RELAY_UPSTREAM_TIMEOUT_MS): its stream made no progress`;
    case "body":
      return `Upstream answer is larger than ${limits.maxBodyBytes} bytes (TAB_RELAY_UPSTREAM_MAX_BODY_BYTES)`;
    case "event":
      return `Upstream stream has a line or event longer than ${limits.maxEventChars} characters (TAB_RELAY_UPSTREAM_MAX_EVENT_CHARS)`;
    case "json":
      return `Upstream sent JSON nested more than ${JSON_SHAPE_LIMITS.maxDepth} deep or holding more than ${JSON_SHAPE_LIMITS.maxValues} values, too costly to parse; a completion needs neither`;
    case "stream":
      return `Upstream stream is larger than ${limits.maxStreamBytes} bytes (TAB_RELAY_UPSTREAM_MAX_STREAM_BYTES)`;
  }
}

/** The largest output buffer a decompression asks for at once (the default stream limit). */
const DECOMPRESS_CHUNK_MAX_BYTES = DEFAULT_UPSTREAM_LIMITS.maxStreamBytes;

const DECOMPRESS = {
  gzip: gunzipSync,
  "x-gzip": gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
} as const;

/**
 * The body's reader, held to `maxBytes` of decoded bytes: an answer that grows past it throws `tooLarge()` (the
 * request is dropped and its connection closed) before more of it is held. A compressed answer (`content-encoding`)
 * is collected, at most `maxBytes` of it, and decompressed once it has all arrived with its output capped at
 * `maxBytes` too, so a small gzip bomb stops at the limit rather than filling memory.
 */
function decodedBody(
  response: UpstreamResponse,
  maxBytes: number,
  tooLarge: () => RelayError,
): UpstreamResponse["read"] {
  const encoding = response.contentEncoding;
  if (encoding === undefined || encoding === "identity") {
    return (reader) => {
      let size = 0;
      return response.read((chunk) => {
        size += chunk.byteLength;
        if (size > maxBytes) throw tooLarge();
        return reader(chunk);
      });
    };
  }
  const decompress = (
    DECOMPRESS as Record<string, (data: Buffer, options: { maxOutputLength: number; chunkSize: number }) => Buffer>
  )[encoding];
  if (decompress === undefined) {
    return () =>
      Promise.reject(
        new RelayError("UPSTREAM_ERROR", `Upstream answered with an unknown content-encoding: ${excerptOf(encoding)}`),
      );
  }
  return async (reader) => {
    const parts: Buffer[] = [];
    let size = 0;
    await response.read((chunk) => {
      size += chunk.byteLength;
      if (size > maxBytes) throw tooLarge();
      parts.push(chunk);
    });
    let plain: Buffer;
    try {
      // One output buffer of the limit's size and a byte, rather than zlib's 16 KB pieces: the sync decompressors
      // allocate a new `chunkSize` buffer each time one fills (`processChunkSync` in Node 20.20.2's lib/zlib.js,
      // line 393 on), so a bomb made 512 buffers a streamed answer, freed together at the next collection. Under
      // the fuzz suite's gzip bomb (test/fuzz/upstreamFaults.test.ts) that churn left the relay holding 29 to 55 MB
      // more after a full collection, all of it outside V8's heap (its goal: under 50). The byte over the limit
      // makes a bomb stop at the first buffer; only the pages written are resident, so a small answer costs no more.
      // Past the default stream limit (8 MB) the buffers stay 8 MB: an operator's limit of up to 1 GB (config.ts) is
      // not asked of the allocator at once for every compressed answer.
      const chunkSize = Math.min(maxBytes, DECOMPRESS_CHUNK_MAX_BYTES) + 1;
      plain = decompress(Buffer.concat(parts), { maxOutputLength: maxBytes, chunkSize });
    } catch (error) {
      if ((error as { code?: unknown }).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge();
      throw new RelayError("UPSTREAM_ERROR", `Upstream sent a ${encoding} answer that does not decompress`, {
        cause: error,
      });
    }
    reader(plain);
  };
}

/**
 * The whole body as text, decoded once at the end: an answer that breaks the size limit midway is dropped without
 * any of it having been decoded (decoding chunk by chunk was most of the relay's work under a huge answer).
 */
async function readText(read: UpstreamResponse["read"]): Promise<string> {
  const parts: Buffer[] = [];
  await read((chunk) => {
    parts.push(chunk);
  });
  return new TextDecoder().decode(Buffer.concat(parts));
}

function excerptOf(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > EXCERPT_MAX_CHARS ? `${line.slice(0, EXCERPT_MAX_CHARS)}…` : line;
}

/** Socket errors carry a code (ECONNREFUSED, ECONNRESET); wrapped errors keep the interesting part in `cause`. */
function describeNetworkError(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    parts.push(typeof code === "string" ? `${code}` : current.message);
    current = current.cause;
  }
  const unique = [...new Set(parts.filter((part) => part !== ""))];
  return excerptOf(unique.join(": ") || "unknown error");
}
