import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, type Env, SETTINGS, loadModelsConfig } from "../../config";
import { ModelError } from "./errors";
import {
  type ModelEntry,
  createModelsHttpGet,
  entryFor,
  fileUrl,
  listModels,
  loadRegistry,
  progressReporter,
  pullClock,
  pullModel,
  removeModel,
} from "./index";
import { formatBytes } from "./progress";
import { modelsDir } from "./store";

/** `tab-relay models list|pull|rm`: see USAGE. cli.ts hands in the environment and the output streams. */
export interface ModelsCommandIo {
  env: Env;
  stdout: { write(text: string): void };
  stderr: { write(text: string): void; isTTY?: boolean; columns?: number };
  /** Stops a pull (Ctrl+C); the part stays for the next pull to resume. */
  signal?: AbortSignal;
}

export const MODELS_USAGE = `  tab-relay models list [--data DIR] [--json]   the models --model knows, their size, licence, and what DIR holds
  tab-relay models pull NAME... [--data DIR] [--allow-unverified] [--model-hub-url URL] [--model-registry FILE]
                   download into DIR/models/, resuming a cut download and checking its sha256; progress on stderr,
                   the file's path on stdout. HTTPS_PROXY/HTTP_PROXY/NO_PROXY are honoured
  tab-relay models rm NAME... [--data DIR]   remove a model's file and any partial download
  (DIR defaults to ${SETTINGS.dataDir.env}, else ./data, as for start)`;

const OPTIONS = {
  data: { type: "string" as const },
  json: { type: "boolean" as const },
  "allow-unverified": { type: "boolean" as const },
  "model-hub-url": { type: "string" as const },
  "model-registry": { type: "string" as const },
};

/** Runs the command; returns the exit code: 0 done, 1 failed, 2 a mistake in the command. */
export async function modelsCommand(args: readonly string[], io: ModelsCommandIo): Promise<number> {
  const [sub, ...rest] = args;
  const fail = (message: string, code: number) => {
    io.stderr.write(`tab-relay: ${message}\n`);
    return code;
  };
  if (sub !== "list" && sub !== "pull" && sub !== "rm")
    return fail(`models: the subcommand is list, pull or rm\n\n${MODELS_USAGE}\n`, 2);
  let values: Record<string, unknown>;
  let names: string[];
  try {
    const parsed = parseArgs({ args: [...rest], options: OPTIONS, allowPositionals: true, strict: true });
    values = parsed.values;
    names = parsed.positionals;
  } catch (error) {
    return fail(`models ${sub}: ${(error as Error).message}\n\n${MODELS_USAGE}\n`, 2);
  }
  if (sub === "list" && names.length > 0) return fail(`models list takes no names (got ${names.join(" ")})`, 2);
  if (sub !== "list" && names.length === 0) return fail(`models ${sub}: name the model(s), e.g. qwen2.5-coder-1.5b`, 2);

  const str = (name: string) => (typeof values[name] === "string" ? values[name] : undefined);
  let config;
  try {
    config = loadModelsConfig(io.env, {
      dataDir: str("data") ?? io.env[SETTINGS.dataDir.env] ?? "data",
      modelHubUrl: str("model-hub-url"),
      modelRegistry: str("model-registry"),
    });
  } catch (error) {
    if (error instanceof ConfigError) return fail(error.message, 2);
    throw error;
  }
  let registry: readonly ModelEntry[];
  let entries: ModelEntry[];
  try {
    registry = await loadRegistry(config.registryFile);
    entries = names.map((name) => entryFor(name, registry));
  } catch (error) {
    if (error instanceof ModelError) return fail(error.message, 2);
    throw error;
  }

  if (sub === "list") {
    const listed = await listModels(config.dataDir, registry);
    if (values["json"] === true) {
      const models = listed.map(({ entry, state, path }) => ({
        name: entry.name,
        label: entry.label,
        family: entry.family,
        license: entry.license,
        repo: entry.repo,
        revision: entry.revision,
        file: entry.file,
        url: fileUrl(entry, config.hubUrl),
        bytes: entry.bytes,
        bytes_exact: entry.bytesExact,
        sha256: entry.sha256,
        verified: entry.verified,
        sources: entry.sources,
        ...(entry.note === undefined ? {} : { note: entry.note }),
        status: state.kind,
        ...(state.kind === "partial" ? { received: state.received } : {}),
        path,
      }));
      io.stdout.write(`${JSON.stringify({ models_dir: resolve(modelsDir(config.dataDir)), models })}\n`);
      return 0;
    }
    const rows = listed.map(({ entry, state }) => [
      entry.name,
      `${entry.bytesExact ? "" : "~"}${formatBytes(entry.bytes)}`,
      entry.family,
      entry.license.name,
      state.kind === "present"
        ? "downloaded"
        : state.kind === "partial"
          ? `partial (${Math.floor((state.received / entry.bytes) * 100)}%)`
          : entry.verified
            ? "-"
            : "- (unverified: pull with --allow-unverified)",
    ]);
    const header = ["NAME", "SIZE", "FAMILY", "LICENCE", "IN THIS DATA FOLDER"];
    const widths = header.map((title, column) =>
      Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)),
    );
    const format = (row: string[]) =>
      `  ${row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join("  ")}`;
    const notes = listed
      .filter(({ entry }) => entry.note !== undefined)
      .map(({ entry }) => `  ${entry.name}: ${entry.note}`);
    io.stdout.write(
      [
        `Models in ${resolve(modelsDir(config.dataDir))}, from ${config.hubUrl}:`,
        format(header),
        ...rows.map(format),
        ...(notes.length > 0 ? ["", ...notes] : []),
        "",
        "Download one with: tab-relay models pull NAME   (sizes with ~ are the hub's rounded figures)",
        "",
      ].join("\n"),
    );
    return 0;
  }

  if (sub === "rm") {
    let code = 0;
    for (const entry of entries) {
      try {
        const freed = await removeModel(entry, config.dataDir);
        io.stdout.write(
          freed > 0 ? `Removed ${entry.name} (${formatBytes(freed)} freed)\n` : `${entry.name}: nothing to remove\n`,
        );
      } catch (error) {
        if (!(error instanceof ModelError)) throw error;
        code = fail(error.message, 1);
      }
    }
    return code;
  }

  const get = createModelsHttpGet(config.proxy);
  try {
    for (const entry of entries) {
      const reporter = progressReporter(entry.name, {
        write: (text) => io.stderr.write(text),
        tty: io.stderr.isTTY === true,
        ...(io.stderr.columns === undefined ? {} : { columns: io.stderr.columns }),
        now: () => pullClock.now(),
      });
      try {
        const { path, downloaded } = await pullModel(entry, {
          dataDir: config.dataDir,
          allowUnverified: values["allow-unverified"] === true,
          hubUrl: config.hubUrl,
          registry,
          get,
          clock: pullClock,
          onEvent: reporter,
          ...(io.signal ? { signal: io.signal } : {}),
        });
        reporter.finish();
        io.stderr.write(
          downloaded
            ? `${entry.name}: downloaded and verified (sha256 ${entry.sha256.slice(0, 12)}…)\n`
            : `${entry.name}: already here and verified\n`,
        );
        io.stdout.write(`${path}\n`);
      } catch (error) {
        reporter.finish();
        if (!(error instanceof ModelError)) throw error;
        if (error.reason === "aborted")
          return fail(`${entry.name}: stopped; the partial download is kept and the next pull resumes it`, 130);
        return fail(error.message, 1);
      }
    }
  } finally {
    await get.close();
  }
  return 0;
}
