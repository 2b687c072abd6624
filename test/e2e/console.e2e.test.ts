// The relay's web console end to end, as people use it: headless Chromium (Debian's, through playwright-core) on
// the console the relay serves, with the example echo agent answering over real webhooks. The relay and the agent
// run in this process. Screenshots, the browser's console and the relay's log go to test-output/console/.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Locator, Page } from "playwright-core";
import { startEchoAgent, type EchoAgent } from "../../examples/echo-agent/server";
import { createJsonLogger } from "../../relay/src/logger";
import { errorOf, startTestRelay, type TestRelay } from "../support/relayHarness";
import { createChannel, createUser, postMessage } from "../support/workspace";
import { REPO_ROOT } from "./codeServer";
import {
  byTestId as t,
  ensureChromium,
  ensureConsoleBuilt,
  freePort,
  launchChromium,
  openPersonPage,
  pngSize,
  signIn,
  waitForText,
  type PersonPage,
} from "./console/harness";

const OUTPUT = join(REPO_ROOT, "test-output/console");
const LAPTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

const prerequisites = ensureChromium();
const skip = !prerequisites.ready && !process.env.CI ? `SKIPPED, NOT TESTED: ${prerequisites.reason}` : false;
if (skip) console.error(`\n${"!".repeat(100)}\n[console-e2e] ${skip}\n${"!".repeat(100)}\n`);

/** The agent the first test creates through the console; later tests use it. */
interface CreatedInTheConsole {
  id: string;
  token: string;
  signingSecret: string;
}

