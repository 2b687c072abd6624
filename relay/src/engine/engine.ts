/**
 * The embedded engine as the relay sees it: a supervised child process (child/main.ts) behind the ordinary
 * {@link ModelProvider} contract, with a bounded queue in front.
 *
 * States:
 *
 * ```
 *   starting ──ready──▶ ready ──child exits──▶ restarting ──delay──▶ starting
 *      │                                          ▲                     │
 *      └──load failed (first start: start() rejects)                    └──load failed──▶ restarting
 *   any ──close()──▶ stopped
 * ```
 *
 * - The relay's event loop only passes messages: inference runs in the child, and text arrives as IPC messages (a
 *   token each, or several joined when they come faster than child/outbox.ts's TEXT_GAP_MS), so no request ever
 *   waits on another's computation here.
 * - At most `sequences` completions run in the child at once (one per context sequence); up to `queue` more wait
 *   here; beyond that a request is refused at once with 429 and Retry-After, never left waiting without bound.
 * - A child that exits (a llama.cpp abort, an out-of-memory kill, a signal) fails the completions it was running
 *   (a stream gets its `error` event) and the queued ones, and is started again after restartPolicy's delay; until
 *   it is ready, completions answer 503 with Retry-After.
 * - A client that goes away aborts its completion in the child at once, which frees its sequence.
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { RelayError } from "@tab-relay/shared";
import type { Clock } from "../clock";
import type { Logger } from "../logger";
import type { AbortLike } from "../aborter";
import type { CompletionInput, ModelProvider, TextSink } from "../providers/types";
import { contextSnippets, pathCommentContext } from "../providers/upstream/context";
import type { ChildMessage, CompletionStats, EngineInfo, ParentMessage, PromptInput } from "./protocol";
import { restartDelay } from "./restartPolicy";

export interface EngineSettings {
  modelPath: string;
  /** node-llama-cpp's entry module URL (install.ts engineModuleUrl). */
  moduleUrl: string;
  sequences: number;
  queue: number;
  threads: number;
  contextSize: number;
  gpu: "auto" | "off";
  /** Nice steps the child runs below the relay (child/priority.ts); none when unset. */
  nice?: number;
  /**
   * A FIM template with `{prefix}`, `{suffix}` and `{context}` (templates.ts's `templateText` for a family), used
   * instead of the FIM tokens in the model's metadata; a model without them is refused unless one is set.
   */
  fimTemplate?: string;
}

export type EngineState = "starting" | "ready" | "restarting" | "stopped";

/** What the engine reports for metrics and the benchmark. */
export interface EngineObserver {
  completed?(stats: CompletionStats): void;
  restarted?(): void;
}

export interface EngineStatus {
  state: EngineState;
  info: EngineInfo | undefined;
  running: number;
  queued: number;
  restarts: number;
  /** Why the engine last stopped or failed to load. */
  lastProblem: string | undefined;
  /** When a restart is due (clock ms), while restarting. */
  restartAt: number | undefined;
}

export interface Engine {
  provider: ModelProvider;
  status(): EngineStatus;
  /** Resolves once the first child is ready; rejects with its load failure. */
  started: Promise<EngineInfo>;
  /** The child's pid, while it runs (tests kill it). */
  pid(): number | undefined;
  close(): Promise<void>;
}

export class EngineLoadError extends Error {
  override name = "EngineLoadError";
  constructor(
    readonly reason: Extract<ChildMessage, { type: "load-failed" }>["reason"] | "not_installed",
    message: string,
  ) {
    super(message);
  }
}

/** Starts the child with these settings added to `base`, the relay's own environment. */
export type ForkChild = (env: Record<string, string>) => ChildProcess;

/** The child's entry: the bundle beside dist/cli.js, or the TypeScript source run through tsx (tests, `tsx`). */
export const forkEngineChild =
  (base: Readonly<Record<string, string | undefined>>): ForkChild =>
  (env) => {
    const bundled = import.meta.url.endsWith(".js");
    const entry = fileURLToPath(new URL(bundled ? "./engineChild.js" : "./child/main.ts", import.meta.url));
    return fork(entry, [], {
      env: { ...base, ...env },
      execArgv: bundled ? [] : ["--import", "tsx"],
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      serialization: "json",
    });
  };

/** How many lines of the child's stderr are kept, to say why it stopped. */
const STDERR_LINES = 40;

interface Job {
  id: number;
  input: CompletionInput;
  onText: TextSink;
  signal: AbortLike;
  resolve(): void;
  reject(error: unknown): void;
  /** Sent to the child (else queued here). */
  sent: boolean;
  cleanup(): void;
}

/** The prompt's text from the editor context: the cursor's file and the ranked snippets of others. */
export function promptInput(input: CompletionInput): PromptInput {
  const context = input.context;
  const snippets = contextSnippets(context);
  const files = snippets
    .filter((snippet) => snippet.path !== undefined)
    .map((snippet) => ({ path: snippet.path!, text: snippet.text }));
  return {
    prefix: context.active_text_before_cursor,
    suffix: context.active_text_after_cursor ?? "",
    files,
    path: context.file_path,
    repoName: context.workspace_slug,
    contextText: pathCommentContext(snippets, context),
  };
}

