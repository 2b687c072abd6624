// Issue 20 in a real VS Code: a relay started by its CLI with the embedded engine (TAB_RELAY_MODEL, a GGUF written at
// test time with the real layout and random weights, served by node-llama-cpp from the relay's own first-use install)
// gives the packaged extension its ghost text in code-server. Random weights say nothing of quality; the test checks
// that the text a person sees came from the engine: the engine's token counter moves with it, and the model list
// names the engine. Screenshots and the relay's log go to test-output/e2e/engine/.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { testEngineDir, testModel } from "../support/engine";
import { ensurePrerequisites, REPO_ROOT, typeAndWaitForGhostText, VsCodeSession, waitUntil } from "./codeServer";
import { packageTabRelayExtension } from "./extensionPackage";
import { ensureRelayBuilt, startCliRelay, type RelayUnderTest } from "./relay";

const OUTPUT = join(REPO_ROOT, "test-output/e2e/engine");
const FILE = "add.js";
const FIXTURE = "function add(a, b) {\n  return a + b;\n}\n\n";

const prerequisites = ensurePrerequisites();
const skip = !prerequisites.ready && !process.env.CI ? `SKIPPED, NOT TESTED: ${prerequisites.reason}` : false;
if (skip) console.error(`\n${"!".repeat(100)}\n[e2e] ${skip}\n${"!".repeat(100)}\n`);

// Installing the engine (once per checkout), packaging, starting code-server: each 10 to 80 s on a busy 2-core machine.
const STEP = { timeout: 300_000 };

/** The engine's generated tokens so far, summed over its series in /metrics (no token set: a local client reads it). */
async function engineTokens(relay: RelayUnderTest): Promise<number> {
  const text = await (await fetch(`${relay.url}/metrics`)).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith("tab_relay_engine_tokens_total"))
    .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
}

describe("ghost text from the embedded engine, in a real VS Code", { skip }, () => {
  const work = mkdtempSync(join(tmpdir(), "tab-relay-e2e-engine-"));
  let packaged = "";
  let relay: RelayUnderTest | undefined;
  let vscode: VsCodeSession | undefined;

  before(async () => {
    if (!prerequisites.ready) throw new Error(`cannot run the VS Code end-to-end test: ${prerequisites.reason}`);
    rmSync(OUTPUT, { recursive: true, force: true });
    mkdirSync(OUTPUT, { recursive: true });
    ensureRelayBuilt();
    packaged = packageTabRelayExtension(work);
    const engineDir = await testEngineDir();
    const model = testModel({ seed: 20 });
    relay = await startCliRelay("e2e-engine", join(OUTPUT, "relay.log"), undefined, {
      TAB_RELAY_MODEL: model.path,
      TAB_RELAY_ENGINE_DIR: engineDir,
      TAB_RELAY_ENGINE_THREADS: "1",
      TAB_RELAY_ENGINE_CONTEXT: "1024",
    });
    const url = relay.url;
    await waitUntil("the embedded engine to be ready", 120_000, async () => {
      const health = (await (await fetch(`${url}/healthz`)).json()) as { engine?: { state?: string } };
      return health.engine?.state === "ready" || undefined;
    });
  }, STEP);

  after(async () => {
    await vscode?.close();
    await relay?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test("the model list names the engine, and typing brings ghost text the engine wrote", STEP, async () => {
    assert.ok(relay);
    const models = (await (
      await fetch(`${relay.url}/api/v1/tab/models`, { headers: { Authorization: `Bearer ${relay.apiKey}` } })
    ).json()) as { data: { models: { served_by?: { provider?: string } }[] } };
    assert.equal(models.data.models[0]?.served_by?.provider, "engine", JSON.stringify(models));

    vscode = await VsCodeSession.start({
      vsix: packaged,
      outDir: OUTPUT,
      workspaceFiles: { [FILE]: FIXTURE },
      settings: { "tabRelay.relayUrl": relay.url, "tabRelay.workspaceSlug": relay.workspaceSlug },
      // The extension takes its key from VS Code's environment when none is stored (docs/extension.md).
      env: { TAB_RELAY_API_KEY: relay.apiKey },
    });
    await vscode.waitForActivation();
    try {
      const tokensBefore = await engineTokens(relay);
      const editor = await vscode.openFile(FILE);
      const ghost = await typeAndWaitForGhostText(
        vscode.page,
        editor,
        "function sub(a, b) {",
        (text) => text.trim() !== "",
        120_000,
      );
      await vscode.screenshot("ghost-text");
      assert.ok(ghost.trim() !== "");
      assert.ok((await engineTokens(relay)) > tokensBefore, "the engine generated no tokens for the ghost text");
    } catch (error) {
      await vscode.screenshot("failure").catch(() => undefined);
      throw error;
    }
  });
});
