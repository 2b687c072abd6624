import { StringDecoder } from "node:string_decoder";
import { LineDecoder, RelayError, SSE_DONE, SseDecoder, type SseEvent } from "@tab-relay/shared";
import { type HttpPost, type UpstreamResponse, UpstreamSilence } from "../httpPost";
import type { CompletionInput, ModelProvider, TextSink } from "../types";
import { buildChatMessages, buildCompletionsPrompt } from "./prompts";

export interface OpenAIProviderOptions {
  /** Base URL including the version segment, e.g. `http://127.0.0.1:11434/v1`. */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** `completions` sends prompt + suffix (fill-in-the-middle); `chat` sends an instructed hole-filling prompt. */
  api: "chat" | "completions";
  post: HttpPost;
  /** The longest silence allowed: before the response headers, and between chunks of the stream. */
  timeoutMs: number;
}

const EXCERPT_MAX_CHARS = 200;
const EXCERPT_MAX_BYTES = 4_096;

/** A provider for any server speaking the OpenAI API: llama.cpp, vLLM, Ollama, LM Studio, OpenAI itself. */
export function createOpenAIProvider(options: OpenAIProviderOptions): ModelProvider {
  const url = joinUrl(options.baseUrl, options.api === "chat" ? "chat/completions" : "completions");
  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
  if (options.apiKey) headers["authorization"] = `Bearer ${options.apiKey}`;
  const redact = (text: string) => (options.apiKey ? text.split(options.apiKey).join("[redacted]") : text);

  function requestBody(input: CompletionInput): string {
    const common = { model: options.model, max_tokens: input.maxTokens, temperature: input.temperature, stream: true };
    if (options.api === "chat") return JSON.stringify({ ...common, messages: buildChatMessages(input.context) });
    const { prompt, suffix, stop } = buildCompletionsPrompt(input.context);
    return JSON.stringify({ ...common, prompt, suffix, ...(stop ? { stop } : {}) });
  }

  async function complete(input: CompletionInput, signal: AbortSignal, onText: TextSink): Promise<void> {
    signal.throwIfAborted();
    const ms = options.timeoutMs;
    // Every failure goes through here so an abort stays an abort and a silence becomes a timeout.
    const classify = (error: unknown): unknown => {
      if (signal.aborted) return signal.reason;
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
      return new RelayError("UPSTREAM_ERROR", `Upstream connection failed: ${describeNetworkError(error)}`, { cause: error });
    };

    let response: UpstreamResponse;
    try {
      response = await options.post(url, { headers, body: requestBody(input), signal, idleTimeoutMs: ms });
    } catch (error) {
      throw classify(error);
    }
    if (response.status < 200 || response.status > 299) {
      const excerpt = redact(await readExcerpt(response));
      if (signal.aborted) throw signal.reason;
      throw new RelayError("UPSTREAM_ERROR", `Upstream answered ${response.status}${excerpt ? `: ${excerpt}` : ""}`);
    }
    try {
      if (/^application\/json/i.test(response.contentType)) {
        // Some servers ignore `stream: true`; their whole answer is still a usable suggestion.
        const text = extractText(parseJson(await readText(response)), options.api);
        if (text) onText(text);
        return;
      }
      // Node's own UTF-8 decoder costs far less per request than a TextDecoder; it also keeps split sequences.
      const utf8 = new StringDecoder("utf8");
      const lines = new LineDecoder();
      const events = new SseDecoder();
      let sawData = false;
      let finished = false;
      /** The text of one event (none for `[DONE]`, which marks the stream finished); throws on an upstream error. */
      const textOf = (event: SseEvent): string => {
        if (event.data === SSE_DONE) {
          finished = true;
          return "";
        }
        const json = parseJson(event.data);
        const upstreamError = errorMessage(json);
        if (event.event === "error" || upstreamError !== undefined) {
          throw new RelayError("UPSTREAM_ERROR", `Upstream reported an error mid-stream: ${redact(excerptOf(upstreamError ?? event.data))}`);
        }
        sawData = true;
        return extractText(json, options.api) ?? "";
      };
      let stopped = false;
      await response.read((chunk) => {
        // Fragments that arrive together leave together: one call, one frame, one write.
        let text = "";
        for (const line of lines.decode(utf8.write(chunk))) {
          const event = events.decode(line);
          if (event) text += textOf(event);
          if (finished) break;
        }
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
      if (!sawData && !finished) throw new RelayError("UPSTREAM_ERROR", "Upstream stream ended without data or [DONE]");
    } catch (error) {
      throw classify(error);
    }
  }

  return { name: "openai", complete };
}

/** Joins a base URL and a path with exactly one slash, keeping the base's own path (`/v1`) and dropping its query. */
export function joinUrl(baseUrl: string, path: string): string {
  const base = new URL(baseUrl);
  base.pathname = `${base.pathname.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
  base.search = "";
  base.hash = "";
  return base.toString();
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new RelayError("UPSTREAM_ERROR", `Upstream sent malformed data: ${excerptOf(text)}`);
  }
}

function extractText(json: unknown, api: "chat" | "completions"): string | undefined {
  const choice = field(field(json, "choices"), 0);
  const text = api === "chat" ? (field(field(choice, "delta"), "content") ?? field(field(choice, "message"), "content")) : field(choice, "text");
  return typeof text === "string" ? text : undefined;
}

function errorMessage(json: unknown): string | undefined {
  const error = field(json, "error");
  if (error === undefined || error === null) return undefined;
  const message = field(error, "message");
  return typeof message === "string" ? message : JSON.stringify(error);
}

function field(value: unknown, key: string | number): unknown {
  if (typeof value !== "object" || value === null) return undefined;
  return (value as Record<string | number, unknown>)[key];
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
      return errorMessage(JSON.parse(text));
    } catch {
      return undefined;
    }
  })();
  return excerptOf(message ?? text);
}

async function readText(response: UpstreamResponse): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  await response.read((chunk) => {
    text += decoder.decode(chunk, { stream: true });
  });
  return text + decoder.decode();
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
