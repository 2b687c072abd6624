// The extension end to end: the packaged .vsix in a real VS Code (code-server + headless Chromium), talking to
// the relay started through its CLI with the local engine. Screenshots and logs go to test-output/e2e/<case>/.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  ensurePrerequisites,
  readGhostText,
  REPO_ROOT,
  sleep,
  typeAndWaitForGhostText,
  VsCodeSession,
  waitUntil,
} from "./codeServer";
import { packageTabRelayExtension } from "./extensionPackage";
import { ensureRelayBuilt, startCliRelay, type RelayUnderTest } from "./relay";

// The two things under test.
const packageExtension = packageTabRelayExtension;
const startRelay = startCliRelay;

const OUTPUT = join(REPO_ROOT, "test-output/e2e");

// The local engine continues with what followed the longest earlier match of the text before the cursor.
// Retyping the function's first line at the end of the file matches exactly one earlier place, so the
// continuation is that function's body.
const FILE = "greet.js";
const FIXTURE = '// Greetings for the tab-relay end-to-end test.\nfunction greetVisitor(name) {\n  return "Hello, " + name + "!";\n}\n\n';
const TYPED = "function greetVisitor(name) {";
const BODY = '\n  return "Hello, " + name + "!";';

const prerequisites = ensurePrerequisites();
const skip = !prerequisites.ready && !process.env.CI ? `SKIPPED, NOT TESTED: ${prerequisites.reason}` : false;
if (skip) console.error(`\n${"!".repeat(100)}\n[e2e] ${skip}\n${"!".repeat(100)}\n`);

/**
 * Runs `body` against a fresh relay and a VS Code with the extension configured for it, then stops both.
 * A failing step leaves a picture of the workbench behind; timings.json says where the time went.
 */
async function withRelayAndVsCode(
  name: string,
  vsix: string,
  body: (relay: RelayUnderTest, vscode: VsCodeSession) => Promise<void>,
): Promise<void> {
  const outDir = join(OUTPUT, name);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const timings: Record<string, number> = {};
  let phaseStart = Date.now();
  const phase = (label: string) => {
    timings[label] = Date.now() - phaseStart;
    phaseStart = Date.now();
  };
  const relay = await startRelay(`e2e-${name}`, join(outDir, "relay.log"));
  phase("relayStartMs");
  let vscode: VsCodeSession | undefined;
  try {
    vscode = await VsCodeSession.start({
      vsix,
      outDir,
      workspaceFiles: { [FILE]: FIXTURE },
      settings: { "tabRelay.relayUrl": relay.url, "tabRelay.workspaceSlug": relay.workspaceSlug },
      env: { TAB_RELAY_API_KEY: relay.apiKey },
    });
    phase("vscodeStartMs");
    await vscode.waitForActivation();
    phase("activationMs");
    await body(relay, vscode);
    phase("stepsMs");
  } catch (error) {
    await vscode?.screenshot("failure").catch(() => undefined);
    throw error;
  } finally {
    await vscode?.close();
    await relay.stop();
    phase("teardownMs");
    writeFileSync(join(outDir, "timings.json"), `${JSON.stringify(timings, null, 2)}\n`);
  }
}

// Each case normally takes 10 to 25 s; the bound only keeps a hung browser from stalling the whole suite.
describe("the extension in a real VS Code", { skip, timeout: 300_000 }, () => {
  let packagingDir = "";
  let vsix = "";

  before(() => {
    if (!prerequisites.ready) throw new Error(`cannot run the VS Code end-to-end test: ${prerequisites.reason}`);
    ensureRelayBuilt();
    packagingDir = mkdtempSync(join(tmpdir(), "tab-relay-e2e-vsix-"));
    vsix = packageExtension(packagingDir);
  });
  after(() => rmSync(packagingDir, { recursive: true, force: true }));

  test("shows the relay's continuation as ghost text, and Tab puts it into the saved file", () =>
    withRelayAndVsCode("accept", vsix, async (_relay, vscode) => {
      const editor = await vscode.openFile(FILE);

      const ghost = await typeAndWaitForGhostText(vscode.page, editor, TYPED, (text) => text.startsWith(BODY));
      await vscode.screenshot("1-ghost-text");

      await vscode.page.keyboard.press("Tab");
      await waitUntil("the ghost text to be accepted", 10_000, async () => ((await readGhostText(editor)) === undefined ? true : undefined));
      await vscode.page.keyboard.press("Control+S");
      const expected = FIXTURE + TYPED + ghost;
      // VS Code saves by truncating and rewriting the file, so a read can land on an empty or half-written file.
      const saved = await waitUntil("the file to be saved", 10_000, () => {
        const text = readFileSync(join(vscode.workspaceDir, FILE), "utf8");
        return text.length < expected.length ? undefined : text;
      });
      await vscode.screenshot("2-accepted");
      assert.equal(saved, expected);
    }));

  test("a revoked key shows the unauthorized state in the status bar", () =>
    withRelayAndVsCode("revoked-key", vsix, async (relay, vscode) => {
      const editor = await vscode.openFile(FILE);
      assert.ok(!(await vscode.statusBarTexts()).some((text) => text.includes("unauthorized")), "unauthorized before the key was revoked");

      await relay.revokeKey();
      const probe = await fetch(`${relay.url}/api/v1/tab/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${relay.apiKey}` } });
      assert.equal(probe.status, 401, "the relay still accepts the revoked key");

      await vscode.page.keyboard.type(TYPED, { delay: 25 });
      const unauthorized = vscode.page.locator(".statusbar-item", { hasText: "Tab: unauthorized" });
      for (let attempt = 0; ; attempt++) {
        try {
          await unauthorized.first().waitFor({ state: "visible", timeout: 5_000 });
          break;
        } catch (error) {
          if (attempt >= 3) throw error;
          // An edit is what triggers a new request (see typeAndWaitForGhostText).
          await vscode.page.keyboard.press("Backspace");
          await vscode.page.keyboard.type(TYPED.slice(-1));
        }
      }
      await vscode.screenshot("unauthorized");
      await sleep(300);
      assert.equal(await readGhostText(editor), undefined, "ghost text shown although the key is revoked");
    }));
});
