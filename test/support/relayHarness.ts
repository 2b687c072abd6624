import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLocalBus } from "../../relay/src/bus/types";
import { type Clock, systemClock } from "../../relay/src/clock";
import { type Config, loadConfig } from "../../relay/src/config";
import { silentLogger, type Logger } from "../../relay/src/logger";
import { type RunningRelay, type StartOptions, openStore, startRelay } from "../../relay/src/main";
import type { InitializedWorkspace } from "../../relay/src/workspace/init";
import { initWorkspace } from "../../relay/src/workspace/init";

export interface TestRelay extends InitializedWorkspace {
  url: string;
  dataDir: string;
  config: Readonly<Config>;
  relay: RunningRelay;
  /** Calls the relay with the owner key unless `key` is given (`null` sends no Authorization header). */
  request(path: string, init?: RequestInit & { key?: string | null; json?: unknown }): Promise<Response>;
  /**
   * Resolves with the first value of `probe` other than undefined, asked now and again after each message the relay
   * puts on its bus (an attempt recorded, an agent changed, connected or gone, a message posted, events queued);
   * fails after `timeoutMs`. What the relay does by itself is awaited as the event it is, not polled for.
   */
  whenHeard<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

/**
 * A real relay on 127.0.0.1 port 0 over a real SQLite file in a fresh temporary data folder.
 * `reuse` restarts on the data folder and workspace of an earlier relay (stopped with `relay.relay.close()`, which
 * keeps the folder), as after a restart of the process; closing the new one removes the folder.
 */
export async function startTestRelay(
  options: {
    env?: Record<string, string>;
    clock?: Clock;
    logger?: Logger;
    slug?: string;
    reuse?: Pick<TestRelay, "dataDir" | keyof InitializedWorkspace>;
    /** Serves a workspace another relay made on the same database (TAB_RELAY_DATABASE_URL), from a data folder of its own. */
    join?: InitializedWorkspace;
    /** Timings a test shortens rather than waits out. */
    timings?: Pick<StartOptions, "liveCheckMs" | "engineSeed">;
    /** Starts the engine child (StartOptions.engineFork). */
    engineFork?: StartOptions["engineFork"];
  } = {},
): Promise<TestRelay> {
  const dataDir = options.reuse?.dataDir ?? mkdtempSync(join(tmpdir(), "tab-relay-test-"));
  const config = loadConfig({
    TAB_RELAY_DATA: dataDir,
    TAB_RELAY_PORT: "0",
    TAB_RELAY_LOG_LEVEL: "silent",
    ...options.env,
  });
  const store = await openStore(config);
  const clock = options.clock ?? systemClock;
  // A relay alone on its database talks to itself over a local bus; the test listens in on it.
  const bus = config.databaseUrl === undefined ? createLocalBus() : undefined;
  const hearing = new EventEmitter();
  let heard = 0;
  bus?.subscribe(() => {
    heard++;
    hearing.emit("message");
  });
  const known = options.reuse ?? options.join;
  const init: InitializedWorkspace = known
    ? { workspace: known.workspace, user: known.user, apiKey: known.apiKey }
    : await initWorkspace(store, clock, { slug: options.slug ?? "acme", ownerName: "Olive Owner" });
  const relay = await startRelay(config, {
    store,
    clock,
    logger: options.logger ?? silentLogger,
    ...(bus === undefined ? {} : { bus }),
    ...options.timings,
    ...(options.engineFork ? { engineFork: options.engineFork } : {}),
  });
  const request: TestRelay["request"] = (path, init_ = {}) => {
    const { key, json, headers, ...rest } = init_;
    const h = new Headers(headers);
    const token = key === undefined ? init.apiKey : key;
    if (token !== null) h.set("Authorization", `Bearer ${token}`);
    if (json !== undefined) h.set("Content-Type", "application/json");
    return fetch(relay.url + path, {
      ...rest,
      headers: h,
      ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
    });
  };
  const nextMessage = (timeoutMs: number, what: string) =>
    new Promise<void>((resolve, reject) => {
      const onMessage = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(
        () => {
          hearing.off("message", onMessage);
          reject(new Error(`timed out waiting for ${what}`));
        },
        Math.max(0, timeoutMs),
      );
      hearing.once("message", onMessage);
    });
  const whenHeard: TestRelay["whenHeard"] = async (probe, what, timeoutMs = 5000) => {
    if (bus === undefined) throw new Error("whenHeard needs a relay alone on its database (a local bus)");
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const before = heard;
      const value = await probe();
      if (value !== undefined) return value;
      // A message heard while the probe ran may be the one it waited for: ask again at once.
      if (heard === before) await nextMessage(deadline - performance.now(), what);
    }
  };
  return {
    ...init,
    url: relay.url,
    dataDir,
    config,
    relay,
    request,
    whenHeard,
    async close() {
      await relay.close(0);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The error envelope of a failed response, checked to hold nothing but `error`. */
export async function errorOf(response: Response): Promise<{ code: string; message: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  if (Object.keys(body).join() !== "error") throw new Error(`not an error envelope: ${JSON.stringify(body)}`);
  return body.error;
}

/** The `data` of an answer that has the expected status; the body is in the failure when it has another. */
export async function dataOf<T>(response: Response, status: number): Promise<T> {
  const text = await response.text();
  assert.equal(response.status, status, `expected ${status}, got ${response.status}: ${text}`);
  return (JSON.parse(text) as { data: T }).data;
}

/** Asserts the status, the error code and that the message names what went wrong. */
export async function expectError(response: Response, status: number, code: string, names?: RegExp): Promise<void> {
  assert.equal(response.status, status, `expected ${status} ${code}`);
  const error = await errorOf(response);
  assert.equal(error.code, code);
  if (names) assert.match(error.message, names);
}

/** A minimal valid completion body; `context` overrides tab_context fields. */
export function completionBody(context: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    model: "tab-v1",
    tab_context: {
      surface: "code",
      workspace_slug: "acme",
      entity_id: "src/add.ts",
      document_type: "plaintext",
      active_text_before_cursor: "function add(a, b) {\n  return a + b;\n}\n\nfunction add(a, b) {",
      active_text_after_cursor: "",
      code_language: "typescript",
      ...context,
    },
    ...extra,
  };
}

/**
 * A time the test moves by hand, for what the relay decides by the time (rate-limit windows, expiry). Its timers are
 * the system's: what the relay waits for (retries, heartbeats) still waits in real time, measured against this time.
 */
export function fakeClock(start: number): Clock & { advance(ms: number): void; set(ms: number): void } {
  let now = start;
  return {
    ...systemClock,
    now: () => now,
    advance(ms) {
      now += ms;
    },
    set(ms) {
      now = ms;
    },
  };
}
