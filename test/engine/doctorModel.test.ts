/**
 * `tab-relay doctor --model` as an operator runs it: the built CLI in its own process (needs a fresh
 * `npm run build -w relay`), loading a GGUF model generated here into the embedded engine.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { testEngineDir, testModel } from "../support/engine";
import { type CommandRun, runCommand } from "../support/relayProcess";

const BIN = fileURLToPath(new URL("../../relay/bin/tab-relay.js", import.meta.url));
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));

interface EngineJson {
  name: string;
  status: string;
  summary: string;
  binary?: string;
  fim?: Record<string, string | undefined>;
  completion?: { first_token_ms: number | null; tokens: number; total_ms: number; text: string };
}

describe("tab-relay doctor --model", () => {
  let engineDir: string;
  /** A folder of its own to run in: a name would be looked for in ./data, which must stay untouched. */
  let cwd: string;
  const doctor = (args: string[], env: Record<string, string> = {}): Promise<CommandRun> =>
    runCommand(process.execPath, [BIN, "doctor", "--engine-dir", engineDir, "--engine-threads", "1", ...args], {
      cwd,
      env: { ...cleanEnv, ...env },
      killAfterMs: 120_000,
    });
  before(async () => {
    engineDir = await testEngineDir();
    cwd = mkdtempSync(join(tmpdir(), "tab-relay-doctor-model-"));
  });

  test("loads a generated GGUF and reports the CPU build, its FIM tokens and one timed completion (exit 0)", async () => {
    const { path } = testModel({ seed: 3, oneLine: true });
    const run = await doctor(["--model", path, "--gpu", "off", "--json"]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    const report = JSON.parse(run.stdout) as { ok: boolean; checks: EngineJson[] };
    assert.equal(report.ok, true);
    assert.equal(report.checks.length, 1, "only the model is checked, not a deployment");
    const check = report.checks[0]!;
    assert.equal(check.name, "engine");
    assert.equal(check.status, "ok");
    assert.equal(check.binary, "CPU");
    assert.deepEqual(check.fim, {
      prefix: "<|fim_prefix|>",
      suffix: "<|fim_suffix|>",
      middle: "<|fim_middle|>",
      fileSeparator: "<|file_sep|>",
      repoName: "<|repo_name|>",
    });
    const completion = check.completion!;
    assert.ok(completion.tokens >= 1 && completion.tokens <= 16, `${completion.tokens} tokens`);
    assert.ok(completion.text.length > 0, "the model wrote text");
    assert.ok(
      completion.first_token_ms !== null && completion.first_token_ms <= completion.total_ms,
      JSON.stringify(completion),
    );
    assert.ok(!existsSync(join(cwd, "data")), "doctor made no data folder");

    const text = await doctor(["--model", path, "--gpu", "off"]);
    assert.equal(text.status, 0, text.stdout + text.stderr);
    assert.match(text.stdout, /^Embedded engine: .*model\.gguf$/m);
    assert.match(text.stdout, /^ {2}llama\.cpp build in use: CPU \(node-llama-cpp 3\.21\.1, --gpu off\), 1 thread/m);
    assert.match(text.stdout, /^ {2}FIM tokens \(GGUF metadata\): prefix <\|fim_prefix\|>, suffix <\|fim_suffix\|>/m);
    assert.match(text.stdout, /^ {2}one completion: first token after \d+ ms, \d+ tokens? in \d+ ms/m);
  });

  test("a file that is not GGUF: exit 1, saying what it is", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "tab-relay-gguf-")), "notes.gguf");
    writeFileSync(path, "these are not weights\n");
    const run = await doctor(["--model", path]);
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.match(run.stdout, /FAILED: .*notes\.gguf is not a GGUF model file .*starts with "thes"/);
  });

  test("a registry name not downloaded: exit 1, saying to pull it, and nothing is downloaded", async () => {
    const run = await doctor(["--model", "qwen2.5-coder-0.5b"]);
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.match(
      run.stdout,
      /qwen2\.5-coder-0\.5b is not downloaded into .*: run `tab-relay models pull qwen2\.5-coder-0\.5b` first/,
    );
    assert.ok(!existsSync(join(cwd, "data")), "nothing was written");
  });
});
