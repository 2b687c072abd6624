// The README's "Ghost text in VS Code", end to end: the .vsix downloaded over HTTP from a running relay (as a team
// member who never builds the extension gets it) is the file installed in a real VS Code (code-server + headless
// Chromium); then the README's own steps: the two settings, its API-key command from the palette, and ghost text.
// Screenshots, logs and timings.json go to test-output/e2e/vsix-download/.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ensurePrerequisites, REPO_ROOT, typeAndWaitForGhostText, VsCodeSession } from "./codeServer";
import { packageTabRelayExtension } from "./extensionPackage";
import { ensureRelayBuilt, startCliRelay, type RelayUnderTest } from "./relay";

const OUTPUT = join(REPO_ROOT, "test-output/e2e/vsix-download");
const DOWNLOAD_PATH = "/downloads/tab-relay.vsix";

// The local engine continues with what followed the earlier copy of the typed line.
const FILE = "add.js";
const FIXTURE = "function add(a, b) {\n  return a + b;\n}\n\n";
const TYPED = "function add(a, b) {";
const BODY = "\n  return a + b;";

/**
 * The command the README's third VS Code step tells a person to run from the palette ("Run **<title>** from the
 * command palette"): the test runs that title, so a README naming a command the palette does not list fails here.
 */
export function readmeKeyCommand(readme: string): string {
  const section = readme.split(/^## /m).find((part) => part.startsWith("Ghost text in VS Code"));
  const title = section === undefined ? undefined : /Run \*\*([^*]+)\*\* from the command palette/.exec(section)?.[1];
  if (title === undefined) throw new Error('README.md\'s "Ghost text in VS Code" names no command to run');
  return title;
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

const prerequisites = ensurePrerequisites();
const skip = !prerequisites.ready && !process.env.CI ? `SKIPPED, NOT TESTED: ${prerequisites.reason}` : false;
if (skip) console.error(`\n${"!".repeat(100)}\n[e2e] ${skip}\n${"!".repeat(100)}\n`);

// Packaging, starting code-server and the first completion each take 10 to 80 s on a busy 2-core machine.
const STEP = { timeout: 300_000 };

describe("the extension downloaded from the relay, in a real VS Code", { skip }, () => {
  const work = mkdtempSync(join(tmpdir(), "tab-relay-e2e-download-"));
  let packaged = "";
  let relay: RelayUnderTest | undefined;
  let vscode: VsCodeSession | undefined;

  before(async () => {
    if (!prerequisites.ready) throw new Error(`cannot run the VS Code end-to-end test: ${prerequisites.reason}`);
    rmSync(OUTPUT, { recursive: true, force: true });
    mkdirSync(OUTPUT, { recursive: true });
    ensureRelayBuilt();
    // Writes extension/dist/tab-relay-vscode.vsix, the file a relay started from this checkout serves.
    packaged = packageTabRelayExtension(work);
    relay = await startCliRelay("e2e-download", join(OUTPUT, "relay.log"));
  }, STEP);

  after(async () => {
    await vscode?.close();
    await relay?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test(
    "the .vsix served at /downloads/tab-relay.vsix installs, activates, takes the README's key command and shows ghost text",
    STEP,
    async () => {
      assert.ok(relay);
      const timings: Record<string, number> = {};
      let phaseStart = Date.now();
      const phase = (label: string) => {
        timings[label] = Date.now() - phaseStart;
        phaseStart = Date.now();
      };

      const response = await fetch(`${relay.url}${DOWNLOAD_PATH}`);
      assert.equal(response.status, 200, await response.clone().text());
      assert.match(response.headers.get("content-type") ?? "", /^application\/vsix/);
      const bytes = new Uint8Array(await response.arrayBuffer());
      assert.equal(response.headers.get("content-length"), String(bytes.length));
      // The relay served this checkout's build, not some other file.
      assert.equal(sha256(bytes), sha256(readFileSync(packaged)), "the download is the package npm run package made");
      const downloaded = join(work, "downloaded", "tab-relay.vsix");
      mkdirSync(join(work, "downloaded"));
      writeFileSync(downloaded, bytes);
      phase("downloadMs");

      // Installs the downloaded file with `code-server --install-extension <file>`, as the README's `code` line does.
      vscode = await VsCodeSession.start({
        vsix: downloaded,
        outDir: OUTPUT,
        workspaceFiles: { [FILE]: FIXTURE },
        settings: { "tabRelay.relayUrl": relay.url, "tabRelay.workspaceSlug": relay.workspaceSlug },
      });
      phase("installAndStartMs");
      await vscode.waitForActivation();
      phase("activationMs");
      const page = vscode.page;
      const status = (text: string) => page.locator(".statusbar-item", { hasText: text }).first();
      try {
        // Active, and saying what it lacks: the key.
        await status("Tab: set up").waitFor({ timeout: 30_000 });

        const title = readmeKeyCommand(readFileSync(join(REPO_ROOT, "README.md"), "utf8"));
        await page.keyboard.press("F1");
        const quickInput = page.locator(".quick-input-widget");
        await quickInput.locator("input").waitFor({ state: "visible" });
        await page.keyboard.type(title);
        await quickInput.locator(".monaco-list-row", { hasText: title }).first().waitFor({ timeout: 10_000 });
        await page.keyboard.press("Enter");
        // The command's own input box: the key, pasted.
        await quickInput.locator(".quick-input-title", { hasText: "Set API Key" }).waitFor({ timeout: 10_000 });
        await page.keyboard.type(relay.apiKey);
        await page.keyboard.press("Enter");
        await page
          .locator(".notifications-toasts .notification-toast", {
            hasText: `Connected to workspace ${relay.workspaceSlug}`,
          })
          .first()
          .waitFor({ timeout: 30_000 });
        await status("Tab: set up").waitFor({ state: "detached", timeout: 10_000 });
        phase("apiKeyMs");
        await vscode.screenshot("1-key-set");

        const editor = await vscode.openFile(FILE);
        const ghost = await typeAndWaitForGhostText(page, editor, TYPED, (text) => text.startsWith(BODY));
        phase("firstGhostTextMs");
        await vscode.screenshot("2-ghost-text");
        assert.ok(ghost.startsWith(BODY), ghost);
      } catch (error) {
        await vscode.screenshot("failure").catch(() => undefined);
        throw error;
      } finally {
        writeFileSync(join(OUTPUT, "timings.json"), `${JSON.stringify(timings, null, 2)}\n`);
      }
    },
  );
});

describe("the README's key command", () => {
  test("is read from the Ghost text section's third step", () => {
    const readme =
      "## A\nRun **Other** from the command palette\n## Ghost text in VS Code\n3. Run **Tab Relay: X** from the command palette and paste";
    assert.equal(readmeKeyCommand(readme), "Tab Relay: X");
    assert.throws(() => readmeKeyCommand("## Ghost text in VS Code\nno command"), /names no command/);
  });
});
