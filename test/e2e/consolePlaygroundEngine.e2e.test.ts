// The console's completion playground in a browser against a relay running the embedded engine on a GGUF model
// generated here: the page says which model answered, as the relay's model list names it. Headless Chromium
// (Debian's, through playwright-core), as in console.e2e.test.ts; screenshots go to test-output/console-engine/.
import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import { testEngineDir, testModel } from "../support/engine";
import { startTestRelay, type TestRelay } from "../support/relayHarness";
import { REPO_ROOT } from "./codeServer";
import {
  byTestId as t,
  chromiumFor,
  ensureConsoleBuilt,
  keepFailedPage,
  LAPTOP,
  launchChromium,
  openPersonPage,
  signIn,
  type PersonPage,
} from "./console/harness";

const OUTPUT = join(REPO_ROOT, "test-output/console-engine");
const { prerequisites, skip } = chromiumFor("console-engine-e2e");

describe("the console playground with the embedded engine", { skip, timeout: 180_000 }, () => {
  let relay: TestRelay;
  let browser: Browser;
  let owner: PersonPage;

  before(async () => {
    if (!prerequisites.ready) throw new Error(`cannot run the console browser test: ${prerequisites.reason}`);
    rmSync(OUTPUT, { recursive: true, force: true });
    mkdirSync(OUTPUT, { recursive: true });
    ensureConsoleBuilt();
    const { path } = testModel({ seed: 3, oneLine: true });
    relay = await startTestRelay({
      env: {
        TAB_RELAY_MODEL: path,
        TAB_RELAY_ENGINE_DIR: await testEngineDir(),
        TAB_RELAY_ENGINE_THREADS: "1",
        TAB_RELAY_ENGINE_CONTEXT: "1024",
        TAB_RELAY_CACHE_ENTRIES: "0",
      },
    });
    browser = await launchChromium();
    owner = await openPersonPage(browser, "owner", LAPTOP);
  });

  after(async () => {
    await browser?.close();
    await relay?.close();
  });

  test("a completion names the model that answered: the relay's id, the GGUF's name and the llama.cpp build", () =>
    keepFailedPage(OUTPUT, "playground", owner, async () => {
      const { page } = owner;
      await signIn(page, relay.url, relay.apiKey);
      await page.locator(t("nav-playground")).click();
      await page.waitForURL(`${relay.url}/playground`);
      await page.locator(t("playground-send")).click();
      const result = page.locator(`${t("playground-result")}[data-state="done"]`);
      await result.waitFor({ timeout: 30_000 });
      assert.equal(
        await result.locator(t("playground-model")).innerText(),
        "tab-v1: tab-relay test model 3 on the embedded engine (CPU)",
      );
      assert.ok((await result.locator(t("playground-raw")).innerText()).length > 0, "the model wrote text");
      await page.screenshot({ path: join(OUTPUT, "playground-engine.png"), fullPage: true });
      assert.deepEqual(owner.scriptErrors, []);
    }));
});
