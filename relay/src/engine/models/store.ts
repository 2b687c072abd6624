import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, readFile, rm, stat, statfs, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import type { ModelEntry } from "./registry";

/**
 * The models in a data folder: `DATA/models/<file>` once verified, with these beside it:
 * - `<file>.part`: the bytes received so far;
 * - `<file>.part.json`: what they are a part of (url, sha256, length, the hub's ETag), so a resume never appends to
 *   the wrong file;
 * - `<file>.verified.json`: the sha256 the file was checked against, with its size and mtime, so a start does not
 *   hash gigabytes again. A file placed by hand has none until its first use checks it;
 * - `<file>.lock`: the process id of the pull under way.
 */
export const MODELS_FOLDER = "models";

export interface ModelPaths {
  dir: string;
  file: string;
  part: string;
  partMeta: string;
  verified: string;
  lock: string;
}

export function modelsDir(dataDir: string): string {
  return join(dataDir, MODELS_FOLDER);
}

export function modelPaths(dataDir: string, file: string): ModelPaths {
  const dir = modelsDir(dataDir);
  const path = join(dir, file);
  return {
    dir,
    file: path,
    part: `${path}.part`,
    partMeta: `${path}.part.json`,
    verified: `${path}.verified.json`,
    lock: `${path}.lock`,
  };
}

/** The folder is the data folder's: private to the relay's user, as the data folder is (docs/operating.md). */
export async function ensureModelsDir(dataDir: string): Promise<string> {
  const dir = modelsDir(dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return dir;
}

const PartMeta = z.object({
  version: z.literal(1),
  url: z.string().max(4096),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: z.number().int().nonnegative(),
  etag: z.string().max(512).optional(),
});
export type PartMeta = z.infer<typeof PartMeta>;

/** The sidecar, or undefined when it is missing, unreadable, or not ours (the part is then started over). */
export async function readPartMeta(path: string): Promise<PartMeta | undefined> {
  try {
    const text = await readFile(path, "utf8");
    if (text.length > 16_384) return undefined;
    const parsed = PartMeta.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export async function writePartMeta(path: string, meta: PartMeta): Promise<void> {
  await writeFile(path, `${JSON.stringify(meta)}\n`, { mode: 0o600 });
}

const VerifiedMark = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: z.number().int().nonnegative(),
  mtimeMs: z.number(),
});

/** The size of the file at `path`, or undefined when there is no regular file there. */
export async function fileSize(path: string): Promise<number | undefined> {
  try {
    const info = await stat(path);
    return info.isFile() ? info.size : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the file is there and was checked against this sha256 since it last changed. */
export async function isMarkedVerified(paths: ModelPaths, sha256: string): Promise<boolean> {
  try {
    const [info, text] = await Promise.all([stat(paths.file), readFile(paths.verified, "utf8")]);
    const mark = VerifiedMark.safeParse(JSON.parse(text));
    return (
      mark.success &&
      info.isFile() &&
      mark.data.sha256 === sha256 &&
      mark.data.bytes === info.size &&
      mark.data.mtimeMs === info.mtimeMs
    );
  } catch {
    return false;
  }
}

export async function markVerified(paths: ModelPaths, sha256: string): Promise<void> {
  const info = await stat(paths.file);
  await writeFile(paths.verified, `${JSON.stringify({ sha256, bytes: info.size, mtimeMs: info.mtimeMs })}\n`, {
    mode: 0o600,
  });
}

/** sha256 of a whole file, or of its first `limit` bytes into `hash` (a resume picks up from there). */
export async function hashFile(
  path: string,
  hash = createHash("sha256"),
  limit?: number,
): Promise<ReturnType<typeof createHash>> {
  if (limit === 0) return hash;
  const stream = createReadStream(path, limit === undefined ? {} : { start: 0, end: limit - 1 });
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash;
}

/** Free bytes for this user where `dir` lives (statfs: available blocks times block size). */
export async function freeBytes(dir: string): Promise<number> {
  const info = await statfs(dir);
  return info.bavail * info.bsize;
}

export type LocalState =
  { kind: "absent" } | { kind: "partial"; received: number } | { kind: "present"; bytes: number; verified: boolean };

/** What the data folder holds of a model, without hashing anything. */
export async function localState(dataDir: string, entry: ModelEntry): Promise<LocalState> {
  const paths = modelPaths(dataDir, entry.file);
  const bytes = await fileSize(paths.file);
  if (bytes !== undefined) return { kind: "present", bytes, verified: await isMarkedVerified(paths, entry.sha256) };
  const received = await fileSize(paths.part);
  return received === undefined ? { kind: "absent" } : { kind: "partial", received };
}

/** Removes a model and everything beside it; returns the bytes freed. The lock is the pull's to remove. */
export async function removeModelFiles(paths: ModelPaths): Promise<number> {
  let freed = 0;
  for (const path of [paths.file, paths.part, paths.partMeta, paths.verified]) {
    freed += (await fileSize(path)) ?? 0;
    await rm(path, { force: true });
  }
  return freed;
}
