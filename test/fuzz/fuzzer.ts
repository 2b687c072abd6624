import type { ChildProcess } from "node:child_process";
import { readdirSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { HTTP_ROUTES, type HttpRoute, completionSample, routeLabel } from "./catalogue";
import { type Violation, judgeOutcome, judgeResponse, strayMetricRoutes } from "./checks";
import { type Fixtures, createFixtures } from "./fixtures";
import { type CaseContext, type HttpCase, buildHttpCase } from "./mutate";
import { type RawOutcome, type RawRequest, header, sendRaw } from "./rawHttp";
import { caseSeed, createRandom } from "./random";
import { type FuzzRelay, RAISED_RATE_LIMITS, initDataFolder, startRelayProcess } from "./relay";
import {
  FRAME_KINDS,
  HANDSHAKE_SWEEP,
  JSON_FRAME_CHOICES,
  badFrame,
  buildHandshakeCase,
  goodHandshake,
  jsonFrame,
  openRawWebSocket,
} from "./websocket";

/** Frame sessions that sweep every JSON message, then every kind of bad frame on each endpoint, before random ones. */
const FRAME_SWEEP = JSON_FRAME_CHOICES + FRAME_KINDS.length * 2;

/**
 * The fuzzer: a relay process on a fresh data folder, fixtures made through its API, then seeded attacks until the
 * time is up: first a sweep of every handshake mutation and every kind of WebSocket frame, then rounds of a burst of
 * HTTP cases, a few handshakes and one session of frames. After each burst and each WebSocket case the process must
 * be alive and `/healthz` must answer. A relay that dies is restarted on the same data (after the requests it died on
 * are replayed one by one to find the one that killed it), so one crash does not hide the next finding. The same data
 * is then served with the default rate limits for a while.
 */

export const DEFAULT_SEED = 1111;
/**
 * The largest growth of the relay's resident memory allowed from the end of the warm-up to the end of a run, each
 * read right after a full garbage collection. What the relay keeps has a fixed size under any load (the completion
 * cache's 1,000 short answers, statements cached per SQL text, rate-limit windows that expire each minute, SQLite's
 * page cache of about 2 MB) and fills during the warm-up; measured this way the relay moved by -7 to +5 MiB over
 * 4,000 to 11,000 requests and by -3 MiB over 42,000. 32 MiB leaves room for the allocator's own slack, while a leak
 * of 8 KiB per request fails the 30-second run in `npm test` even on a busy machine (4,000 requests or more), and one of
 * 1 KiB fails a five-minute `npm run fuzz`. (Without the collection the reading swings by over 100 MiB with where the
 * collector happens to be.)
 */
export const RSS_GROWTH_BOUND_KIB = 32 * 1024;
const REQUEST_TIMEOUT_MS = 15_000;
const CASE_STREAMS = { h: 1, s: 2, w: 3, d: 4, u: 5 } as const;
type CaseFamily = keyof typeof CASE_STREAMS;

export interface FuzzOptions {
  seed: number;
  /** Seconds of attack on a relay whose rate limits are raised, so requests reach the handlers. */
  seconds: number;
  /** Seconds of attack afterwards on the same data, served with the default rate limits (429s and their headers). */
  defaultLimitSeconds: number;
  concurrency: number;
  /** Replays one case (`h12`, `s3`, `w7`, `d40`, `u2`) alone and reports what it did. */
  only?: string | undefined;
  rssBoundKiB?: number;
  log(line: string): void;
}

export interface Example {
  caseId: string;
  label: string;
  request: string;
  outcome: string;
  relayLog: string[];
}

export interface Failure {
  violation: Violation;
  count: number;
  labels: Set<string>;
  example: Example;
  /** A few more cases that broke the same promise, to replay. */
  more: string[];
}

export interface FuzzReport {
  seed: number;
  durationMs: number;
  counts: { http: number; handshakes: number; frameSessions: number; frames: number };
  /** Answers by status (`200`, `404`, ...) or by what happened instead (`closed`, `timeout`). */
  byStatus: Map<string, number>;
  /** The same, per route (`POST /api/v1/agents`), to see which handlers the run reached. */
  byRoute: Map<string, Map<string, number>>;
  failures: Map<string, Failure>;
  /** Per relay: its RSS after the warm-up and at the end (each after a full garbage collection). */
  rss: { warmKiB: number; endKiB: number; growthKiB: number; boundKiB: number; requests: number }[];
  restarts: number;
  /** The slowest answers of the run. */
  slowest: Slow[];
}

export interface Slow {
  id: string;
  label: string;
  ms: number;
  answer: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Printing requests so they can be read and replayed

function printable(value: string | Buffer, max = 200): string {
  const bytes = typeof value === "string" ? Buffer.from(value, "utf8") : value;
  const shown = bytes.subarray(0, max);
  const text =
    typeof value === "string" && Buffer.from(shown.toString("utf8"), "utf8").equals(shown)
      ? JSON.stringify(shown.toString("utf8"))
      : `"${[...shown].map((byte) => (byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, "0")}`)).join("")}"`;
  return bytes.length > max ? `${text}… (${bytes.length} bytes)` : text;
}