export function createEngine(deps: {
  settings: EngineSettings;
  logger: Logger;
  clock: Clock;
  fork: ForkChild;
  observer?: EngineObserver;
  /** Fixed sampling seed (tests); random otherwise. */
  seed?: number;
}): Engine {
  const { settings, logger, clock } = deps;
  const spawnChild = deps.fork;
  let state: EngineState = "starting";
  let child: ChildProcess | undefined;
  let info: EngineInfo | undefined;
  let failuresInRow = 0;
  let startedAt = 0;
  let restartAt: number | undefined;
  let restartTimer: unknown;
  let restarts = 0;
  let lastProblem: string | undefined;
  let nextId = 1;
  const stderr: string[] = [];
  const jobs = new Map<number, Job>();
  const queue: Job[] = [];
  let running = 0;
  let firstStart = true;
  let resolveStarted!: (info: EngineInfo) => void;
  let rejectStarted!: (error: Error) => void;
  const started = new Promise<EngineInfo>((resolve, reject) => {
    resolveStarted = resolve;
    rejectStarted = reject;
  });

  function send(message: ParentMessage): void {
    if (child?.connected) child.send(message);
  }

  function pump(): void {
    while (state === "ready" && running < settings.sequences && queue.length > 0) {
      const job = queue.shift()!;
      job.sent = true;
      running++;
      send({
        type: "complete",
        id: job.id,
        prompt: promptInput(job.input),
        maxTokens: job.input.maxTokens,
        temperature: job.input.temperature,
        ...(deps.seed === undefined ? {} : { seed: deps.seed }),
      });
    }
  }

  function finish(job: Job, error?: unknown): void {
    if (!jobs.delete(job.id)) return;
    job.cleanup();
    if (job.sent) running--;
    if (error === undefined) job.resolve();
    else job.reject(error);
    pump();
  }

  function retryAfterSeconds(): string {
    const wait = restartAt === undefined ? 1 : Math.max(1, Math.ceil((restartAt - clock.now()) / 1000) + 1);
    return String(wait);
  }

  function unavailable(): RelayError {
    const why =
      state === "stopped"
        ? "the embedded engine has stopped"
        : `the embedded engine is ${state === "starting" ? "loading its model" : "restarting"}${lastProblem ? ` (it stopped: ${lastProblem})` : ""}`;
    return new RelayError("SERVICE_UNAVAILABLE", `${why}; retry shortly`, {
      headers: { "Retry-After": retryAfterSeconds() },
    });
  }

  function onMessage(message: ChildMessage): void {
    switch (message.type) {
      case "ready":
        state = "ready";
        info = message.info;
        startedAt = clock.now();
        restartAt = undefined;
        if (firstStart) {
          firstStart = false;
          resolveStarted(message.info);
        }
        logger.info("engine ready", {
          model: message.info.model,
          binary: message.info.binary,
          load_ms: message.info.loadMs,
          sequences: message.info.sequences,
          threads: message.info.threads,
          ...("nice" in message.info.priority ? { nice: message.info.priority.nice } : {}),
        });
        if ("problem" in message.info.priority)
          logger.warn("engine runs at the relay's priority: it could not lower its own", {
            error: message.info.priority.problem,
          });
        pump();
        return;
      case "load-failed":
        lastProblem = message.message;
        if (firstStart) {
          firstStart = false;
          state = "stopped";
          rejectStarted(new EngineLoadError(message.reason, message.message));
          child?.kill();
          return;
        }
        logger.error("engine could not load its model", { error: message.message });
        child?.kill();
        return;
      case "text": {
        const job = jobs.get(message.id);
        if (job === undefined || job.signal.aborted) return;
        if (job.onText(message.text) === false) send({ type: "abort", id: job.id });
        return;
      }
      case "done": {
        deps.observer?.completed?.(message.stats);
        const job = jobs.get(message.id);
        if (job) finish(job);
        return;
      }
      case "failed": {
        const job = jobs.get(message.id);
        if (job) finish(job, new RelayError("UPSTREAM_ERROR", `The embedded engine failed: ${message.message}`));
        return;
      }
    }
  }

  function spawn(): void {
    state = "starting";
    stderr.length = 0;
    const env: Record<string, string> = {
      TAB_RELAY_ENGINE_MODEL: settings.modelPath,
      TAB_RELAY_ENGINE_MODULE: settings.moduleUrl,
      TAB_RELAY_ENGINE_SEQUENCES: String(settings.sequences),
      TAB_RELAY_ENGINE_THREADS: String(settings.threads),
      TAB_RELAY_ENGINE_CONTEXT: String(settings.contextSize),
      TAB_RELAY_ENGINE_GPU: settings.gpu,
      ...(settings.nice === undefined ? {} : { TAB_RELAY_ENGINE_NICE: String(settings.nice) }),
      ...(settings.fimTemplate === undefined ? {} : { TAB_RELAY_ENGINE_FIM_TEMPLATE: settings.fimTemplate }),
    };
    const current = spawnChild(env);
    child = current;
    let rest = "";
    current.stderr?.on("data", (chunk: Buffer) => {
      rest += chunk.toString("utf8");
      const lines = rest.split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) {
        stderr.push(line);
        if (stderr.length > STDERR_LINES) stderr.shift();
      }
    });
    current.on("message", (message: ChildMessage) => {
      if (child === current) onMessage(message);
    });
    current.once("error", (error) => logger.error("engine process error", { error }));
    current.once("exit", (code, signal) => {
      if (child !== current) return;
      child = undefined;
      onExit(code, signal);
    });
  }

  function onExit(code: number | null, signal: NodeJS.Signals | null): void {
    const wasReady = state === "ready";
    const how = signal ? `killed by ${signal}` : `exited with code ${code}`;
    const tail = stderr
      .filter((line) => line.trim() !== "")
      .slice(-3)
      .join(" | ");
    if (state !== "stopped")
      lastProblem = wasReady || lastProblem === undefined ? `${how}${tail ? `: ${tail}` : ""}` : lastProblem;
    // The running completions are lost with the child; the waiting ones would wait out the restart.
    const failure =
      state === "stopped"
        ? new RelayError("SERVICE_UNAVAILABLE", "the embedded engine has stopped")
        : new RelayError("UPSTREAM_ERROR", `The embedded engine stopped mid-completion (${how}); it is restarting`);
    for (const job of [...jobs.values()]) finish(job, job.sent ? failure : unavailable());
    if (state === "stopped") return;
    if (firstStart) {
      firstStart = false;
      state = "stopped";
      rejectStarted(
        new EngineLoadError("other", `the engine process ${how} while loading the model${tail ? `: ${tail}` : ""}`),
      );
      return;
    }
    const next = restartDelay(failuresInRow, wasReady ? clock.now() - startedAt : 0);
    failuresInRow = next.failuresInRow;
    state = "restarting";
    restarts++;
    deps.observer?.restarted?.();
    restartAt = clock.now() + next.delayMs;
    logger.error("engine stopped; restarting", { how, restart_in_ms: next.delayMs, stderr: tail });
    restartTimer = clock.setTimeout(() => {
      restartTimer = undefined;
      if (state === "restarting") spawn();
    }, next.delayMs);
  }

  const provider: ModelProvider = {
    name: "engine",
    fillInTheMiddle: true,
    prepare() {
      if (state === "ready") send({ type: "wake" });
    },
    complete(input, signal, onText) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the caller's reason, passed on as it is
      if (signal.aborted) return Promise.reject(signal.reason);
      if (state !== "ready") return Promise.reject(unavailable());
      if (running >= settings.sequences && queue.length >= settings.queue) {
        return Promise.reject(
          new RelayError(
            "RATE_LIMIT_EXCEEDED",
            `the embedded engine is busy: ${running} completions running and ${queue.length} waiting (TAB_RELAY_ENGINE_SEQUENCES, TAB_RELAY_ENGINE_QUEUE); retry shortly`,
            { headers: { "Retry-After": "1" } },
          ),
        );
      }
      return new Promise<void>((resolve, reject) => {
        const id = nextId++;
        const onAbort = () => {
          const job = jobs.get(id);
          if (job === undefined) return;
          const reason: unknown = signal.reason;
          if (job.sent) {
            // The child stops within milliseconds and then reports `done`, which frees the sequence; the caller
            // does not wait for that.
            send({ type: "abort", id });
            job.cleanup();
            job.resolve = () => {};
            job.reject = () => {};
            reject(reason instanceof Error ? reason : new Error(String(reason)));
            return;
          }
          queue.splice(queue.indexOf(job), 1);
          finish(job, signal.reason);
        };
        const job: Job = {
          id,
          input,
          onText,
          signal,
          resolve,
          reject,
          sent: false,
          cleanup: () => signal.removeEventListener("abort", onAbort),
        };
        signal.addEventListener("abort", onAbort, { once: true });
        jobs.set(id, job);
        queue.push(job);
        pump();
      });
    },
  };

  spawn();

  return {
    provider,
    started,
    pid: () => child?.pid,
    status: () => ({
      state,
      info,
      running,
      queued: queue.length,
      restarts,
      lastProblem,
      restartAt,
    }),
    async close() {
      state = "stopped";
      if (restartTimer !== undefined) clock.clearTimeout(restartTimer);
      const current = child;
      if (current === undefined) return;
      const exited = new Promise<void>((resolve) => current.once("exit", () => resolve()));
      current.kill();
      const timer = setTimeout(() => current.kill("SIGKILL"), 2000);
      await exited;
      clearTimeout(timer);
    },
  };
}
