import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import { processCpuMs } from "./processes";
import { type LatencySummary, summarize } from "./stats";

/** One HTTP endpoint that answers a POST with an SSE stream ending in `data: [DONE]`. */
export interface StreamTarget {
  name: string;
  url: string;
  headers: Readonly<Record<string, string>>;
  body: string;
}

export interface LoadOptions {
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** A request that takes longer is counted as an error, so a stuck server cannot stall the run. */
  requestTimeoutMs?: number;
  /** Processes whose CPU time is measured over the measured window, by name; the load generator always is. */
  processes?: Readonly<Record<string, number>>;
  /** Called right before and after the measured window, e.g. to read the server's own metrics. */
  probe?: WindowProbe;
}

export interface WindowProbe {
  begin(): Promise<void>;
  /** Figures about the window just measured, reported as `LoadResult.probe`. */
  end(): Promise<Record<string, number>>;
}

export const LOAD_GENERATOR = "load generator";

export interface LoadResult {
  target: string;
  concurrency: number;
  /** Streams that ended with status 200 and `data: [DONE]` inside the measured window. */
  completed: number;
  errors: number;
  firstError: string | undefined;
  elapsedMs: number;
  streamsPerSecond: number;
  /** From the request being started to the first byte of the response body. */
  ttfbMs: LatencySummary;
  /** From the request being started to the end of the stream. */
  totalMs: LatencySummary;
  /** CPU microseconds per completed stream of each measured process; absent where it could not be read. */
  cpuUsPerStream: Record<string, number>;
  probe: Record<string, number>;
}

interface Outcome {
  ok: boolean;
  ttfbMs: number;
  totalMs: number;
  error?: string;
}

const DONE = "data: [DONE]\n\n";