export function describeRequest(request: RawRequest): string {
  if (request.raw) return `raw bytes ${printable(request.raw, 400)}`;
  const lines = [`${request.method} ${printable(request.target, 300)}`];
  for (const [name, value] of request.headers) lines.push(`  ${name}: ${printable(value, 160)}`);
  if (request.body !== undefined) lines.push(`  body: ${printable(request.body, 300)}`);
  if (request.halfCloseAfterMs !== undefined)
    lines.push(`  (the client closes its side after ${request.halfCloseAfterMs} ms)`);
  return lines.join("\n");
}

function describeOutcome(outcome: RawOutcome): string {
  if (outcome.kind !== "response")
    return `${outcome.kind} after ${outcome.ms} ms${outcome.kind === "error" ? `: ${outcome.message}` : ""}`;
  const { response } = outcome;
  return `${response.head.split("\r\n")[0] ?? ""} content-type=${header(response, "content-type") ?? "-"} body=${printable(response.body, 240)}`;
}

function normalise(detail: string): string {
  return detail
    .replace(/\b[a-z]+_[A-Za-z0-9]{6,}\b/g, "<id>")
    .replace(/\d+/g, "#")
    .slice(0, 140);
}

export function formatFailures(report: FuzzReport): string {
  const lines: string[] = [];
  for (const failure of report.failures.values()) {
    const { violation, example } = failure;
    lines.push(
      `\n[${violation.kind}] ${violation.detail}`,
      `  seen ${failure.count}× on ${[...failure.labels].slice(0, 6).join(", ")}${failure.labels.size > 6 ? ", …" : ""}`,
      example.caseId === "-"
        ? `  seen after the run (${example.label})`
        : `  first: case ${example.caseId} (${example.label}); replay: npm run fuzz -- --seed ${report.seed} --case ${example.caseId}${failure.more.length > 0 ? `; also ${failure.more.join(", ")}` : ""}`,
      ...example.request.split("\n").map((line) => `    ${line}`),
      `  answer: ${example.outcome}`,
      ...example.relayLog.slice(0, 14).map((line) => `  relay: ${line.slice(0, 600)}`),
    );
  }
  return lines.join("\n");
}

/** Catalogued routes that never answered 2xx: mutations kept their handler out of reach. */
export function unreachedRoutes(report: FuzzReport): string[] {
  return HTTP_ROUTES.map(routeLabel).filter(
    (label) => ![...(report.byRoute.get(label)?.keys() ?? [])].some((status) => status.startsWith("2")),
  );
}