describe("the web console in a browser", { skip, timeout: 180_000 }, () => {
  let relay: TestRelay;
  let browser: Browser;
  let owner: PersonPage;
  let member: PersonPage | undefined;
  let echo: EchoAgent | undefined;
  let agent: CreatedInTheConsole | undefined;
  let mia: { id: string; name: string; key: string };
  let general: { id: string };
  let privateChannel: { id: string; name: string };
  const relayLog: string[] = [];
  const echoLog: string[] = [];
  const PRIVATE_TEXT = "the owner's private plans";

  before(async () => {
    if (!prerequisites.ready) throw new Error(`cannot run the console browser test: ${prerequisites.reason}`);
    rmSync(OUTPUT, { recursive: true, force: true });
    mkdirSync(OUTPUT, { recursive: true });
    ensureConsoleBuilt();
    relay = await startTestRelay({
      env: {
        TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
        TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000,session_reads=100000,session_writes=100000",
      },
      logger: createJsonLogger({ level: "info", write: (line) => relayLog.push(line), now: () => Date.now() }),
    });
    mia = await createUser(relay, "Mia Member", "member");
    general = await createChannel(relay, "general");
    await postMessage(relay, { type: "channel", id: general.id }, "Welcome to general");
    privateChannel = await createChannel(relay, "owners-only", "private");
    await postMessage(relay, { type: "channel", id: privateChannel.id }, PRIVATE_TEXT);
    browser = await launchChromium();
    owner = await openPersonPage(browser, "owner", LAPTOP);
  });

  after(async () => {
    const pages = [owner, member].filter((p): p is PersonPage => p !== undefined);
    if (pages.length) writeFileSync(join(OUTPUT, "browser-console.log"), `${pages.flatMap((p) => p.log).join("\n")}\n`);
    writeFileSync(join(OUTPUT, "relay.log"), relayLog.join(""));
    writeFileSync(join(OUTPUT, "echo-agent.log"), `${echoLog.join("\n")}\n`);
    await browser?.close();
    await echo?.close();
    await relay?.close();
  });

  /** Runs a step; when it fails, the page it failed on is kept as failure-<name>.png. */
  async function step(name: string, person: PersonPage | undefined, body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (error) {
      await person?.page.screenshot({ path: join(OUTPUT, `failure-${name}.png`), fullPage: true }).catch(() => undefined);
      throw error;
    }
  }

  function needAgent(): CreatedInTheConsole {
    assert.ok(agent, "the agent created in the first test is missing (that test failed)");
    return agent;
  }

  async function openAgentView(page: Page, id: string): Promise<void> {
    await page.locator(t("nav-agents")).click();
    await page.locator(`${t("agent-item")}[data-agent-id="${id}"] a`).click();
    await page.waitForURL(`${relay.url}/agents/${id}`);
    await page.locator(t("agent-name-heading")).filter({ hasText: "Echo" }).waitFor();
  }

  function agentApiMe(token: string): Promise<Response> {
    return fetch(`${relay.url}/api/v1/agent-api/me`, { headers: { authorization: `Bearer ${token}` } });
  }

  test("signing in shows the person; a new agent's secrets are shown once; a test event to the running agent is delivered", () =>
    step("create-agent", owner, async () => {
      const { page } = owner;
      await signIn(page, relay.url, relay.apiKey);
      assert.match(await waitForText(page.locator(t("current-user"))), /^Olive Owner · /);

      await page.locator(t("nav-agents")).click();
      const port = await freePort();
      const webhookUrl = `http://127.0.0.1:${port}/`;
      const form = page.locator(t("create-agent-form"));
      await form.locator(t("agent-name")).fill("Echo");
      await form.locator(t("agent-description")).fill("examples/echo-agent");
      await form.locator(t("agent-webhook-url")).fill(webhookUrl);
      await form.locator(t("create-agent-submit")).click();

      const panel = page.locator(t("secrets-panel"));
      await panel.waitFor();
      assert.match(await panel.locator(t("secrets-warning")).innerText(), /you will not see this again/i);
      const token = ((await panel.locator(t("secret-token")).textContent()) ?? "").trim();
      const signingSecret = ((await panel.locator(t("secret-signing-secret")).textContent()) ?? "").trim();
      assert.match(token, /^svc_agent_/);
      assert.match(signingSecret, /^whsec_/);
      assert.equal(await panel.locator(t("copy-token")).isVisible(), true, "no copy button for the token");
      assert.equal(await panel.locator(t("copy-signing-secret")).isVisible(), true, "no copy button for the signing secret");

      const item = page.locator(t("agent-item")).filter({ hasText: "Echo" });
      await item.waitFor();
      const id = await item.getAttribute("data-agent-id");
      assert.ok(id, "the new agent has no id in the list");
      agent = { id, token, signingSecret };

      await panel.locator(t("secrets-done")).click();
      await panel.waitFor({ state: "detached" });
      const html = await page.content();
      assert.ok(!html.includes(token), "the token is still in the page after dismissing it");
      assert.ok(!html.includes(signingSecret), "the signing secret is still in the page after dismissing it");
      const stored = await page.evaluate<string>("JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })");
      assert.ok(!stored.includes(token) && !stored.includes(signingSecret), "a secret was kept in the browser's storage");

      echo = await startEchoAgent({ signingSecret, token, port, log: (entry) => echoLog.push(JSON.stringify(entry)) });
      await openAgentView(page, id);
      assert.equal(await waitForText(page.locator(t("webhook-url"))), webhookUrl);
      const viewHtml = await page.content();
      assert.ok(!viewHtml.includes(token) && !viewHtml.includes(signingSecret), "the agent's view shows a secret");

      await page.locator(t("send-test-event")).click();
      const delivered = page.locator(`${t("delivery")}[data-event-type="ping"][data-status="delivered"]`);
      await delivered.waitFor({ timeout: 15_000 });
      const attempt = delivered.locator(`${t("attempt")}[data-outcome="success"]`);
      assert.match(await attempt.innerText(), /Success · 204/);
      assert.deepEqual(
        echo.events.map((event) => event.type),
        ["ping"],
        "the echo agent did not verify exactly one ping",
      );
    }));

  test("a message mentioning the agent, picked from the @mention list with the keyboard, gets its reply live", () =>
    step("mention", owner, async () => {
      needAgent();
      const { page } = owner;
      await page.locator(`${t("conversation-link")}[data-conversation-id="${general.id}"]`).click();
      await page.locator(t("conversation-title")).filter({ hasText: "general" }).waitFor();
      await page.locator(t("message")).filter({ hasText: "Welcome to general" }).waitFor();
      // Survives only if the page is never reloaded.
      await page.evaluate("window.__sameDocument = true");

      const composer = page.locator(t("composer"));
      const input = composer.locator(t("composer-input"));
      const option = composer.locator(`${t("mention-listbox")} ${t("mention-option")}`);
      // The list of people and agents loads beside the messages; typing again after it has arrived finds it.
      for (let attempt = 0; ; attempt++) {
        await input.fill("");
        await input.pressSequentially("@Ec");
        try {
          await option.first().waitFor({ timeout: 2_000 });
          break;
        } catch (error) {
          if (attempt >= 3) throw error;
        }
      }
      assert.equal(await option.count(), 1, "more than Echo matches @Ec");
      assert.match((await option.first().textContent()) ?? "", /^Echo/);
      assert.equal(await option.first().getAttribute("aria-selected"), "true");
      assert.equal(await option.first().getAttribute("data-member-type"), "agent");
      await input.press("Enter");
      await composer.locator(t("mention-listbox")).waitFor({ state: "hidden" });
      assert.equal(await input.inputValue(), "@Echo ");
      await input.pressSequentially("please say this back");
      await input.press("Enter");

      const mine = page.locator(`${t("message-list")} ${t("message")}[data-author-type="user"]`).filter({ hasText: "please say this back" });
      await mine.waitFor();
      assert.equal(await mine.locator(".mention").innerText(), "@Echo", "the mention is not marked in the sent message");
      const reply = page.locator(`${t("message-list")} ${t("message")}[data-author-type="agent"]`);
      await reply.first().waitFor({ timeout: 15_000 });
      assert.equal(await reply.first().locator(t("message-text")).innerText(), "Echo: please say this back");
      assert.equal(await reply.first().locator(t("message-author")).innerText(), "Echo");
      assert.equal(await page.evaluate<unknown>("window.__sameDocument"), true, "the page was reloaded");
    }));

  test("messages posted while the live connection was down, more than a page of them, all appear once it is back", () =>
    step("reconnect", owner, async () => {
      const { page } = owner;
      // The browser's offline mode leaves open WebSockets alone, so the page's WebSocket is wrapped to drop the live
      // connection and have the relay refuse new ones (a path it has no endpoint at) until allowed again.
      await page.addInitScript(`(() => {
        const Native = window.WebSocket;
        const sockets = [];
        let blocked = false;
        window.__refused = 0;
        window.__dropLive = () => { blocked = true; for (const socket of sockets) socket.close(); };
        window.__allowLive = () => { blocked = false; };
        window.WebSocket = class extends Native {
          constructor(url, protocols) {
            if (blocked) window.__refused += 1;
            super(blocked ? String(url).replace("/api/v1/live", "/api/v1/offline") : url, protocols);
            sockets.push(this);
          }
        };
      })();`);
      const busy = await createChannel(relay, "busy");
      await postMessage(relay, { type: "channel", id: busy.id }, "before the gap");
      await page.goto(`${relay.url}/conversations/channel/${busy.id}`);
      await page.locator(t("conversation-title")).filter({ hasText: "busy" }).waitFor();
      const status = page.locator("#live-status");
      await status.filter({ hasText: "Live" }).waitFor();
      await page.evaluate("window.__dropLive()");
      await page.locator('#live-status[data-state="disconnected"]').waitFor();
      // More than the hundred the console reads in one page, so the gap must be read back page by page.
      for (let i = 1; i <= 150; i++) await postMessage(relay, { type: "channel", id: busy.id }, `gap message ${i}`);
      // At least one reconnection is refused before the relay lets it in again, as when a relay restarts.
      await page.waitForFunction(() => (globalThis as unknown as { __refused: number }).__refused >= 1);
      await page.evaluate("window.__allowLive()");
      await status.filter({ hasText: "Live" }).waitFor({ timeout: 20_000 });
      await page.locator(`${t("message-list")} ${t("message")}`).filter({ hasText: "gap message 150" }).waitFor();
      const texts = await page.locator(`${t("message-list")} ${t("message")} ${t("message-text")}`).allInnerTexts();
      const seen = texts.filter((text) => text.startsWith("gap message "));
      assert.deepEqual(seen, Array.from({ length: 150 }, (_, i) => `gap message ${i + 1}`), "every missed message, once, in order");
      assert.ok(texts.includes("before the gap"), "what was shown before the gap is still there");
    }));

  test("a key created in the API keys view shows its secret once, and revoking it there makes the API answer 401", () =>
    step("revoke-key", owner, async () => {
      const { page } = owner;
      await page.locator(t("nav-keys")).click();
      const form = page.locator(t("create-key-form"));
      await form.locator(t("key-name")).fill("ci-runner");
      await form.locator(t("scope-messages.read")).check();
      await form.locator(t("create-key-submit")).click();
      const panel = page.locator(t("secrets-panel"));
      await panel.waitFor();
      assert.match(await panel.locator(t("secrets-warning")).innerText(), /you will not see this again/i);
      const secret = ((await panel.locator(t("secret-api-key")).textContent()) ?? "").trim();
      assert.match(secret, /^svc_ws_/);
      const me = (key: string) => fetch(`${relay.url}/api/v1/me`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal((await me(secret)).status, 200, "the new key does not work");
      await panel.locator(t("secrets-done")).click();
      await panel.waitFor({ state: "detached" });
      assert.ok(!(await page.content()).includes(secret), "the key's secret is still in the page");

      const row = page.locator(t("key-row")).filter({ hasText: "ci-runner" });
      await row.waitFor();
      const keyId = await row.getAttribute("data-key-id");
      assert.equal(await row.getAttribute("data-revoked"), "false");
      await row.locator(t("revoke-key")).click();
      const dialog = page.locator(t("confirm-dialog"));
      await dialog.waitFor();
      await dialog.locator(t("confirm-ok")).click();
      const revoked = page.locator(`${t("key-row")}[data-key-id="${keyId}"][data-revoked="true"]`);
      await revoked.waitFor();
      assert.match(await revoked.locator(t("key-revoked")).innerText(), /revoked/);
      assert.equal(await revoked.locator(t("revoke-key")).count(), 0, "a revoked key can still be revoked");
      const answer = await me(secret);
      assert.equal(answer.status, 401);
      assert.equal((await errorOf(answer)).code, "UNAUTHORIZED");
      // Revoking another key leaves the owner's own session alone.
      assert.equal(await page.locator(`${t("live-status")}[data-state="connected"]`).count(), 1);
    }));

  test("pausing the agent from its view shows it paused, and the Agent API answers 403 AGENT_PAUSED", () =>
    step("pause", owner, async () => {
      const { id, token } = needAgent();
      const { page } = owner;
      assert.equal((await agentApiMe(token)).status, 200, "the agent's token did not work before pausing");
      await openAgentView(page, id);
      await page.locator(`${t("agent-state")}[data-state="active"]`).waitFor();
      await page.locator(t("pause-agent")).click();
      await page.locator(`${t("agent-state")}[data-state="paused"]`).waitFor();
      assert.equal(await page.locator(t("agent-state")).innerText(), "Paused");
      await page.locator(t("resume-agent")).waitFor();
      assert.equal(await page.locator(t("pause-agent")).isVisible(), false, "Pause is still offered for a paused agent");
      const paused = await agentApiMe(token);
      assert.equal(paused.status, 403);
      assert.equal((await errorOf(paused)).code, "AGENT_PAUSED");

      await page.locator(t("resume-agent")).click();
      await page.locator(`${t("agent-state")}[data-state="active"]`).waitFor();
      assert.equal((await agentApiMe(token)).status, 200, "the token did not work again after resuming");
    }));

  test("another person sees neither the owner's private channel nor controls for an agent they do not own", async () => {
    const { id } = needAgent();
    member = await openPersonPage(browser, "mia", LAPTOP);
    const { page } = member;
    await step("second-person", member, async () => {
      await signIn(page, relay.url, mia.key);
      assert.match(await waitForText(page.locator(t("current-user"))), /^Mia Member · /);

      await page.locator(`${t("conversation-link")}[data-conversation-id="${general.id}"]`).waitFor();
      assert.equal(await page.locator(`${t("conversation-link")}[data-conversation-id="${privateChannel.id}"]`).count(), 0);
      assert.ok(!(await page.locator(t("sidebar")).innerText()).includes(privateChannel.name), "the private channel's name is in the sidebar");

      await page.goto(`${relay.url}/conversations/channel/${privateChannel.id}`);
      const error = await waitForText(page.locator(`main ${t("error")}`));
      assert.match(error, /not in this channel/i, "the error in place does not say why");
      assert.equal(await page.locator(t("composer")).first().isVisible(), false, "a composer is offered for a channel Mia may not see");
      assert.ok(!(await page.content()).includes(PRIVATE_TEXT), "the private channel's message reached Mia's page");

      await page.goto(`${relay.url}/agents/${id}`);
      await page.locator(t("agent-readonly")).waitFor();
      await page.locator(t("agent-name-heading")).filter({ hasText: "Echo" }).waitFor();
      for (const control of ["agent-controls", "send-test-event", "pause-agent", "resume-agent", "edit-agent", "remove-agent", "delivery-list"]) {
        assert.equal(await page.locator(t(control)).count(), 0, `Mia is shown ${control} for the owner's agent`);
      }
    });
  });

  test("screenshots at laptop and phone widths: the conversation and the agent's management view, phone without sideways scrolling", () =>
    step("screenshots", owner, async () => {
      const { id } = needAgent();
      const { page } = owner;
      const shots: { file: string; width: number }[] = [];
      for (const viewport of [LAPTOP, PHONE]) {
        await page.setViewportSize(viewport);
        const phone = viewport.width === PHONE.width;

        await page.goto(`${relay.url}/conversations/channel/${general.id}`);
        await page.locator(`${t("message-list")} ${t("message")}[data-author-type="agent"]`).waitFor();
        await checkLayout(page, phone);
        const conversation = join(OUTPUT, `conversation-${viewport.width}.png`);
        await page.screenshot({ path: conversation, fullPage: true });
        shots.push({ file: conversation, width: viewport.width });
        if (phone) await checkMenu(page);

        await page.goto(`${relay.url}/agents/${id}`);
        await page.locator(`${t("delivery")}[data-status="delivered"]`).first().waitFor();
        await page.locator(t("agent-controls")).waitFor();
        await checkLayout(page, phone);
        const management = join(OUTPUT, `agent-${viewport.width}.png`);
        await page.screenshot({ path: management, fullPage: true });
        shots.push({ file: management, width: viewport.width });
        if (phone) await checkMenu(page);
      }
      for (const { file, width } of shots) {
        assert.ok(existsSync(file), `${file} was not written`);
        const size = pngSize(file);
        assert.equal(size.width, width, `${file} is ${size.width} px wide`);
        assert.ok(size.height >= (width === PHONE.width ? PHONE.height : LAPTOP.height), `${file} is only ${size.height} px high`);
      }
    }));

  test("no page raised a script error, and the relay logged no error", () => {
    const errors = [owner, member].flatMap((person) => person?.scriptErrors ?? []);
    assert.deepEqual(errors, []);
    assert.deepEqual(relayLog.filter((line) => (JSON.parse(line) as { level: string }).level === "error"), []);
  });

  /** At phone width the sidebar is a menu behind a button and nothing scrolls sideways; at laptop width it is always there. */
  async function checkLayout(page: Page, phone: boolean): Promise<void> {
    const menuButton = page.locator(t("menu-button"));
    const sidebar = page.locator(t("sidebar"));
    if (phone) {
      assert.equal(await menuButton.isVisible(), true, "no menu button at phone width");
      assert.equal(await sidebar.isVisible(), false, "the sidebar is open at phone width");
    } else {
      assert.equal(await menuButton.isVisible(), false, "a menu button at laptop width");
      assert.equal(await sidebar.isVisible(), true, "no sidebar at laptop width");
    }
    const overflow = await page.evaluate<{ scroll: number; inner: number }>("({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth })");
    assert.ok(overflow.scroll <= overflow.inner, `the page scrolls sideways: ${overflow.scroll} px of content in ${overflow.inner} px`);
    await expectNoWiderThan(page.locator("main"), overflow.inner);
  }

  /** The phone's menu button opens the sidebar, and Escape closes it again. */
  async function checkMenu(page: Page): Promise<void> {
    const sidebar = page.locator(t("sidebar"));
    await page.locator(t("menu-button")).click();
    await sidebar.locator(t("nav-agents")).waitFor({ state: "visible" });
    await page.keyboard.press("Escape");
    await sidebar.waitFor({ state: "hidden" });
  }

  async function expectNoWiderThan(locator: Locator, width: number): Promise<void> {
    const box = await locator.boundingBox();
    assert.ok(box && box.x + box.width <= width + 0.5, `main ends at ${box ? box.x + box.width : "?"} px, past ${width} px`);
  }
});
