/**
 * The packages as someone outside this repository gets them: `npm pack` of a workspace, installed with npm into a
 * scratch folder under the system's temporary directory, where Node's module resolution cannot reach the
 * repository's node_modules. Dependencies come from the npm registry (through npm's cache), as they would for a user.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, parse } from "node:path";
import { fileURLToPath } from "node:url";
import { type CommandRun, runCommand } from "./relayProcess";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The environment for npm and the installed programs: nothing of this repository's npm run (npm_* variables name its
 * folder, its config and its workspace), no NODE_PATH, no relay settings. Native addons build against this machine's
 * Node headers when they match the running Node (as .ci/run does), since prebuilt binaries cannot be downloaded here.
 */
export function outsideEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^(npm_|TAB_RELAY_|NODE_PATH$|NODE_OPTIONS$|INIT_CWD$)/i.test(name),
    ),
  );
  const headers = "/usr/include/node/node_version.h";
  const major = process.versions.node.split(".")[0];
  if (existsSync(headers) && readFileSync(headers, "utf8").includes(`#define NODE_MAJOR_VERSION ${major}\n`))
    env["npm_config_nodedir"] = "/usr";
  env["npm_config_update_notifier"] = "false";
  env["npm_config_fund"] = "false";
  env["npm_config_audit"] = "false";
  return { ...env, ...extra };
}

/** A new folder under the temporary directory, none of whose parents holds a node_modules to resolve from. */
export function scratchFolder(prefix: string): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  assert.ok(!dir.startsWith(realpathSync(REPO_ROOT)), `${dir} is inside the repository`);
  for (let parent = dirname(dir); ; parent = dirname(parent)) {
    assert.ok(!existsSync(join(parent, "node_modules")), `${parent}/node_modules would be reachable from ${dir}`);
    if (parent === parse(parent).root) break;
  }
  return dir;
}

export function npm(
  args: readonly string[],
  cwd: string,
  env = outsideEnv(),
  killAfterMs = 600_000,
): Promise<CommandRun> {
  return runCommand("npm", args, { cwd, env, killAfterMs });
}

/** Why the npm registry cannot be used, or undefined when `npm ping` answers. */
export async function registryProblem(): Promise<string | undefined> {
  const ping = await npm(["ping"], tmpdir(), outsideEnv(), 30_000);
  return ping.status === 0 ? undefined : `npm ping failed (${ping.status}): ${ping.stderr.trim().slice(-300)}`;
}

export interface Packed {
  /** The tarball's path. */
  file: string;
  name: string;
  version: string;
  /** Bytes of the tarball, and of its files unpacked. */
  size: number;
  unpackedSize: number;
  files: string[];
}

/** `npm pack` of the workspace in `folder` (its prepack script builds it first) into `destination`. */
export async function pack(folder: string, destination: string): Promise<Packed> {
  const run = await npm(["pack", "--json", "--pack-destination", destination], join(REPO_ROOT, folder), {
    ...outsideEnv(),
    // npm reads the repository's .npmrc from here as a user packing it would; the build needs the workspace's tools.
    PATH: `${join(REPO_ROOT, "node_modules/.bin")}:${process.env["PATH"] ?? ""}`,
  });
  assert.equal(run.status, 0, `npm pack in ${folder} failed:\n${run.stderr}`);
  const [report] = JSON.parse(run.stdout.slice(run.stdout.indexOf("[\n"))) as {
    filename: string;
    name: string;
    version: string;
    size: number;
    unpackedSize: number;
    files: { path: string }[];
  }[];
  assert.ok(report, run.stdout);
  return {
    file: join(destination, report.filename),
    name: report.name,
    version: report.version,
    size: report.size,
    unpackedSize: report.unpackedSize,
    files: report.files.map((entry) => entry.path),
  };
}

/** Seconds since `start` (a performance.now()), for the figures a test reports. */
export function secondsSince(start: number): string {
  return ((performance.now() - start) / 1000).toFixed(1);
}
