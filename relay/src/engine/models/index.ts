/**
 * Models by name: what `--model` and `tab-relay models list|pull|rm` stand on. The engine calls one function:
 *
 * ```ts
 * const { path, entry } = await resolveModel(spec, {
 *   dataDir,                 // the data folder; models live in DATA/models/
 *   allowUnverified,         // --allow-unverified: let entries whose sha256 is not confirmed download
 *   hubUrl,                  // TAB_RELAY_MODEL_HUB_URL, else https://huggingface.co
 *   registry,                // loadRegistry(TAB_RELAY_MODEL_REGISTRY file) or the built-in MODEL_REGISTRY
 *   get,                     // createModelsHttpGet(config.models.proxy): undici, HTTPS_PROXY honoured; close() it after
 *   clock: pullClock,        // the system clock, with timers that keep the process alive while a pull waits
 *   proxyProblems,           // config.models.proxyProblems: a download is refused while a proxy variable is unusable
 *   onEvent,                 // progress, "waiting for another pull", "verifying": progressReporter(name, stderr)
 *   signal,                  // stops the pull (it resumes next time)
 * });
 * ```
 *
 * - A spec that names a file (it holds a `/` or `\`, or ends in `.gguf`; or it is no registry name and a file of
 *   that name exists) comes back as its absolute path, untouched and unhashed: `entry` is undefined. A missing
 *   file is an `unknown_model` error.
 * - A registry name (any case) comes back as `DATA/models/<file>` with its entry. A file already there and checked
 *   is used at once; one placed by hand is hashed first (a `verifying` event), and a mismatch is refused and kept.
 *   Otherwise it is pulled: resumable, verified, merged with any other pull of it (downloads.ts, download.ts).
 * - An unknown name is an `unknown_model` error that lists the known names.
 * - Every failure is a {@link ModelError} whose message says what to do; with no network it fails at once and says
 *   where to put the file by hand, under which name, with which sha256 ({@link manualInstructions}).
 *
 * Nothing here loads node-llama-cpp: the engine gets a path and opens it itself.
 */
import { readFile, stat } from "node:fs/promises";
import { processAlive } from "../../dataFolder";
import { isAbsolute, resolve } from "node:path";
import { type Clock, systemClock } from "../../clock";
import type { DownloadOptions, DownloadTarget } from "./download";
import { type PullEvent, ModelDownloads, lockHolder } from "./downloads";
import { ModelError } from "./errors";
import { DEFAULT_HUB_URL, MODEL_REGISTRY, type ModelEntry, buildRegistry, fileUrl, findModel } from "./registry";
import {
  type LocalState,
  ensureModelsDir,
  fileSize,
  freeBytes as statfsFreeBytes,
  hashFile,
  isMarkedVerified,
  localState,
  markVerified,
  modelPaths,
  removeModelFiles,
} from "./store";
import type { HttpGet } from "./transport";

export { ModelError, type ModelErrorReason } from "./errors";
export { type PullEvent } from "./downloads";
export { type ModelEntry, DEFAULT_HUB_URL, MODEL_REGISTRY, fileUrl, findModel } from "./registry";
export { type HttpGet, type ProxySettings, createHttpGet, createModelsHttpGet, proxyFor } from "./transport";
export { progressReporter } from "./progress";

/**
 * The system clock with timers that keep the process alive. The relay's own timers are unref'd because its server
 * keeps it running; a pull waiting out a retry or another process's lock, before anything listens, has nothing else
 * to (with unref'd timers Node ends it with exit code 13, an unsettled top-level await).
 */
