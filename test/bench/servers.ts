import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { StandInBehaviour } from "../support/upstreamStandIn";
import type { StreamTarget } from "./load";
import { type ChildServer, spawnServer } from "./processes";

/** Where the benchmark runs from and what it may pass on to the servers it starts. */
export interface ServerEnvironment {
  root: string;
  /** The benchmark's own environment without any TAB_RELAY_* setting, so the caller's shell cannot skew a run. */
  baseEnv: NodeJS.ProcessEnv;
}

export interface RunningUpstream {
  /** Base URL including `/v1`. */
  url: string;
  server: ChildServer;
}

export interface RunningProxy {
  url: string;
  server: ChildServer;
}

export interface BenchRelay {
  url: string;
  apiKey: string;
  workspaceSlug: string;
  dataDir: string;
  server: ChildServer;
  /** Stops the process and deletes its data folder. */
  stop(): Promise<void>;
}

/** Calls the relay's API with its owner key, for a section's setup; fails on any answer but 2xx. */
export async function relayApi<T>(
  relay: Pick<BenchRelay, "url" | "apiKey">,
  method: "POST" | "PATCH",
  path: string,
  json: unknown,
): Promise<T> {
  const response = await fetch(`${relay.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${relay.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(json),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { data: T }).data;
}

/** The cursor in src/cart.ts that a section asks the relay to complete, and the snippets the extension would send. */
export interface CartCursor {
  before: string;
  after: string;
  surroundingContext?: string;
}

/** The streamed Tab request the extension sends for `cursor`, as a body. */
export function cartCompletionBody(workspaceSlug: string, cursor: CartCursor): string {
  return JSON.stringify({
    model: "tab-v1",
    stream: true,
    tab_context: {
      surface: "code",
      workspace_slug: workspaceSlug,
      entity_id: "src/cart.ts",
      document_type: "plaintext",
      code_language: "typescript",
      file_path: "src/cart.ts",
      active_text_before_cursor: cursor.before,
      active_text_after_cursor: cursor.after,
      ...(cursor.surroundingContext === undefined ? {} : { surrounding_context: cursor.surroundingContext }),
    },
  });
}

/** That request, sent to `relay` with its owner key. */
export function cartCompletionTarget(
  relay: Pick<BenchRelay, "url" | "apiKey" | "workspaceSlug">,
  name: string,
  cursor: CartCursor,
): StreamTarget {
  return {
    name,
    url: `${relay.url}/api/v1/tab/chat/completions`,
    headers: { authorization: `Bearer ${relay.apiKey}` },
    body: cartCompletionBody(relay.workspaceSlug, cursor),
  };
}

export function cleanEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith("TAB_RELAY_")));
}

const JSON_URL = /^\{"url":"([^"]+)"\}$/m;

export async function startUpstream(env: ServerEnvironment, behaviour: StandInBehaviour): Promise<RunningUpstream> {
  const { server, match } = await spawnServer({
    name: "upstream stand-in",
    args: ["--import", "tsx", join(env.root, "test/bench/upstreamProcess.ts"), JSON.stringify(behaviour)],
    cwd: env.root,
    env: env.baseEnv,
    ready: { stream: "stdout", pattern: JSON_URL },
    lifeline: true,
  });
  return { url: match, server };
}

/**
 * The pass-through proxy in front of `origin` (scheme, host and port; paths are forwarded unchanged), on bare
 * `node:http` (the floor) or as the only middleware of an express 5 app.
 */
export async function startProxy(
  env: ServerEnvironment,
  origin: string,
  framework: "node:http" | "express" = "node:http",
): Promise<RunningProxy> {
  const { server, match } = await spawnServer({
    name: `${framework} pass-through proxy`,
    args: [
      "--import",
      "tsx",
      join(env.root, "test/bench/passthroughProxy.ts"),
      origin,
      ...(framework === "express" ? ["express"] : []),
    ],
    cwd: env.root,
    env: env.baseEnv,
    ready: { stream: "stdout", pattern: JSON_URL },
    lifeline: true,
  });
  return { url: match, server };
}

export interface RelayOptions {
  /** TAB_RELAY_* settings for `serve`; data folder, host and port are set here. */
  settings: Readonly<Record<string, string>>;
  workspaceSlug?: string;
  /** Writes a V8 CPU profile of the relay into this folder when it stops. */
  cpuProfileDir?: string | undefined;
}

/** `tab-relay init` then `tab-relay serve` on port 0, both as real processes of the built CLI. */
export async function startBenchRelay(env: ServerEnvironment, options: RelayOptions): Promise<BenchRelay> {
  const bin = join(env.root, "relay/bin/tab-relay.js");
  const dataDir = mkdtempSync(join(tmpdir(), "tab-relay-bench-"));
  const slug = options.workspaceSlug ?? "acme";
  const init = spawnSync(
    process.execPath,
    [bin, "init", "--data", dataDir, "--workspace", slug, "--owner", "Bench", "--json"],
    {
      cwd: env.root,
      env: env.baseEnv,
      encoding: "utf8",
      timeout: 30_000,
    },
  );
  if (init.status !== 0) {
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`tab-relay init failed (${init.status}): ${init.stderr}`);
  }
  const { api_key: apiKey } = JSON.parse(init.stdout) as { api_key: string };

  const profiling = options.cpuProfileDir ? ["--cpu-prof", "--cpu-prof-dir", options.cpuProfileDir] : [];
  if (options.cpuProfileDir) mkdirSync(options.cpuProfileDir, { recursive: true });
  let server: ChildServer;
  let url: string;
  try {
    ({ server, match: url } = await spawnServer({
      name: "tab-relay",
      args: [
        ...profiling,
        "--import",
        pathToFileURL(join(env.root, "test/bench/lifeline.mjs")).href,
        bin,
        "serve",
        "--data",
        dataDir,
        "--port",
        "0",
        "--host",
        "127.0.0.1",
      ],
      cwd: env.root,
      env: { ...env.baseEnv, ...options.settings },
      ready: { stream: "stderr", pattern: /serving on (http:\/\/\S+)/ },
      lifeline: true,
    }));
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    url,
    apiKey,
    workspaceSlug: slug,
    dataDir,
    server,
    async stop() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