export function formatSummary(report: FuzzReport): string {
  const statuses = [...report.byStatus.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, count]) => `${status}: ${count}`);
  const mib = (kib: number) => Math.round(kib / 1024);
  const never = unreachedRoutes(report).map(
    (label) =>
      `${label} (${[...(report.byRoute.get(label) ?? new Map<string, number>()).entries()].map(([status, count]) => `${status}×${count}`).join(" ") || "not attacked"})`,
  );
  const rss = report.rss.map(
    (r) =>
      `${mib(r.warmKiB)} MiB after the warm-up → ${mib(r.endKiB)} MiB after ${r.requests} requests (growth ${mib(r.growthKiB)} MiB, bound ${mib(r.boundKiB)} MiB)`,
  );
  return [
    `seed ${report.seed}: ${report.counts.http} HTTP requests, ${report.counts.handshakes} WebSocket handshakes, ${report.counts.frameSessions} frame sessions (${report.counts.frames} frames) in ${(report.durationMs / 1000).toFixed(1)} s; ${report.restarts} restarts`,
    `answers: ${statuses.join(", ")}`,
    ...(report.counts.http > HTTP_ROUTES.length * 10
      ? [
          `catalogued routes that answered 2xx: ${HTTP_ROUTES.length - never.length} of ${HTTP_ROUTES.length}${never.length > 0 ? `; never: ${never.join("; ")}` : ""}`,
        ]
      : []),
    `RSS: ${rss.join("; ") || "not measured"}`,
    `slowest: ${report.slowest.map((slow) => `${slow.id} ${slow.label} ${Math.round(slow.ms)} ms (${slow.answer})`).join("; ")}`,
    `failures: ${report.failures.size === 0 ? "none" : [...report.failures.values()].map((f) => `${f.violation.kind} ×${f.count}`).join(", ")}`,
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// The run

function staticFiles(): string[] {
  try {
    return readdirSync(fileURLToPath(new URL("../../relay/dist/console/", import.meta.url))).map((name) => `/${name}`);
  } catch {
    return [];
  }
}

/** One relay process and its data folder: started once, restarted after a crash or to change its rate limits. */
class Target {
  relay!: FuzzRelay;
  fixtures!: Fixtures;
  context!: CaseContext;
  /** Which case family runs now: `h` with raised limits, `d` with the defaults. */
  family: "h" | "d" = "h";
  private readonly tracked = new Set<ChildProcess>();
  private readonly data = initDataFolder();
  private rateLimits: string | undefined = RAISED_RATE_LIMITS;
  /** How many HTTP cases had run when the current relay process started. */
  startedAtCount = 0;
  constructor(
    readonly report: FuzzReport,
    readonly options: FuzzOptions,
  ) {}

  get address() {
    return { host: this.relay.host, port: this.relay.port };
  }

  async start(): Promise<void> {
    this.relay = await startRelayProcess({
      dataDir: this.data.dataDir,
      rateLimits: this.rateLimits,
      tracked: this.tracked,
    });
    this.fixtures = await createFixtures(this.relay.url, this.data.ownerKey);
    this.context = {
      fixtures: this.fixtures,
      host: `${this.relay.host}:${this.relay.port}`,
      staticFiles: staticFiles(),
    };
  }

  /** The same data (and so the same fixtures) under a relay with the default rate limits. */
  async useDefaultLimits(): Promise<void> {
    await this.relay.stop();
    this.rateLimits = undefined;
    this.family = "d";
    this.relay = await startRelayProcess({
      dataDir: this.data.dataDir,
      rateLimits: this.rateLimits,
      tracked: this.tracked,
    });
    this.context = { ...this.context, host: `${this.relay.host}:${this.relay.port}` };
    this.startedAtCount = this.report.counts.http;
  }

  async restart(): Promise<void> {
    this.report.restarts++;
    this.relay = await startRelayProcess({
      dataDir: this.data.dataDir,
      rateLimits: this.rateLimits,
      tracked: this.tracked,
    });
    this.context = { ...this.context, host: `${this.relay.host}:${this.relay.port}` };
    this.startedAtCount = this.report.counts.http;
  }

  async stop(): Promise<void> {
    await this.relay?.stop();
    for (const child of this.tracked) child.kill("SIGKILL");
    this.data.remove();
  }

  record(violations: Violation[], label: string, example: () => Example): void {
    for (const violation of violations) {
      const key = `${violation.kind}|${violation.status ?? ""}|${violation.code ?? ""}|${normalise(violation.detail)}`;
      const known = this.report.failures.get(key);
      if (known) {
        known.count++;
        known.labels.add(label);
        if (known.more.length < 8) known.more.push(example().caseId);
      } else
        this.report.failures.set(key, { violation, count: 1, labels: new Set([label]), example: example(), more: [] });
    }
  }

  count(outcome: RawOutcome, id: string, label: string): void {
    const key = outcome.kind === "response" ? String(outcome.response.status) : outcome.kind;
    this.report.byStatus.set(key, (this.report.byStatus.get(key) ?? 0) + 1);
    let statuses = this.report.byRoute.get(label);
    if (!statuses) this.report.byRoute.set(label, (statuses = new Map()));
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
    const slowest = this.report.slowest;
    if (slowest.length < 5 || outcome.ms > (slowest[slowest.length - 1] as Slow).ms) {
      slowest.push({ id, label, ms: outcome.ms, answer: key });
      slowest.sort((a, b) => b.ms - a.ms);
      slowest.length = Math.min(slowest.length, 5);
    }
  }

  private exampleOf(id: string, label: string, request: RawRequest, outcome: RawOutcome): Example {
    const requestId = outcome.kind === "response" ? header(outcome.response, "x-request-id") : undefined;
    return {
      caseId: id,
      label,
      request: describeRequest(request),
      outcome: describeOutcome(outcome),
      relayLog: requestId ? this.relay.logFor(requestId) : [],
    };
  }

  async runHttpCase(test: HttpCase): Promise<RawOutcome | undefined> {
    const outcome = await sendRaw(this.address, test.request, REQUEST_TIMEOUT_MS);
    // Whatever a dying relay answered says nothing about the request; the crash is attributed afterwards.
    if (outcome.kind !== "response" && !(await this.answers())) return undefined;
    if (!this.relay.alive()) return undefined;
    this.report.counts.http++;
    this.count(outcome, test.id, test.label);
    const violations = judgeOutcome(
      { method: test.request.method, fields: test.fields, mayGoUnanswered: test.mayGoUnanswered },
      outcome,
    );
    this.record(violations, test.label, () =>
      this.exampleOf(test.id, `${test.label} [${test.mutations.join(", ") || "unmutated"}]`, test.request, outcome),
    );
    return outcome;
  }

  /**
   * Case `u<index>` of the warm-up: each catalogued route's sample once, unmutated, then a completion answered whole
   * and one streamed with usage (both count prompt tokens, which loads the tokenizer's worker).
   */
  warmUpCase(index: number): HttpCase {
    const random = createRandom(caseSeed(this.options.seed, CASE_STREAMS.u, index));
    const completions = HTTP_ROUTES.find((route) => route.path === "/tab/chat/completions") as HttpRoute;
    const extra = index - HTTP_ROUTES.length;
    const only =
      extra < 0
        ? { route: HTTP_ROUTES[index] as HttpRoute }
        : {
            route: completions,
            body: {
              ...completionSample(this.fixtures, random),
              stream: extra === 1,
              stream_options: { include_usage: true },
            },
          };
    return { ...buildHttpCase(index, random, this.context, { ...only, unmutated: true }), id: `u${index}` };
  }

  /** Runs the warm-up cases, so what is made on first use exists before the memory baseline is read. */
  async warmUp(): Promise<void> {
    for (let index = 0; index < HTTP_ROUTES.length + 2; index++) await this.runHttpCase(this.warmUpCase(index));
  }

  httpCase(index: number): HttpCase {
    const test = buildHttpCase(
      index,
      createRandom(caseSeed(this.options.seed, CASE_STREAMS[this.family], index)),
      this.context,
    );
    return this.family === "h" ? test : { ...test, id: `d${index}` };
  }

  /** One burst of HTTP cases from `next()`, `concurrency` at a time, until `size` are sent or the time is up. */
  async httpBurst(next: () => number, size: number, deadline: number): Promise<void> {
    let sent = 0;
    const recent: { test: HttpCase; at: number }[] = [];
    const worker = async () => {
      while (sent < size && performance.now() < deadline && this.relay.alive()) {
        sent++;
        const test = this.httpCase(next());
        recent.push({ test, at: performance.now() });
        if (recent.length > 4 * this.options.concurrency) recent.shift();
        await this.runHttpCase(test);
      }
    };
    await Promise.all(Array.from({ length: this.options.concurrency }, worker));
    // The suspects of a crash: what was sent in the last seconds before it was noticed, the latest first.
    await this.checkHealth("an HTTP burst", () =>
      recent
        .filter(({ at }) => at > performance.now() - 5_000)
        .map(({ test }) => test)
        .reverse(),
    );
  }

  /** `/metrics` measures requests under route names only, however the requests spelled their paths. */
  async checkMetrics(): Promise<void> {
    const outcome = await sendRaw(
      this.address,
      {
        method: "GET",
        target: "/metrics",
        headers: [
          ["Host", this.context.host],
          ["Connection", "close"],
        ],
      },
      15_000,
    );
    if (outcome.kind !== "response" || outcome.response.status !== 200) return;
    const stray = strayMetricRoutes(outcome.response.body.toString("utf8"));
    if (stray.length === 0) return;
    const detail =
      "route labels in /metrics are not route names but how requests spelled their paths (one series per spelling)";
    this.record([{ kind: "metrics", detail }], "GET /metrics", () => ({
      caseId: "-",
      label: "GET /metrics",
      request: "GET /metrics after the run",
      outcome: `${stray.length} such labels in ${Math.round(outcome.response.body.length / 1024)} KiB of metrics, e.g. ${stray
        .slice(0, 6)
        .map((name) => JSON.stringify(name))
        .join(", ")}`,
      relayLog: [],
    }));
  }

  /** The relay's RSS right after a full garbage collection. */
  async settledRssKiB(): Promise<number | undefined> {
    await this.relay.collectGarbage();
    return this.relay.rssKiB();
  }

  /** Whether the relay answers `/healthz`; one that does not is given 5 s to exit, so a dying relay is seen as dead. */
  private async answers(): Promise<boolean> {
    if (!this.relay.alive()) return false;
    const outcome = await sendRaw(
      this.address,
      {
        method: "GET",
        target: "/healthz",
        headers: [
          ["Host", this.context.host],
          ["Connection", "close"],
        ],
      },
      5_000,
    );
    if (outcome.kind === "response" && outcome.response.status === 200) return true;
    await Promise.race([this.relay.exited, sleep(5_000)]);
    return false;
  }

  /**
   * After a case or a burst: the process is alive and `/healthz` answers 200. A relay that does not answer is given
   * 5 s to exit (an uncaught exception's exit takes a moment on a busy machine), and a dead one is a crash, pinned on
   * `culprit` or on the one of `suspects` that kills it again when replayed alone.
   */
  async checkHealth(
    after: string,
    suspects: () => HttpCase[] = () => [],
    culprit?: { id: string; label: string; request: string },
  ): Promise<void> {
    let outcome: RawOutcome | undefined;
    if (this.relay.alive()) {
      outcome = await sendRaw(
        this.address,
        {
          method: "GET",
          target: "/healthz",
          headers: [
            ["Host", this.context.host],
            ["Connection", "close"],
          ],
        },
        5_000,
      );
      if (outcome.kind === "response" && outcome.response.status === 200) return;
      await Promise.race([this.relay.exited, sleep(5_000)]);
    }
    if (!this.relay.alive()) {
      await this.crashed(after, suspects(), culprit);
      return;
    }
    const answer = outcome ? describeOutcome(outcome) : "-";
    this.record([{ kind: "health", detail: `/healthz after ${after}: ${answer}` }], "GET /healthz", () => ({
      caseId: culprit?.id ?? "-",
      label: "GET /healthz",
      request: culprit?.request ?? "GET /healthz",
      outcome: answer,
      relayLog: [],
    }));
  }

  /**
   * The relay died: record it with its last words, restart it, then (unless the culprit is known) replay the
   * suspects one at a time to name the one that kills it.
   */
  private async crashed(
    during: string,
    suspects: HttpCase[],
    known?: { id: string; label: string; request: string },
  ): Promise<void> {
    const how = await this.relay.exited;
    const tail = this.relay.tail(40);
    // What Node printed as it died (the uncaught exception and its stack), not the relay's own JSON log lines.
    const lastWords = tail
      .split("\n")
      .filter(
        (line) =>
          line.trim() !== "" &&
          !line.startsWith("{") &&
          !/^(Debugger listening|For help, see|tab-relay serving on)/.test(line),
      )
      .slice(0, 14);
    let culprit = known;
    await this.restart();
    if (!culprit) {
      for (const suspect of suspects.slice(0, 24)) {
        await sendRaw(this.address, suspect.request, REQUEST_TIMEOUT_MS);
        const health = await sendRaw(
          this.address,
          {
            method: "GET",
            target: "/healthz",
            headers: [
              ["Host", this.context.host],
              ["Connection", "close"],
            ],
          },
          5_000,
        );
        if (health.kind !== "response") await Promise.race([this.relay.exited, sleep(5_000)]);
        if (!this.relay.alive()) {
          culprit = { id: suspect.id, label: suspect.label, request: describeRequest(suspect.request) };
          await this.restart();
          break;
        }
      }
    }
    const request =
      culprit?.request ??
      `one of these (none killed it again when replayed alone):\n${suspects.map((s) => `${s.id}: ${describeRequest(s.request)}`).join("\n")}`;
    const label = culprit?.label ?? during;
    this.record([{ kind: "crash", detail: `the relay exited (${String(how)}) after ${during}` }], label, () => ({
      caseId: culprit?.id ?? suspects[0]?.id ?? "-",
      label,
      request,
      outcome: "the process exited",
      relayLog: lastWords.length > 0 ? lastWords : tail.split("\n").slice(-12),
    }));
  }

  async handshakeCase(index: number, verbose = false): Promise<void> {
    const test = buildHandshakeCase(
      index,
      createRandom(caseSeed(this.options.seed, CASE_STREAMS.s, index)),
      this.fixtures,
      this.context.host,
    );
    if (verbose)
      this.options.log(
        `case ${test.id}: ${test.label} [${test.mutations.join(", ") || "unmutated"}]\n${describeRequest(test.request)}`,
      );
    const outcome = await sendRaw(this.address, test.request, REQUEST_TIMEOUT_MS);
    if (verbose) this.options.log(`answer: ${describeOutcome(outcome)}`);
    if (this.relay.alive()) {
      this.report.counts.handshakes++;
      this.count(outcome, test.id, test.label);
      const violations =
        outcome.kind === "response" && outcome.response.status === 101
          ? []
          : judgeOutcome({ method: test.request.method, fields: [], mayGoUnanswered: false }, outcome);
      this.record(violations, test.label, () =>
        this.exampleOf(test.id, `${test.label} [${test.mutations.join(", ") || "unmutated"}]`, test.request, outcome),
      );
    }
    await this.checkHealth("a WebSocket handshake", () => [], {
      id: test.id,
      label: test.label,
      request: describeRequest(test.request),
    });
  }

  async frameSession(index: number, verbose = false): Promise<void> {
    const random = createRandom(caseSeed(this.options.seed, CASE_STREAMS.w, index));
    // The sweep: each JSON message alone on an agent socket (the relay parses those), then each kind of bad frame on
    // each endpoint. Random sessions follow.
    const sweep =
      index < JSON_FRAME_CHOICES
        ? { kind: "agent" as const }
        : index < FRAME_SWEEP
          ? { kind: (index - JSON_FRAME_CHOICES) % 2 === 0 ? ("live" as const) : ("agent" as const) }
          : undefined;
    const kind = sweep?.kind ?? (random.chance(0.5) ? "live" : "agent");
    const handshake = goodHandshake(kind, random, this.fixtures, this.context.host);
    const id = `w${index}`;
    const label = `WS frames ${kind}`;
    const sent: string[] = [];
    const culprit = () => ({
      id,
      label,
      request: `${describeRequest(handshake)}${sent.length > 0 ? `\n  then frames:\n${sent.map((line) => `    ${line}`).join("\n")}` : ""}`,
    });
    let ws;
    try {
      ws = await openRawWebSocket(this.address, handshake, REQUEST_TIMEOUT_MS);
    } catch (error) {
      if (this.relay.alive())
        this.record(
          [{ kind: "no-response", detail: `WebSocket handshake: ${(error as Error).message}` }],
          label,
          () => ({ ...culprit(), caseId: id, outcome: "none", relayLog: [] }),
        );
      await this.checkHealth(`a WebSocket handshake (${kind})`, () => [], culprit());
      return;
    }
    this.report.counts.frameSessions++;
    if (ws.status !== 101) {
      const response = { status: ws.status, headers: parseHeaders(ws.head), body: ws.body, head: ws.head };
      this.count({ kind: "response", response, ms: 0 }, id, label);
      this.record(judgeResponse({ method: "GET", fields: [] }, response), label, () => ({
        ...culprit(),
        caseId: id,
        outcome: ws.head.split("\r\n")[0] ?? "",
        relayLog: [],
      }));
    } else {
      // Messages first (what the relay's own handlers parse), then frames that break the protocol (what ws refuses).
      const messages = sweep ? 0 : random.int(0, 3);
      const total = sweep ? 1 : messages + random.int(1, 2);
      for (let at = 0; at < total; at++) {
        const frame =
          index < JSON_FRAME_CHOICES
            ? jsonFrame(random, ws.envelopeIds, index)
            : sweep
              ? badFrame(random, ws.envelopeIds, FRAME_KINDS[Math.floor((index - JSON_FRAME_CHOICES) / 2)]?.[0])
              : at < messages
                ? jsonFrame(random, ws.envelopeIds)
                : badFrame(random, ws.envelopeIds);
        sent.push(`${frame.name}: ${printable(frame.bytes, 48)}`);
        ws.write(frame.bytes);
        this.report.counts.frames++;
        // The relay has read the frame once it answers the ping behind it; a frame it refuses closes the socket.
        const result = await ws.probe(random, 2_000);
        if (verbose)
          this.options.log(
            `  ${frame.name} → ${result}${ws.closeCode() !== undefined ? ` (close ${ws.closeCode()})` : ""}`,
          );
        if (result !== "pong") break;
      }
      ws.end();
    }
    await this.checkHealth(`a WebSocket frame session (${kind})`, () => [], culprit());
  }
}

function parseHeaders(head: string): Map<string, string[]> {
  const headers = new Map<string, string[]>();
  for (const line of head.split("\r\n").slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) {
      const name = line.slice(0, colon).trim().toLowerCase();
      headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
    }
  }
  return headers;
}

