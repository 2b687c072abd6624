/**
 * The engine's packaging: node-llama-cpp is installed on first use into its own folder (DATA/engine, or
 * TAB_RELAY_ENGINE_DIR), from the npm registry, never into the relay's node_modules.
 *
 * Why not a dependency of the relay: with every prebuilt llama.cpp build node-llama-cpp is about 730 MB (the CUDA
 * builds alone 540 MB) and 30 s of `npm install`, which the README's `npm install && npm start` would pay for whether or
 * not anyone runs a model. An optional dependency does not help: npm installs optional dependencies by default, and
 * `--omit=optional` also drops the binaries. Installed here, the engine costs nothing until `--model` is used, and
 * then only the CPU build for this platform (about 84 MB), plus a GPU build when asked (`tab-relay engine install
 * --gpu cuda|vulkan`). The trade-off: the first `--model` needs the npm registry (or a mirror npm is configured for),
 * and node-llama-cpp's own dependencies resolve within its ranges at install time rather than from our lockfile; the
 * two packages we name are pinned exactly.
 *
 * The install goes to a temporary folder renamed into place, so a cut install leaves nothing half-made and two
 * relays installing at once both end with a whole folder. node-llama-cpp's postinstall is skipped
 * (`--ignore-scripts`): it only looks for a prebuilt binary and would try to build one when none matched; the
 * engine then calls `getLlama({ build: "never" })`, so nothing is compiled or downloaded at run time either.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** The binding, pinned: newer releases' lockfiles name builds for other platforms the registry may not serve. */
export const NODE_LLAMA_CPP_VERSION = "3.21.1";

export type GpuBuild = "cuda" | "vulkan";

/** The prebuilt llama.cpp packages for this platform: the CPU (or Metal) build, then the GPU builds asked for. */
export function binaryPackages(platform: string, arch: string, gpu: readonly GpuBuild[] = []): string[] {
  const os = platform === "darwin" ? "mac" : platform === "win32" ? "win" : platform;
  const base = os === "mac" && arch === "arm64" ? "mac-arm64-metal" : `${os}-${arch}`;
  const extra = os === "linux" || os === "win" ? gpu.map((build) => `${base}-${build}`) : [];
  return [base, ...extra].map((name) => `@node-llama-cpp/${name}`);
}

/** Where node-llama-cpp's entry module is once installed in `dir`. */
export function engineEntry(dir: string): string {
  return join(dir, "node_modules", "node-llama-cpp", "dist", "index.js");
}

/** The installed version in `dir`, or undefined when there is none. */
export async function installedVersion(dir: string): Promise<string | undefined> {
  try {
    const text = await readFile(join(dir, "node_modules", "node-llama-cpp", "package.json"), "utf8");
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === "string" && existsSync(engineEntry(dir)) ? version : undefined;
  } catch {
    return undefined;
  }
}

export async function engineInstalled(dir: string): Promise<boolean> {
  return (await installedVersion(dir)) === NODE_LLAMA_CPP_VERSION;
}

/** Runs a command, each output line to `onLine`; resolves with its exit code. */
export type RunCommand = (
  command: string,
  args: string[],
  cwd: string,
  env: Readonly<Record<string, string | undefined>>,
  onLine: (line: string) => void,
) => Promise<number>;

export const runCommand: RunCommand = (command, args, cwd, env, onLine) =>
  new Promise((resolveCode, reject) => {
    const child = spawn(command, args, {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...env, NODE_LLAMA_CPP_SKIP_DOWNLOAD: "true" },
      shell: process.platform === "win32",
    });
    let rest = "";
    const lines = (chunk: Buffer) => {
      rest += chunk.toString("utf8");
      const parts = rest.split(/\r?\n/);
      rest = parts.pop() ?? "";
      for (const line of parts) if (line.trim() !== "") onLine(line);
    };
    child.stdout.on("data", lines);
    child.stderr.on("data", lines);
    child.once("error", reject);
    child.once("close", (code) => {
      if (rest.trim() !== "") onLine(rest);
      resolveCode(code ?? 1);
    });
  });

export class EngineInstallError extends Error {
  override name = "EngineInstallError";
}

/**
 * Installs node-llama-cpp and this platform's binaries into `dir` unless they are there already. `onLine` gets
 * npm's output, for the person waiting.
 */
export async function installEngine(
  dir: string,
  options: {
    /** The environment npm runs in (its registry and proxy settings); `npm_execpath` picks the npm that runs us. */
    env: Readonly<Record<string, string | undefined>>;
    gpu?: readonly GpuBuild[];
    onLine?: (line: string) => void;
    run?: RunCommand;
  },
): Promise<void> {
  const target = resolve(dir);
  if (await engineInstalled(target)) return;
  const packages = binaryPackages(process.platform, process.arch, options.gpu);
  await mkdir(dirname(target), { recursive: true });
  const temp = await mkdtemp(`${target}.installing-`);
  const manifest = {
    name: "tab-relay-engine",
    private: true,
    description:
      "The tab-relay embedded engine's llama.cpp binding, installed on first use (relay/src/engine/install.ts)",
    dependencies: Object.fromEntries(
      ["node-llama-cpp", ...packages].map((name) => [name, NODE_LLAMA_CPP_VERSION] as const),
    ),
  };
  try {
    await writeFile(join(temp, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    const npm = options.env["npm_execpath"];
    const [command, prefix] = npm && /\.c?js$/.test(npm) ? [process.execPath, [npm]] : [npm ?? "npm", [] as string[]];
    const lines: string[] = [];
    const code = await (options.run ?? runCommand)(
      command,
      [...prefix, "install", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
      temp,
      options.env,
      (line) => {
        lines.push(line);
        if (lines.length > 20) lines.shift();
        options.onLine?.(line);
      },
    );
    if (code !== 0 || (await installedVersion(temp)) !== NODE_LLAMA_CPP_VERSION) {
      throw new EngineInstallError(
        `installing node-llama-cpp ${NODE_LLAMA_CPP_VERSION} into ${target} failed (npm exited ${code}). ` +
          `It comes from the npm registry: check the network or npm's registry and proxy settings (npm config get registry), ` +
          `then run \`tab-relay engine install --data DIR\` again.${lines.length > 0 ? `\nnpm said:\n  ${lines.join("\n  ")}` : ""}`,
      );
    }
    try {
      await rename(temp, target);
    } catch (error) {
      // Another relay finished first: its folder is as good as ours.
      if (!(await engineInstalled(target))) throw error;
    }
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}

/** The message when a model is configured and the engine is not installed (and installing is not this caller's job). */
export function notInstalledMessage(dir: string): string {
  return (
    `the embedded engine (node-llama-cpp ${NODE_LLAMA_CPP_VERSION}) is not installed in ${dir}. ` +
    `\`tab-relay start --model …\` installs it on first use; or run \`tab-relay engine install --data DIR\` ` +
    `(about 84 MB from the npm registry), or point TAB_RELAY_ENGINE_DIR at a folder where it is installed`
  );
}

/** The module URL the engine's child imports. */
export function engineModuleUrl(dir: string): string {
  return pathToFileURL(engineEntry(resolve(dir))).href;
}