/** One streamed request over `agent`; never rejects, failures come back as `ok: false`. */
export function streamOnce(
  agent: Agent,
  target: StreamTarget,
  body: Buffer,
  url: URL,
  timeoutMs: number,
): Promise<Outcome> {
  return new Promise((resolve) => {
    const started = performance.now();
    let firstByte = Number.NaN;
    let settled = false;
    const settle = (outcome: Omit<Outcome, "totalMs">) => {
      if (settled) return;
      settled = true;
      resolve({ ...outcome, totalMs: performance.now() - started });
    };
    const req = request(
      {
        agent,
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: "POST",
        headers: { ...target.headers, "content-type": "application/json", "content-length": String(body.byteLength) },
      },
      (res) => {
        // Only the end of the stream is kept: enough to check for [DONE] without holding whole bodies.
        let tail = "";
        res.on("data", (chunk: Buffer) => {
          if (Number.isNaN(firstByte)) firstByte = performance.now() - started;
          tail = (tail + chunk.toString("latin1")).slice(-64);
        });
        res.on("end", () => {
          const ok = res.statusCode === 200 && tail.endsWith(DONE);
          settle(
            ok
              ? { ok, ttfbMs: firstByte }
              : { ok, ttfbMs: firstByte, error: `status ${res.statusCode}, stream ended with ${JSON.stringify(tail)}` },
          );
        });
        res.on("error", (error) => settle({ ok: false, ttfbMs: firstByte, error: error.message }));
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", (error) => settle({ ok: false, ttfbMs: firstByte, error: error.message }));
    req.end(body);
  });
}

/** The whole body of one streamed answer, to check a target works before it is measured. */
export async function fetchStream(target: StreamTarget): Promise<{ status: number; text: string }> {
  const response = await fetch(target.url, {
    method: "POST",
    headers: { ...target.headers, "content-type": "application/json" },
    body: target.body,
  });
  return { status: response.status, text: await response.text() };
}

/** One measured window against one target; windows of the same cell are combined by `combineSlices`. */
export interface LoadSlice {
  ttfbMs: number[];
  totalMs: number[];
  errors: number;
  firstError: string | undefined;
  elapsedMs: number;
  /** CPU milliseconds each measured process used during the window. */
  cpuMs: Record<string, number>;
  probe: Record<string, number>;
}

/**
 * Keeps `concurrency` streams in flight back to back, first for `warmupMs` (discarded: JIT, connection
 * set-up, SQLite page cache), then for `durationMs`. Every worker finishes its last stream, and the
 * window lasts until the last one ended.
 */
export async function runSlice(target: StreamTarget, options: LoadOptions): Promise<LoadSlice> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency, maxFreeSockets: options.concurrency });
  const url = new URL(target.url);
  const body = Buffer.from(target.body);
  const timeoutMs = options.requestTimeoutMs ?? 10_000;

  const phase = async (durationMs: number) => {
    const ttfbMs: number[] = [];
    const totalMs: number[] = [];
    let errors = 0;
    let firstError: string | undefined;
    const started = performance.now();
    const deadline = started + durationMs;
    const worker = async () => {
      while (performance.now() < deadline) {
        const outcome = await streamOnce(agent, target, body, url, timeoutMs);
        if (outcome.ok) {
          ttfbMs.push(outcome.ttfbMs);
          totalMs.push(outcome.totalMs);
        } else {
          errors++;
          firstError ??= outcome.error;
          // A refusing server must not turn the loop into a busy spin.
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, worker));
    return { ttfbMs, totalMs, errors, firstError, elapsedMs: performance.now() - started };
  };

  const cpuNow = (): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const [name, pid] of Object.entries(options.processes ?? {})) {
      const ms = processCpuMs(pid);
      if (ms !== undefined) out[name] = ms;
    }
    const own = process.cpuUsage();
    out[LOAD_GENERATOR] = (own.user + own.system) / 1000;
    return out;
  };

  try {
    await phase(options.warmupMs);
    await options.probe?.begin();
    const cpuBefore = cpuNow();
    const measured = await phase(options.durationMs);
    const cpuAfter = cpuNow();
    const probe = (await options.probe?.end()) ?? {};
    const cpuMs: Record<string, number> = {};
    for (const [name, after] of Object.entries(cpuAfter)) {
      const before = cpuBefore[name];
      if (before !== undefined) cpuMs[name] = after - before;
    }
    return { ...measured, cpuMs, probe };
  } finally {
    agent.destroy();
  }
}

/** One cell's figures from its windows: samples pooled, rates over the summed window time, probe values weighted by streams. */
export function combineSlices(target: string, concurrency: number, slices: readonly LoadSlice[]): LoadResult {
  const ttfb = slices.flatMap((s) => s.ttfbMs);
  const total = slices.flatMap((s) => s.totalMs);
  const elapsedMs = slices.reduce((sum, s) => sum + s.elapsedMs, 0);
  const completed = ttfb.length;
  const cpuUsPerStream: Record<string, number> = {};
  const probe: Record<string, number> = {};
  if (completed > 0) {
    for (const name of new Set(slices.flatMap((s) => Object.keys(s.cpuMs)))) {
      if (slices.every((s) => s.cpuMs[name] !== undefined))
        cpuUsPerStream[name] = (slices.reduce((sum, s) => sum + (s.cpuMs[name] ?? 0), 0) * 1000) / completed;
    }
    for (const name of new Set(slices.flatMap((s) => Object.keys(s.probe)))) {
      if (slices.every((s) => s.probe[name] !== undefined))
        probe[name] = slices.reduce((sum, s) => sum + (s.probe[name] ?? 0) * s.ttfbMs.length, 0) / completed;
    }
  }
  return {
    target,
    concurrency,
    completed,
    errors: slices.reduce((sum, s) => sum + s.errors, 0),
    firstError: slices.find((s) => s.firstError !== undefined)?.firstError,
    elapsedMs,
    streamsPerSecond: completed / (elapsedMs / 1000),
    ttfbMs: summarize(ttfb),
    totalMs: summarize(total),
    cpuUsPerStream,
    probe,
  };
}