export const pullClock: Clock = {
  now: () => systemClock.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface ModelOptions {
  dataDir: string;
  allowUnverified?: boolean;
  hubUrl?: string;
  registry?: readonly ModelEntry[];
  get: HttpGet;
  clock: Clock;
  /** In [0, 1): retry jitter. */
  random?: () => number;
  /** Free bytes where a directory lives; statfs by default. */
  freeBytes?: (dir: string) => Promise<number>;
  onEvent?: (event: PullEvent) => void;
  signal?: AbortSignal;
  /** The transfer's tuning (stall watchdog, retries); tests shorten it. */
  download?: Omit<DownloadOptions, "onProgress" | "signal">;
  /** Cross-process lock polling; tests shorten it. */
  lockPollMs?: number;
  /** config.models.proxyProblems: a download is refused while there are any, naming them. */
  proxyProblems?: readonly string[];
  pid?: number;
}

export interface ResolvedModel {
  /** Absolute. */
  path: string;
  /** Undefined when the spec was a file path. */
  entry?: ModelEntry;
}

/** The registry with an operator's file (TAB_RELAY_MODEL_REGISTRY) added, read once at start. */
export async function loadRegistry(file: string | undefined): Promise<readonly ModelEntry[]> {
  if (file === undefined) return MODEL_REGISTRY;
  let text: string;
  try {
    const info = await stat(file);
    if (info.size > 1024 * 1024) throw new Error("larger than 1 MB");
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new ModelError(
      "unknown_model",
      `the model registry file ${file} could not be read: ${(error as Error).message}`,
    );
  }
  try {
    return buildRegistry(text, file);
  } catch (error) {
    throw new ModelError("unknown_model", (error as Error).message);
  }
}

function looksLikePath(spec: string): boolean {
  return spec.includes("/") || spec.includes("\\") || /\.gguf$/i.test(spec) || isAbsolute(spec);
}

function unknownModel(spec: string, registry: readonly ModelEntry[]): ModelError {
  return new ModelError(
    "unknown_model",
    `unknown model "${spec}". Known models: ${registry.map((entry) => entry.name).join(", ")}. Or give the path of a .gguf file (./models/my-model.gguf)`,
  );
}

/** The entry for `name`, or an error listing the known names. */
export function entryFor(name: string, registry: readonly ModelEntry[] = MODEL_REGISTRY): ModelEntry {
  const entry = findModel(registry, name);
  if (entry === undefined) throw unknownModel(name, registry);
  return entry;
}

/** What to do when the hub cannot be reached: the URL, the name and place, the sha256 and size to check. */
export function manualInstructions(entry: ModelEntry, dataDir: string, hubUrl: string): string {
  const paths = modelPaths(resolve(dataDir), entry.file);
  return [
    `To place ${entry.name} by hand, on a machine that can reach the hub:`,
    `  1. download  ${fileUrl(entry, hubUrl)}`,
    `  2. check     sha256sum ${entry.file}   must print ${entry.sha256}` +
      ` (${entry.bytesExact ? `${entry.bytes} bytes` : `about ${entry.bytes} bytes`})`,
    `  3. put it at ${paths.file}`,
    `Then run the same command again: the file is checked once and used. Behind a proxy set HTTPS_PROXY; to use a mirror of the hub set TAB_RELAY_MODEL_HUB_URL.`,
  ].join("\n");
}

function target(entry: ModelEntry, dataDir: string, hubUrl: string): DownloadTarget {
  return {
    url: fileUrl(entry, hubUrl),
    paths: modelPaths(dataDir, entry.file),
    sha256: entry.sha256,
    bytes: entry.bytes,
    bytesExact: entry.bytesExact,
  };
}

/**
 * Makes sure `DATA/models/<file>` holds the entry's verified file, downloading what is missing. Returns its path and
 * whether anything was downloaded.
 */
export async function pullModel(
  entry: ModelEntry,
  options: ModelOptions,
): Promise<{ path: string; downloaded: boolean }> {
  const hubUrl = options.hubUrl ?? DEFAULT_HUB_URL;
  const paths = modelPaths(options.dataDir, entry.file);
  const path = resolve(paths.file);
  if (await isMarkedVerified(paths, entry.sha256)) return { path, downloaded: false };
  if ((await fileSize(paths.file)) !== undefined) {
    // Placed by hand (or its mark is stale): check it once, and never delete what someone put there.
    options.onEvent?.({ kind: "verifying", path });
    const digest = (await hashFile(paths.file)).digest("hex");
    if (digest !== entry.sha256) {
      throw new ModelError(
        "checksum_mismatch",
        `${path} has sha256 ${digest}, not ${entry.sha256} as ${entry.name} should: it was left in place. Remove it (tab-relay models rm ${entry.name}) and pull again, or put the right file there`,
      );
    }
    await markVerified(paths, entry.sha256);
    return { path, downloaded: false };
  }
  if (!entry.verified && options.allowUnverified !== true) {
    throw new ModelError(
      "unverified",
      `${entry.name}'s sha256 could not be confirmed at a source (${entry.note ?? "see its sources in tab-relay models list --json"}), so it is not downloaded by default. Pull it with --allow-unverified to accept the registry's sha256, or place a file you trust by hand:\n${manualInstructions(entry, options.dataDir, hubUrl)}`,
    );
  }
  if (options.proxyProblems !== undefined && options.proxyProblems.length > 0) {
    throw new ModelError(
      "misconfigured",
      `${entry.name} is not here and cannot be downloaded until the proxy setting is fixed: ${options.proxyProblems.join("; ")}`,
    );
  }
  await ensureModelsDir(options.dataDir);
  const downloads = new ModelDownloads({
    get: options.get,
    clock: options.clock,
    random: options.random ?? Math.random,
    freeBytes: options.freeBytes ?? statfsFreeBytes,
    pid: options.pid ?? process.pid,
    ...(options.download ? { download: options.download } : {}),
    ...(options.lockPollMs === undefined ? {} : { lockPollMs: options.lockPollMs }),
  });
  let downloaded: boolean;
  try {
    downloaded = await downloads.pull(target(entry, options.dataDir, hubUrl), {
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    if (error instanceof ModelError && error.reason === "offline") {
      throw new ModelError(
        "offline",
        `could not download ${entry.name}: ${error.message} at ${new URL(hubUrl).host}.\n${manualInstructions(entry, options.dataDir, hubUrl)}`,
        { cause: error },
      );
    }
    if (error instanceof ModelError) {
      throw new ModelError(error.reason, `could not download ${entry.name}: ${error.message}`, { cause: error });
    }
    throw error;
  }
  return { path, downloaded };
}

/** See the top of this module. */
export async function resolveModel(spec: string, options: ModelOptions): Promise<ResolvedModel> {
  const registry = options.registry ?? MODEL_REGISTRY;
  const trimmed = spec.trim();
  if (trimmed === "") throw unknownModel(spec, registry);
  const entry = looksLikePath(trimmed) ? undefined : findModel(registry, trimmed);
  if (entry === undefined) {
    const path = resolve(trimmed);
    const size = await fileSize(path);
    if (size !== undefined) return { path };
    if (looksLikePath(trimmed))
      throw new ModelError(
        "unknown_model",
        `no model file at ${path}: give the path of a .gguf file, or a model name (tab-relay models list)`,
      );
    throw unknownModel(trimmed, registry);
  }
  const { path } = await pullModel(entry, options);
  return { path, entry };
}

export interface ListedModel {
  entry: ModelEntry;
  state: LocalState;
  path: string;
}

/** Every registry entry with what the data folder holds of it (nothing is hashed). */
export async function listModels(
  dataDir: string,
  registry: readonly ModelEntry[] = MODEL_REGISTRY,
): Promise<ListedModel[]> {
  return Promise.all(
    registry.map(async (entry) => ({
      entry,
      state: await localState(dataDir, entry),
      path: resolve(modelPaths(dataDir, entry.file).file),
    })),
  );
}

/**
 * Removes a model's file and partial download; returns the bytes freed (0 when there was nothing). A pull under way
 * (its lock held by a live process) is not pulled out from under it.
 */
export async function removeModel(entry: ModelEntry, dataDir: string): Promise<number> {
  const paths = modelPaths(dataDir, entry.file);
  const holder = lockHolder(paths.lock);
  if (holder !== undefined && processAlive(holder))
    throw new ModelError("busy", `${entry.name} is being pulled by process ${holder}: stop that pull first`);
  return removeModelFiles(paths);
}