const BURST = 150;
const WARM_UP_HTTP_CASES = 600;

/**
 * Rounds of attack until `seconds` are up, then the memory check: the relay's RSS once the warm-up is over and at the
 * end, each read right after a full garbage collection, so the two figures compare what stays alive.
 */
async function attack(target: Target, seconds: number): Promise<void> {
  const deadline = performance.now() + seconds * 1000;
  const counters = { http: 0, handshakes: 0, sessions: 0 };
  let reported = performance.now();
  const startCount = target.report.counts.http;
  let warm: { kib: number; restarts: number } | undefined;
  if (target.family === "h") {
    // Every handshake mutation and every kind of frame at least once, however few rounds the time allows.
    while (counters.handshakes < HANDSHAKE_SWEEP && performance.now() < deadline)
      await target.handshakeCase(counters.handshakes++);
    while (counters.sessions < FRAME_SWEEP && performance.now() < deadline)
      await target.frameSession(counters.sessions++);
  }
  while (performance.now() < deadline) {
    await target.httpBurst(() => counters.http++, BURST, deadline);
    if (performance.now() >= deadline) break;
    if (target.family === "h") {
      for (let i = 0; i < 3; i++) await target.handshakeCase(counters.handshakes++);
      await target.frameSession(counters.sessions++);
    }
    // A restarted relay starts its memory over.
    if (warm !== undefined && warm.restarts !== target.report.restarts) warm = undefined;
    if (warm === undefined && target.report.counts.http - target.startedAtCount >= WARM_UP_HTTP_CASES) {
      await target.warmUp();
      const kib = await target.settledRssKiB();
      if (kib !== undefined) warm = { kib, restarts: target.report.restarts };
    }
    if (performance.now() - reported > 10_000) {
      reported = performance.now();
      const rss = target.relay.rssKiB();
      target.options.log(
        `  … ${target.report.counts.http} HTTP requests, ${target.report.failures.size} kinds of failure so far, relay RSS ${rss === undefined ? "?" : Math.round(rss / 1024)} MiB`,
      );
    }
  }
  await target.checkMetrics();
  if (warm === undefined || warm.restarts !== target.report.restarts) return;
  const endKiB = await target.settledRssKiB();
  if (endKiB === undefined) return;
  const warmKiB = warm.kib;
  const boundKiB = target.options.rssBoundKiB ?? RSS_GROWTH_BOUND_KIB;
  const growthKiB = endKiB - warmKiB;
  target.report.rss.push({ warmKiB, endKiB, growthKiB, boundKiB, requests: target.report.counts.http - startCount });
  if (growthKiB > boundKiB) {
    const detail = `resident memory grew by ${Math.round(growthKiB / 1024)} MiB after the warm-up (bound ${Math.round(boundKiB / 1024)} MiB)`;
    target.record([{ kind: "rss", detail }], "the whole run", () => ({
      caseId: "-",
      label: "the whole run",
      request: "-",
      outcome: `${Math.round(warmKiB / 1024)} MiB → ${Math.round(endKiB / 1024)} MiB`,
      relayLog: [],
    }));
  }
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const started = performance.now();
  const report: FuzzReport = {
    seed: options.seed,
    durationMs: 0,
    counts: { http: 0, handshakes: 0, frameSessions: 0, frames: 0 },
    byStatus: new Map(),
    byRoute: new Map(),
    failures: new Map(),
    rss: [],
    restarts: 0,
    slowest: [],
  };
  const target = new Target(report, options);
  try {
    await target.start();
    if (options.only !== undefined) await replay(target, options.only);
    else {
      options.log(`fuzzing ${target.relay.url} (pid ${target.relay.pid}, rate limits raised) for ${options.seconds} s`);
      await attack(target, options.seconds);
      if (options.defaultLimitSeconds > 0) {
        await target.useDefaultLimits();
        options.log(
          `fuzzing ${target.relay.url} (pid ${target.relay.pid}, default rate limits) for ${options.defaultLimitSeconds} s`,
        );
        await attack(target, options.defaultLimitSeconds);
      }
    }
  } finally {
    await target.stop();
  }
  report.durationMs = performance.now() - started;
  return report;
}

async function replay(target: Target, only: string): Promise<void> {
  const match = /^([hswdu])(\d+)$/.exec(only);
  if (!match) throw new Error(`--case takes h<n>, s<n>, w<n>, d<n> or u<n>, not ${only}`);
  const family = match[1] as CaseFamily;
  const index = Number(match[2]);
  if (family === "d") await target.useDefaultLimits();
  if (family === "h" || family === "d" || family === "u") {
    const test = family === "u" ? target.warmUpCase(index) : target.httpCase(index);
    target.options.log(
      `case ${test.id}: ${test.label} [${test.mutations.join(", ") || "unmutated"}]\n${describeRequest(test.request)}`,
    );
    const outcome = await target.runHttpCase(test);
    target.options.log(`answer: ${outcome ? describeOutcome(outcome) : "the relay died"}`);
    await target.checkHealth(`case ${test.id}`, () => [test]);
  } else if (family === "s") {
    await target.handshakeCase(index, true);
  } else {
    await target.frameSession(index, true);
  }
}
