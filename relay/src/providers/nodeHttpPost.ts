import { Agent, type ClientRequest, type IncomingMessage, type RequestOptions, request } from "node:http";
import type * as Https from "node:https";
import { urlToHttpOptions } from "node:url";
import { lazyRequire } from "../lazyRequire";
import { type ChunkVerdict, type HttpPost, type ReadBody, type UpstreamResponse, UpstreamSilence } from "./httpPost";

// TLS is loaded only for an https upstream: most relays post to a model server on plain HTTP.
const loadHttps = lazyRequire<typeof Https>("node:https");

/**
 * The relay's upstream transport on node:http's client with keep-alive agents, as `createHttpPost` is on undici:
 * the same contract, the same silences, verdicts and errors.
 */
export function createNodeHttpPost(
  options: { maxSockets?: number } = {},
): HttpPost & { destroy(): Promise<void>; warm(): void } {
  const maxSockets = options.maxSockets ?? 256;
  const httpAgent = new Agent({ keepAlive: true, maxSockets });
  let httpsAgent: Https.Agent | undefined;
  const targets = new Map<string, { options: RequestOptions; send: typeof request }>();
  // The relay posts to one or two URLs for its whole life; each is parsed once.
  const targetOf = (url: string) => {
    let target = targets.get(url);
    if (!target) {
      const parsed = new URL(url);
      const secure = parsed.protocol === "https:";
      if (!secure && parsed.protocol !== "http:") throw new TypeError(`cannot post to ${parsed.protocol} URLs`);
      const https = secure ? loadHttps() : undefined;
      if (https) httpsAgent ??= new https.Agent({ keepAlive: true, maxSockets });
      target = {
        // urlToHttpOptions takes the brackets off an IPv6 host, as a socket needs it.
        options: { ...urlToHttpOptions(parsed), method: "POST", agent: https ? httpsAgent : httpAgent },
        send: https ? https.request : request,
      };
      if (targets.size < 16) targets.set(url, target);
    }
    return target;
  };

  const post: HttpPost = (url, init) =>
    new Promise<UpstreamResponse>((resolve, reject) => {
      init.signal.throwIfAborted();
      const target = targetOf(url);
      let headersSeen = false;
      let sawBody = false;
      let ended = false;
      /** Settled: the reader is done (or the request failed); later data and errors are nobody's concern. */
      let settled = false;
      let failure: Error | undefined;
      /** The reader's rejection once it reads; until then a failure rejects the response promise. */
      let fail: (error: unknown) => void = reject;
      let onChunk: ((chunk: Buffer) => ChunkVerdict) | undefined;
      let finishRead: (() => void) | undefined;
      /** Chunks that arrive between the headers and the reader's first call. */
      const early: Buffer[] = [];

      const cleanUp = () => {
        settled = true;
        clearTimeout(idle);
        init.signal.removeEventListener("abort", onAbort);
      };
      const finish = () => {
        if (settled) return;
        cleanUp();
        finishRead?.();
      };
      const drop = (error: unknown) => {
        if (settled) return;
        cleanUp();
        failure = error instanceof Error ? error : new Error(String(error));
        req.destroy(failure);
        fail(failure);
      };
      const onAbort = () => drop(init.signal.reason);

      const deliver = (chunk: Buffer) => {
        if (settled || !onChunk) return;
        let verdict: ChunkVerdict;
        try {
          verdict = onChunk(chunk);
        } catch (error) {
          return drop(error);
        }
        if (verdict === "release") {
          // The rest (usually nothing) is read and ignored, which keeps the connection for the next request.
          finish();
        } else if (verdict === "drop") {
          finish();
          req.destroy(new Error("the reader dropped the response"));
        }
      };
      const read: ReadBody = (reader) =>
        new Promise<void>((resolveRead, rejectRead) => {
          if (onChunk) return rejectRead(new Error("the upstream response is already being read"));
          if (settled) return failure === undefined ? resolveRead() : rejectRead(failure);
          onChunk = reader;
          finishRead = resolveRead;
          fail = rejectRead;
          for (const chunk of early.splice(0)) deliver(chunk);
          if (ended) finish();
        });

      const onError = (error: Error) => {
        // A connection the upstream closed is ECONNRESET in Node ("socket hang up" before the headers, "aborted"
        // after them); it is said as the undici transport says it.
        const closed = (error as { code?: unknown }).code === "ECONNRESET";
        drop(
          closed
            ? Object.assign(new Error(`upstream closed the connection (${error.message})`), { code: "ECONNRESET" })
            : error,
        );
      };
      const onResponse = (response: IncomingMessage) => {
        response.on("error", onError);
        if (settled) return void response.resume();
        headersSeen = true;
        idle.refresh();
        let contentType = "";
        let contentEncoding: string | undefined;
        const raw = response.rawHeaders;
        for (let i = 0; i + 1 < raw.length; i += 2) {
          const name = (raw[i] as string).toLowerCase();
          if (name === "content-type") contentType = raw[i + 1] as string;
          else if (name === "content-encoding") contentEncoding = (raw[i + 1] as string).trim().toLowerCase();
        }
        response.on("data", (chunk: Buffer) => {
          if (settled) return;
          sawBody = true;
          idle.refresh();
          if (onChunk) deliver(chunk);
          else early.push(chunk);
        });
        response.on("end", () => {
          ended = true;
          if (onChunk) finish();
        });
        resolve({
          status: response.statusCode ?? 0,
          contentType,
          ...(contentEncoding ? { contentEncoding } : {}),
          read,
        });
      };

      const req: ClientRequest = target.send({
        ...target.options,
        headers: { ...init.headers, "content-length": Buffer.byteLength(init.body) },
      });
      req.on("response", onResponse);
      req.on("error", onError);
      const idle = setTimeout(
        () => drop(new UpstreamSilence(headersSeen ? "body" : "headers", sawBody)),
        init.idleTimeoutMs,
      );
      init.signal.addEventListener("abort", onAbort, { once: true });
      req.end(init.body);
    });

  return Object.assign(post, {
    destroy() {
      httpAgent.destroy();
      httpsAgent?.destroy();
      return Promise.resolve();
    },
    /** Nothing to load ahead: node:http is part of every relay. */
    warm() {},
  });
}
