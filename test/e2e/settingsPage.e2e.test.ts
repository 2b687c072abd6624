// Issue 24 in a real VS Code (code-server 4.100.3): the Settings page titles the renamed settings with their unit in
// words, and a settings.json written for 0.1.0 still works. The user settings hold two former keys: one alone
// (`tabRelay.requestTimeoutMs`, at a value the extension refuses, so its log shows the old key was read) and one
// next to its new key (`tabRelay.contextCharsBefore` under `tabRelay.contextCharactersBefore`, so nothing about
// the old one may be logged). No relay is needed: the settings are read at activation. Screenshots and logs go to
// test-output/e2e/settings-page/.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ensurePrerequisites, REPO_ROOT, runFromPalette, VsCodeSession, waitUntil } from "./codeServer";
import { EXTENSION_ID, LOG_CHANNEL, packageTabRelayExtension } from "./extensionPackage";

const OUTPUT = join(REPO_ROOT, "test-output/e2e/settings-page");

const prerequisites = ensurePrerequisites();
const skip = !prerequisites.ready && !process.env.CI ? `SKIPPED, NOT TESTED: ${prerequisites.reason}` : false;
if (skip) console.error(`\n${"!".repeat(100)}\n[e2e] ${skip}\n${"!".repeat(100)}\n`);

// Packaging and starting code-server take 10 to 80 s each on a busy 2-core machine.
const STEP = { timeout: 240_000 };

/** The settings the page is asked for: the three renamed ones checked, and their former keys. */
const SHOWN = [
  "tabRelay.debounceMilliseconds",
  "tabRelay.requestTimeoutMilliseconds",
  "tabRelay.contextCharactersBefore",
  "tabRelay.debounceMs",
  "tabRelay.requestTimeoutMs",
  "tabRelay.contextCharsBefore",
];

describe("the Settings page and a settings.json written for 0.1.0, in a real VS Code", { skip }, () => {
  const work = mkdtempSync(join(tmpdir(), "tab-relay-e2e-settings-"));
  let vsix = "";
  let vscode: VsCodeSession | undefined;

  before(() => {
    if (!prerequisites.ready) throw new Error(`cannot run the VS Code end-to-end test: ${prerequisites.reason}`);
    rmSync(OUTPUT, { recursive: true, force: true });
    mkdirSync(OUTPUT, { recursive: true });
    vsix = packageTabRelayExtension(work);
  }, STEP);

  after(async () => {
    await vscode?.close();
    rmSync(work, { recursive: true, force: true });
  });

  test("titles spell the unit out; a former key alone is read, and one next to its new key is not", STEP, async () => {
    vscode = await VsCodeSession.start({
      vsix,
      outDir: OUTPUT,
      workspaceFiles: { "notes.txt": "settings\n" },
      settings: {
        "tabRelay.requestTimeoutMs": 50,
        "tabRelay.contextCharsBefore": 0,
        "tabRelay.contextCharactersBefore": 700,
      },
    });
    await vscode.waitForActivation();
    const { page } = vscode;
    try {
      // Both former values are out of range: only the one whose new key is set nowhere may be read, and refused.
      const log = await waitUntil("the extension to log the refused former key", 30_000, () => {
        const text = vscode?.outputChannelLog(EXTENSION_ID, LOG_CHANNEL) ?? "";
        return text.includes("ignored invalid setting tabRelay.requestTimeoutMs:") ? text : undefined;
      });
      assert.doesNotMatch(log, /contextChar/, log);

      // Tall enough for every row asked for: the settings list only draws the rows in view.
      await page.setViewportSize({ width: 1280, height: 1400 });
      await runFromPalette(vscode, "Preferences: Open Settings (UI)");
      await page.locator(".settings-editor .search-container").click();
      await page.keyboard.type(`@id:${SHOWN.join(",")}`);
      const rows = page.locator(".settings-editor .setting-item-contents");
      const expected = [
        "Context Characters Before",
        "Context Chars Before",
        "Debounce Milliseconds",
        "Request Timeout Milliseconds",
        "Request Timeout Ms",
      ];
      // An unset deprecated setting is not listed (`tabRelay.debounceMs`, "Debounce Ms"); a set one is.
      await waitUntil("the Settings page to list the renamed settings", 30_000, async () => {
        const texts = (await rows.locator(".setting-item-label").allInnerTexts()).map((text) => text.trim());
        return [...texts].sort().join("|") === expected.join("|") || undefined;
      }).catch(async (error: unknown) => {
        const texts = await rows.locator(".setting-item-label").allInnerTexts();
        throw new Error(`${String(error)}; listed: ${JSON.stringify(texts)}`);
      });
      await vscode.screenshot("settings-page");
      const deprecation = await rows
        .filter({ hasText: "Request Timeout Ms" })
        .locator(".setting-item-deprecation-message")
        .innerText();
      assert.match(deprecation, /Renamed to tabRelay\.requestTimeoutMilliseconds/);
    } catch (error) {
      await vscode.screenshot("failure").catch(() => undefined);
      throw error;
    }
  });
});
