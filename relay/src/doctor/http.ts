import type { Agent } from "undici";
import { lazyRequire } from "../lazyRequire";

/** One probe of a model server: a small request whose whole answer is read, bounded in time and size. */
export interface ProbeRequest {
  method: "GET" | "POST";
  url: string;
  headers?: Record<string, string>;
  body?: string;
  /** The whole exchange (connecting, the headers, the body) must fit in this. */
  timeoutMs: number;
}

export interface ProbeResponse {
  status: number;
  contentType: string;
  /** The body as text, cut at {@link PROBE_MAX_BYTES}. */
  text: string;
}

/** Rejects with a {@link ProbeFailure} when no HTTP answer came: nothing listening, a reset, a timeout. */
export type ProbeClient = (request: ProbeRequest) => Promise<ProbeResponse>;

/** No HTTP answer: `reason` says why in a few words (`ECONNREFUSED`, `no answer within 3000 ms`). */
export class ProbeFailure extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "ProbeFailure";
  }
}

const loadUndici = lazyRequire<{ Agent: typeof Agent }>("undici");

/** llama.cpp's /props carries the chat template, which runs to a few KiB; a model list of hundreds of models more. */
export const PROBE_MAX_BYTES = 512 * 1024;

/**
 * The probe transport: undici (the relay's own HTTP client) through an agent of its own, so that closing it
 * leaves no keep-alive socket to hold the process open. Redirects are not followed: a probe reports what the
 * URL it was given answers.
 */
export function createProbeClient(): ProbeClient & { close(): Promise<void> } {
  const agent = new (loadUndici().Agent)({ connections: 4, pipelining: 1 });
  const probe: ProbeClient = async (request) => {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, request.timeoutMs);
    try {
      const response = await agent.request({
        origin: new URL(request.url).origin,
        path: pathOf(request.url),
        method: request.method,
        headers: request.headers ?? {},
        body: request.body ?? null,
        signal: controller.signal,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      const parts: Buffer[] = [];
      let bytes = 0;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        parts.push(chunk);
        bytes += chunk.byteLength;
        if (bytes >= PROBE_MAX_BYTES) {
          response.body.destroy();
          break;
        }
      }
      const contentType = response.headers["content-type"];
      return {
        status: response.statusCode,
        contentType: Array.isArray(contentType) ? (contentType[0] ?? "") : (contentType ?? ""),
        text: Buffer.concat(parts).subarray(0, PROBE_MAX_BYTES).toString("utf8"),
      };
    } catch (error) {
      throw new ProbeFailure(timedOut ? `no answer within ${request.timeoutMs} ms` : describe(error));
    } finally {
      clearTimeout(timer);
    }
  };
  return Object.assign(probe, {
    async close() {
      await agent.destroy();
    },
  });
}

function pathOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
}

/** A socket error's code (ECONNREFUSED, ENOTFOUND), which says more than undici's wrapping message. */
function describe(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && !code.startsWith("UND_ERR")) return code;
    current = current.cause;
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
