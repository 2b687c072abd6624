/**
 * The embedded engine in tests: node-llama-cpp installed once per checkout through the relay's own first-use
 * installer (relay/src/engine/install.ts), from the npm registry as CI can, into node_modules/.cache; and GGUF
 * models written at test time (gguf.ts).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { engineInstalled, installEngine } from "../../relay/src/engine/install";
import { type GgufModelOptions, type Vocabulary, writeGgufModel } from "./gguf";

export const TEST_ENGINE_DIR = fileURLToPath(new URL("../../node_modules/.cache/tab-relay-engine", import.meta.url));

let installing: Promise<string> | undefined;

/** The engine folder, installed on the first call (about 30 s, once per checkout). */
export function testEngineDir(): Promise<string> {
  installing ??= (async () => {
    if (!(await engineInstalled(TEST_ENGINE_DIR)))
      await installEngine(TEST_ENGINE_DIR, {
        env: process.env,
        onLine: (line) => process.stderr.write(`engine install: ${line}\n`),
      });
    return TEST_ENGINE_DIR;
  })();
  return installing;
}

/** A fresh model file in a temporary folder. */
export function testModel(options: GgufModelOptions = {}, name = "model.gguf"): { path: string; vocab: Vocabulary } {
  const dir = mkdtempSync(join(tmpdir(), "tab-relay-gguf-"));
  const path = join(dir, name);
  return { path, vocab: writeGgufModel(path, options) };
}
