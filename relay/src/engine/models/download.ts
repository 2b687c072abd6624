import { createHash } from "node:crypto";
import { type FileHandle, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { parseRetryAfterMs } from "@tab-relay/shared";
import type { Clock } from "../../clock";
import { ModelError } from "./errors";
import { APPROXIMATE_SIZE_TOLERANCE } from "./registry";
import { type ModelPaths, fileSize, hashFile, readPartMeta, writePartMeta } from "./store";
import { type HttpGet, type HttpResponse, errorCode } from "./transport";

/**
 * One file from a hub into `paths.file`, resumable and verified. The steps, after huggingface_hub's `http_get`
 * (src/huggingface_hub/file_download.py: `Range: bytes={resume_size}-` on a `.incomplete` file) and Tabby's
 * tabby-download (a temporary file, resume with Range, verify, rename):
 *
 * 1. The part file and its sidecar are kept only when the sidecar names this sha256, length and URL; otherwise the
 *    download starts over. Its bytes so far are hashed once, so the hash runs on as the rest arrives.
 * 2. Free space for the rest (and a margin) is checked before any request.
 * 3. GET with `Range: bytes=N-` (and `If-Range` with the hub's strong ETag), following at most
 *    {@link MAX_REDIRECTS} redirects to http(s) only, never from https down to http: a Hugging Face resolve URL
 *    answers 302 to its CDN, which serves the ranges.
 * 4. The answer is checked before a byte is written: 206 must start where the part ends and name the expected
 *    total; 200 starts over; 416 means the part is already whole (or wrong, then it starts over). The total must
 *    be the registry's size (within {@link APPROXIMATE_SIZE_TOLERANCE} when that size is rounded); more bytes than
 *    announced are refused.
 * 5. A watchdog cancels a body that sends nothing for `stallMs`; cuts, stalls, 408/429/5xx are retried with
 *    backoff and jitter (Retry-After honoured up to a minute), at most `maxFailures` times in a row without
 *    progress. 401/403/404 are not retried. Nothing is retried when the hub was never reached: no network fails at
 *    once.
 * 6. The sha256 of the whole file must match; a mismatch removes the part and its sidecar. Then the part is
 *    flushed and renamed into place.
 */
export interface DownloadTarget {
  /** The first URL (a hub's resolve URL). */
  url: string;
  paths: ModelPaths;
  sha256: string;
  bytes: number;
  bytesExact: boolean;
}

export interface DownloadProgress {
  received: number;
  total: number;
  /** Where this pull started (a resume starts above 0). */
  startedAt: number;
  /** Over the last few seconds; undefined until there are two samples. */
  bytesPerSecond: number | undefined;
  secondsLeft: number | undefined;
  /** Set while waiting to try again. */
  retry?: { inMs: number; why: string };
}

export interface DownloadDeps {
  get: HttpGet;
  clock: Clock;
  /** In [0, 1): the jitter of retry delays. */
  random: () => number;
  freeBytes(dir: string): Promise<number>;
}

export interface DownloadOptions {
  onProgress?: (progress: DownloadProgress) => void;
  signal?: AbortSignal;
  /** A body that sends nothing for this long is cancelled and resumed. */
  stallMs?: number;
  maxFailures?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
}

export const MAX_REDIRECTS = 5;
export const DEFAULT_STALL_MS = 30_000;
export const DEFAULT_MAX_FAILURES = 6;
/** Room kept free beyond the file, so a pull never fills the disk to the last block. */
export const DISK_MARGIN_BYTES = 64 * 1024 * 1024;
/** A Retry-After above this is not waited out in full. */
const MAX_RETRY_AFTER_MS = 60_000;
/** How often progress is reported, at most (plus the first and last). */
const PROGRESS_EVERY_MS = 100;
/** Socket errors that mean the hub (or the proxy) was not reached at all. */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  "ENOTFOUND",
  "EAI_AGAIN",
  "ECONNREFUSED",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "ENETDOWN",
  "EHOSTDOWN",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** Delay before retry `failures` (1, 2, …): 1 s, 2 s, 4 s … capped, ±25 % jitter, or the hub's Retry-After. */
export function retryDelayMs(
  failures: number,
  retryAfterMs: number | undefined,
  random: () => number,
  baseMs = 1000,
  maxMs = 30_000,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  const exponential = Math.min(baseMs * 2 ** (failures - 1), maxMs);
  return Math.round(exponential * (1 + 0.25 * (2 * random() - 1)));
}

/** The highest length the hub may announce for this target. */
export function maxTotal(target: Pick<DownloadTarget, "bytes" | "bytesExact">): number {
  return target.bytesExact ? target.bytes : Math.ceil(target.bytes * (1 + APPROXIMATE_SIZE_TOLERANCE));
}

function acceptableTotal(target: DownloadTarget, total: number): boolean {
  if (target.bytesExact) return total === target.bytes;
  return Math.abs(total - target.bytes) <= target.bytes * APPROXIMATE_SIZE_TOLERANCE;
}

/** A failure worth another try, with the hub's wish for a delay. */
class Retryable extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** `bytes 100-199/1000` → [100, 199, 1000]; a `*` total is not accepted: the total must be known. */
export function parseContentRange(value: string | undefined): [number, number, number] | undefined {
  const match = /^bytes (\d{1,16})-(\d{1,16})\/(\d{1,16})$/.exec(value?.trim() ?? "");
  if (!match) return undefined;
  const [start, end, total] = [Number(match[1]), Number(match[2]), Number(match[3])];
  return start <= end && end < total ? [start, end, total] : undefined;
}

function strongEtag(value: string | undefined): string | undefined {
  return value && !value.startsWith("W/") && value.length <= 512 ? value : undefined;
}

/**
 * The proxy's answer to CONNECT when it was not 200: undici 6 reports it as "Proxy response (407) !== 200 when HTTP
 * Tunneling" (lib/dispatcher/proxy-agent.js), an error named AbortError that is no abort of ours.
 */
function proxyRefusal(error: unknown): number | undefined {
  for (let current: unknown = error, depth = 0; depth < 5 && current instanceof Error; depth++) {
    const match = /Proxy response \((\d{3})\)/.exec(current.message);
    if (match) return Number(match[1]);
    current = current.cause;
  }
  return undefined;
}

export async function downloadFile(
  target: DownloadTarget,
  deps: DownloadDeps,
  options: DownloadOptions = {},
): Promise<{ resumedFrom: number }> {
  const { paths } = target;
  const stallMs = options.stallMs ?? DEFAULT_STALL_MS;
  const maxFailures = options.maxFailures ?? DEFAULT_MAX_FAILURES;
  const limit = maxTotal(target);

  let offset = 0;
  let etag: string | undefined;
  const meta = await readPartMeta(paths.partMeta);
  const partBytes = await fileSize(paths.part);
  if (
    meta !== undefined &&
    partBytes !== undefined &&
    meta.sha256 === target.sha256 &&
    meta.bytes === target.bytes &&
    partBytes <= limit
  ) {
    offset = partBytes;
    etag = meta.etag;
  } else {
    await rm(paths.part, { force: true });
    await rm(paths.partMeta, { force: true });
  }
  const resumedFrom = offset;

  const needed = limit - offset + DISK_MARGIN_BYTES;
  const free = await deps.freeBytes(dirname(paths.file));
  if (free < needed) {
    throw new ModelError(
      "disk_full",
      `not enough free space in ${paths.dir}: the download needs ${formatMb(needed)} (the rest of the file and a ${formatMb(DISK_MARGIN_BYTES)} margin) and ${formatMb(free)} is free. Free some space, or give another data folder (--data DIR)`,
    );
  }

  let hash = offset > 0 ? await hashFile(paths.part, createHash("sha256"), offset) : createHash("sha256");
  const handle = await open(paths.part, offset > 0 ? "r+" : "w", 0o600);
  const saveMeta = () =>
    writePartMeta(paths.partMeta, {
      version: 1,
      url: target.url,
      sha256: target.sha256,
      bytes: target.bytes,
      ...(etag ? { etag } : {}),
    });
  await saveMeta();

  const samples: { at: number; received: number }[] = [];
  let lastReport = -Infinity;
  let total = target.bytes;
  const report = (force: boolean, retry?: DownloadProgress["retry"]) => {
    const now = deps.clock.now();
    if (!force && now - lastReport < PROGRESS_EVERY_MS) return;
    lastReport = now;
    samples.push({ at: now, received: offset });
    while (samples.length > 2 && now - (samples[0]?.at ?? now) > 5_000) samples.shift();
    const first = samples[0];
    const span = first === undefined ? 0 : now - first.at;
    const rate = first !== undefined && span >= 200 ? ((offset - first.received) * 1000) / span : undefined;
    options.onProgress?.({
      received: offset,
      total,
      startedAt: resumedFrom,
      bytesPerSecond: rate,
      secondsLeft: rate !== undefined && rate > 0 ? (total - offset) / rate : undefined,
      ...(retry ? { retry } : {}),
    });
  };

  let reached = false;
  let failures = 0;
  try {
    for (;;) {
      if (options.signal?.aborted) throw new ModelError("aborted", "the download was stopped");
      const before = offset;
      try {
        const attempt = await fetchRange(target, deps, options.signal, offset, etag);
        reached = true;
        const { response } = attempt;
        try {
          const plan = planBody(target, response, offset, deps.clock.now());
          if (plan.kind === "complete") break;
          if (plan.kind === "restart" || (plan.kind === "body" && plan.start === 0 && offset > 0)) {
            offset = 0;
            hash = createHash("sha256");
            samples.length = 0;
            await handle.truncate(0);
            if (plan.kind === "restart") throw new Retryable(plan.why);
          }
          if (plan.kind !== "body") continue;
          total = plan.total;
          const newEtag = strongEtag(response.headers["etag"]);
          if (newEtag !== etag) {
            etag = newEtag;
            await saveMeta();
          }
          report(true);
          // Every chunk written is hashed and counted at once, so a cut or a stall keeps what arrived.
          await receiveBody(
            response,
            handle,
            offset,
            plan.total,
            (chunk) => {
              hash.update(chunk);
              offset += chunk.byteLength;
            },
            deps.clock,
            stallMs,
            () => report(false),
            options.signal,
          );
          report(true);
          if (offset === plan.total) break;
          throw new Retryable(`the connection closed at ${offset} of ${plan.total} bytes`);
        } finally {
          response.cancel();
        }
      } catch (error) {
        if (error instanceof ModelError) throw error;
        if (options.signal?.aborted) throw new ModelError("aborted", "the download was stopped", { cause: error });
        const refused = proxyRefusal(error);
        if (refused === 407) {
          throw new ModelError(
            "http_error",
            "the proxy answered 407: it wants credentials; give them in the proxy URL (HTTPS_PROXY=http://user:password@proxy:port)",
            { cause: error },
          );
        }
        const code = errorCode(error);
        if (!reached && code !== undefined && UNREACHABLE_CODES.has(code)) {
          throw new ModelError("offline", `the hub could not be reached (${code})`, { cause: error });
        }
        failures = offset > before ? 1 : failures + 1;
        const why =
          error instanceof Retryable
            ? error.message
            : refused !== undefined
              ? `the proxy answered ${refused}`
              : (code ?? (error instanceof Error ? error.message : String(error)));
        if (failures > maxFailures) {
          throw new ModelError(
            "gave_up",
            `gave up after ${failures} failed tries in a row (last: ${why}); ${offset} of ${total} bytes are kept, and the next pull resumes from there`,
            { cause: error },
          );
        }
        const delay = retryDelayMs(
          failures,
          error instanceof Retryable ? error.retryAfterMs : undefined,
          deps.random,
          options.retryBaseMs,
          options.retryMaxMs,
        );
        report(true, { inMs: delay, why });
        await sleep(deps.clock, delay, options.signal);
      }
    }
    const digest = hash.digest("hex");
    if (digest !== target.sha256) {
      await handle.close().catch(() => undefined);
      await rm(paths.part, { force: true });
      await rm(paths.partMeta, { force: true });
      throw new ModelError(
        "checksum_mismatch",
        `the downloaded file's sha256 is ${digest}, not ${target.sha256}: it was removed. The hub (or a mirror, or a proxy) served other bytes than the registry names`,
      );
    }
    await handle.sync();
  } catch (error) {
    // Nothing arrived, in this pull or before it: leave no empty part behind.
    if (resumedFrom === 0 && offset === 0) {
      await handle.close().catch(() => undefined);
      await rm(paths.part, { force: true });
      await rm(paths.partMeta, { force: true });
    }
    throw error;
  } finally {
    await handle.close().catch(() => undefined);
  }
  await rename(paths.part, paths.file);
  await rm(paths.partMeta, { force: true });
  return { resumedFrom };
}

type BodyPlan =
  { kind: "body"; start: number; total: number } | { kind: "complete" } | { kind: "restart"; why: string };

/** What to do with an answer, decided from its status and headers alone, before any byte is written. */
function planBody(target: DownloadTarget, response: HttpResponse, offset: number, now: number): BodyPlan {
  const { status, headers } = response;
  const length = headers["content-length"] === undefined ? undefined : Number(headers["content-length"]);
  if (status === 206) {
    const range = parseContentRange(headers["content-range"]);
    if (range === undefined)
      throw badResponse(`a 206 answer without a usable Content-Range (${String(headers["content-range"])})`);
    const [start, end, total] = range;
    if (start !== offset) throw badResponse(`a 206 answer starting at byte ${start}, not at ${offset} as asked`);
    checkTotal(target, total);
    if (length !== undefined && length !== end - start + 1)
      throw badResponse(`Content-Length ${length} does not match Content-Range ${String(headers["content-range"])}`);
    return { kind: "body", start, total };
  }
  if (status === 200) {
    if (length === undefined || !Number.isSafeInteger(length))
      throw badResponse("a 200 answer without a Content-Length");
    checkTotal(target, length);
    return { kind: "body", start: 0, total: length };
  }
  if (status === 416) {
    const total = Number(/^bytes \*\/(\d{1,16})$/.exec(headers["content-range"]?.trim() ?? "")?.[1] ?? NaN);
    if (offset > 0 && (total === offset || (Number.isNaN(total) && target.bytesExact && offset === target.bytes)))
      return { kind: "complete" };
    return { kind: "restart", why: `the hub refused the range from byte ${offset} (416)` };
  }
  throw statusError(status, headers, now);
}

function checkTotal(target: DownloadTarget, total: number): void {
  if (!Number.isSafeInteger(total) || !acceptableTotal(target, total)) {
    throw badResponse(
      `the hub says the file is ${total} bytes, and the registry says ${target.bytesExact ? "" : "about "}${target.bytes}`,
    );
  }
}

function badResponse(message: string): ModelError {
  return new ModelError("bad_response", `${message}: refused`);
}

function statusError(status: number, headers: HttpResponse["headers"], now: number): Error {
  if (status === 408 || status === 429 || (status >= 500 && status <= 599)) {
    return new Retryable(`the hub answered ${status}`, parseRetryAfterMs(headers["retry-after"], now));
  }
  const hint =
    status === 401 || status === 403
      ? ": the file needs an account or a licence accepted on the hub, which tab-relay does not do; download it by hand"
      : status === 404
        ? ": the hub (or mirror) has no such file at this revision"
        : "";
  return new ModelError("http_error", `the hub answered ${status}${hint}`);
}

interface Fetched {
  response: HttpResponse;
}

/** GET from `offset`, following redirects (bounded, http(s) only, no https→http). */
async function fetchRange(
  target: DownloadTarget,
  deps: DownloadDeps,
  signal: AbortSignal | undefined,
  offset: number,
  etag: string | undefined,
): Promise<Fetched> {
  let url = target.url;
  const headers: Record<string, string> = { "accept-encoding": "identity", "user-agent": "tab-relay (models pull)" };
  if (offset > 0) {
    headers["range"] = `bytes=${offset}-`;
    if (etag) headers["if-range"] = etag;
  }
  for (let hop = 0; ; hop++) {
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    let response: HttpResponse;
    try {
      response = await deps.get(url, { headers, signal: controller.signal });
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
    if (response.status < 300 || response.status > 399 || response.status === 304) return { response };
    response.cancel();
    const location = response.headers["location"];
    if (hop >= MAX_REDIRECTS) throw badResponse(`more than ${MAX_REDIRECTS} redirects`);
    if (!location) throw badResponse(`a ${response.status} answer without a Location`);
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      throw badResponse("a redirect to an address that is not a URL");
    }
    if (next.protocol !== "https:" && next.protocol !== "http:")
      throw badResponse(`a redirect to ${next.protocol} (only http and https are followed)`);
    if (new URL(url).protocol === "https:" && next.protocol === "http:")
      throw badResponse("a redirect from https down to http");
    url = next.href;
  }
}

/**
 * Writes the body at `offset` onwards, handing each written chunk to `onChunk`, until it ends, the total is reached,
 * or it stalls (a Retryable). More bytes than the total are refused.
 */
async function receiveBody(
  response: HttpResponse,
  handle: FileHandle,
  offset: number,
  total: number,
  onChunk: (chunk: Uint8Array) => void,
  clock: Clock,
  stallMs: number,
  onProgress: () => void,
  signal: AbortSignal | undefined,
): Promise<void> {
  let lastData = clock.now();
  let stalled = false;
  const onAbort = () => response.cancel();
  signal?.addEventListener("abort", onAbort, { once: true });
  let timer: unknown;
  const watch = () => {
    timer = clock.setTimeout(
      () => {
        if (clock.now() - lastData >= stallMs) {
          stalled = true;
          response.cancel();
        } else watch();
      },
      Math.max(10, Math.min(stallMs, 1000)),
    );
  };
  watch();
  let position = offset;
  try {
    for await (const chunk of response.body) {
      lastData = clock.now();
      if (position + chunk.byteLength > total) {
        throw badResponse(`the hub sent more than the ${total} bytes it announced`);
      }
      let written = 0;
      while (written < chunk.byteLength) {
        const { bytesWritten } = await handle.write(chunk, written, chunk.byteLength - written, position + written);
        written += bytesWritten;
      }
      onChunk(chunk);
      position += chunk.byteLength;
      onProgress();
      if (position === total) break;
    }
  } catch (error) {
    if (error instanceof ModelError) throw error;
    if (signal?.aborted) throw new ModelError("aborted", "the download was stopped", { cause: error });
    const code = errorCode(error);
    if (code === "ENOSPC" || code === "EDQUOT") {
      // As ollama does, a full disk is not retried: the part stays for a pull once there is room.
      throw new ModelError(
        "disk_full",
        `the disk filled up at ${position} of ${total} bytes (${code}); what arrived is kept. Free some space and pull again`,
        { cause: error },
      );
    }
    if (!stalled) {
      // A cut mid-body: what arrived is kept, and the next try resumes after it.
      if (position > offset)
        throw new Retryable(
          `the connection broke at ${position} of ${total} bytes (${errorCode(error) ?? (error as Error).message})`,
        );
      throw error;
    }
  } finally {
    clock.clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
  if (signal?.aborted) throw new ModelError("aborted", "the download was stopped");
  if (stalled) {
    const quiet = stallMs < 10_000 ? `${stallMs} ms` : `${Math.round(stallMs / 1000)} s`;
    throw new Retryable(`no data for ${quiet} at ${position} of ${total} bytes`);
  }
}

function sleep(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    };
    const handle = clock.setTimeout(done, ms);
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(new ModelError("aborted", "the download was stopped"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function formatMb(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}
