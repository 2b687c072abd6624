import { RelayError, readSseEvents, SSE_DONE } from "@tab-relay/shared";
import type { HttpPost, UpstreamResponse } from "../httpPost";
import type { CompletionInput, ModelProvider } from "../types";
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

  async function* stream(input: CompletionInput, signal: AbortSignal): AsyncGenerator<string> {
    signal.throwIfAborted();
    const upstream = new AbortController();
    const onAbort = () => upstream.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    let timeout: RelayError | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = (ms: number, message: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timeout = new RelayError("UPSTREAM_TIMEOUT", message);
        upstream.abort(timeout);
      }, ms);
    };
    const disarm = () => clearTimeout(timer);
    // Every failure goes through here so an abort stays an abort and a timeout stays a timeout.
    const classify = (error: unknown): unknown => {
      if (signal.aborted) return signal.reason;
      if (timeout) return timeout;
      if (error instanceof RelayError) return error;
      return new RelayError("UPSTREAM_ERROR", `Upstream connection failed: ${describeNetworkError(error)}`, { cause: error });
    };

    let finished = false;
    let response: UpstreamResponse | undefined;
    try {
      arm(options.timeoutMs, `Upstream sent no response within ${options.timeoutMs} ms`);
      try {
        response = await options.post(url, { headers, body: requestBody(input), signal: upstream.signal });
      } catch (error) {
        throw classify(error);
      }
      disarm();

      if (response.status < 200 || response.status > 299) {
        arm(options.timeoutMs, "Upstream error body timed out");
        const excerpt = redact(await readExcerpt(response));
        disarm();
        if (signal.aborted) throw signal.reason;
        throw new RelayError("UPSTREAM_ERROR", `Upstream answered ${response.status}${excerpt ? `: ${excerpt}` : ""}`);
      }
      arm(options.timeoutMs, `Upstream sent no data within ${options.timeoutMs} ms of its headers`);
      // A server that stalls mid-stream would otherwise hold the client's request open for ever.
      const silence = `Upstream went silent for ${options.timeoutMs} ms mid-stream`;
      try {
        if (/^application\/json/i.test(response.contentType)) {
          // Some servers ignore `stream: true`; their whole answer is still a usable suggestion.
          const text = extractText(parseJson(await readText(response.body)), options.api);
          disarm();
          if (text) yield text;
          finished = true;
          return;
        }
        let sawData = false;
        for await (const event of readSseEvents(response.body)) {
          arm(options.timeoutMs, silence);
          if (event.data === SSE_DONE) {
            finished = true;
            return;
          }
          const json = parseJson(event.data);
          const upstreamError = errorMessage(json);
          if (event.event === "error" || upstreamError !== undefined) {
            throw new RelayError("UPSTREAM_ERROR", `Upstream reported an error mid-stream: ${redact(excerptOf(upstreamError ?? event.data))}`);
          }
          sawData = true;
          const text = extractText(json, options.api);
          if (text) yield text;
        }
        // A clean end after real chunks is a server that omits [DONE]; a bare end is a broken upstream.
        if (!sawData) throw new RelayError("UPSTREAM_ERROR", "Upstream stream ended without data or [DONE]");
        finished = true;
      } catch (error) {
        throw classify(error);
      }
    } finally {
      disarm();
      signal.removeEventListener("abort", onAbort);
      // The consumer stopped early (or we failed): drop the upstream request rather than let it keep generating.
      if (!finished && !upstream.signal.aborted) upstream.abort(new Error("stream closed"));
      if (finished) response?.release();
    }
  }

  return { name: "openai", stream };
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
    for await (const chunk of response.body) {
      bytes += chunk.byteLength;
      text += decoder.decode(chunk, { stream: true });
      if (bytes >= EXCERPT_MAX_BYTES) break;
    }
  } catch {
    // An error body that breaks off still says something; keep what arrived.
  } finally {
    response.discard();
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

async function readText(body: AsyncIterable<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of body) text += decoder.decode(chunk, { stream: true });
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
