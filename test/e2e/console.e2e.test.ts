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
import { readSseEvents } from "@tab-relay/shared";
import type { AgentCreated } from "@tab-relay/shared/api";
import { createAgent, createChannel, createUser, postMessage } from "../support/workspace";
import { REPO_ROOT } from "./codeServer";
import {
  byTestId as t,
  chromiumFor,
  ensureConsoleBuilt,
  keepFailedPage,
  LAPTOP,
  PHONE,
  freePort,
  launchChromium,
  openPersonPage,
  pngSize,
  signIn,
  waitForText,
  type PersonPage,
} from "./console/harness";

const OUTPUT = join(REPO_ROOT, "test-output/console");
const { prerequisites, skip } = chromiumFor("console-e2e");

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
  /** An agent whose webhook nobody answers, made through the API. */
  let broken: AgentCreated | undefined;
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
        // A failed delivery is retried only long after the test has ended, so the attempts it counts are its own.
        TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: "3600000",
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

  const step = (name: string, person: PersonPage | undefined, body: () => Promise<void>) =>
    keepFailedPage(OUTPUT, name, person, body);

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
      // Connected to nothing yet (the agent is not running): the heading says created, not connected.
      const panelTitle = await panel.locator("h3").innerText();
      assert.match(panelTitle, /^Echo was created/);
      assert.doesNotMatch(panelTitle, /connected/i);
      // Once the list above has grown by the new agent, the one-time secrets are on screen with the focus in them.
      await page.locator(t("agent-item")).filter({ hasText: "Echo" }).waitFor();
      await page.waitForFunction(`document.activeElement?.closest('[data-testid="secrets-panel"]') != null`, null, {
        timeout: 2_000,
      });
      await expectOnScreen(page, panel.locator("h3"), "the new agent's secrets heading");
      await expectOnScreen(page, panel.locator(t("secret-signing-secret")), "the new agent's signing secret");
      const token = ((await panel.locator(t("secret-token")).textContent()) ?? "").trim();
      const signingSecret = ((await panel.locator(t("secret-signing-secret")).textContent()) ?? "").trim();
      assert.match(token, /^svc_agent_/);
      assert.match(signingSecret, /^whsec_/);
      assert.equal(await panel.locator(t("copy-token")).isVisible(), true, "no copy button for the token");
      assert.equal(
        await panel.locator(t("copy-signing-secret")).isVisible(),
        true,
        "no copy button for the signing secret",
      );

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
      const stored = await page.evaluate<string>(
        "JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })",
      );
      assert.ok(
        !stored.includes(token) && !stored.includes(signingSecret),
        "a secret was kept in the browser's storage",
      );

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

      const mine = page
        .locator(`${t("message-list")} ${t("message")}[data-author-type="user"]`)
        .filter({ hasText: "please say this back" });
      await mine.waitFor();
      assert.equal(
        await mine.locator(".mention").innerText(),
        "@Echo",
        "the mention is not marked in the sent message",
      );
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
      await page
        .locator(`${t("message-list")} ${t("message")}`)
        .filter({ hasText: "gap message 150" })
        .waitFor();
      const texts = await page.locator(`${t("message-list")} ${t("message")} ${t("message-text")}`).allInnerTexts();
      const seen = texts.filter((text) => text.startsWith("gap message "));
      assert.deepEqual(
        seen,
        Array.from({ length: 150 }, (_, i) => `gap message ${i + 1}`),
        "every missed message, once, in order",
      );
      assert.ok(texts.includes("before the gap"), "what was shown before the gap is still there");
    }));

  test("a key created in the API keys view shows its secret once, and revoking it there makes the API answer 401", () =>
    step("revoke-key", owner, async () => {
      const { page } = owner;
      await page.locator(t("nav-keys")).click();
      const form = page.locator(t("create-key-form"));
      await form.locator(t("key-name")).fill("ci-runner");
      const boxes = form.locator(`${t("key-scopes")} input[type="checkbox"]`);
      const states = await boxes.evaluateAll((inputs) =>
        inputs.map((el) => {
          const input = el as unknown as { value: string; checked: boolean; disabled: boolean };
          return { scope: input.value, on: input.checked, held: !input.disabled };
        }),
      );
      assert.ok(states.length > 0 && states.some((s) => s.held), "the form offers no scope the owner holds");
      for (const { scope, on, held } of states)
        assert.equal(on, held, `scope ${scope} starts ${on ? "" : "un"}checked`);
      await form.locator(t("scope-messages.read")).check();
      await form.locator(t("create-key-submit")).click();
      const panel = page.locator(t("secrets-panel"));
      await panel.waitFor();
      assert.match(await panel.locator(t("secrets-warning")).innerText(), /you will not see this again/i);
      await page.locator(t("key-row")).filter({ hasText: "ci-runner" }).waitFor();
      await page.waitForFunction(`document.activeElement?.closest('[data-testid="secrets-panel"]') != null`, null, {
        timeout: 2_000,
      });
      await expectOnScreen(page, panel.locator(t("secret-api-key")), "the new key's secret");
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
      assert.equal(
        await page.locator(t("pause-agent")).isVisible(),
        false,
        "Pause is still offered for a paused agent",
      );
      const paused = await agentApiMe(token);
      assert.equal(paused.status, 403);
      assert.equal((await errorOf(paused)).code, "AGENT_PAUSED");

      await page.locator(t("resume-agent")).click();
      await page.locator(`${t("agent-state")}[data-state="active"]`).waitFor();
      assert.equal((await agentApiMe(token)).status, 200, "the token did not work again after resuming");
    }));

  test("a webhook agent's Socket Mode reads as not used, not as a red Disconnected; an agent without a webhook URL still shows it", () =>
    step("socket-mode", owner, async () => {
      const { id } = needAgent();
      const { page } = owner;
      await openAgentView(page, id);
      const socket = page.locator(t("socket-status"));
      await socket.filter({ hasText: /\S/ }).waitFor();
      assert.match(await socket.innerText(), /not used/i);
      assert.doesNotMatch(
        (await socket.getAttribute("class")) ?? "",
        /socket-disconnected/,
        "the webhook agent's Socket Mode is marked as a fault",
      );

      const listener = await createAgent(relay, { name: "Listener" });
      await page.goto(`${relay.url}/agents/${listener.agent.id}`);
      await page.locator(t("agent-name-heading")).filter({ hasText: "Listener" }).waitFor();
      const listenerSocket = page.locator(`${t("socket-status")}[data-state="disconnected"]`);
      await listenerSocket.waitFor();
      assert.match(await listenerSocket.innerText(), /^Disconnected/);
    }));

  test("an agent whose deliveries fail shows it beside its state, with the failures in a row, in its view and in the list", () =>
    step("delivery-health", owner, async () => {
      const { page } = owner;
      const deadPort = await freePort();
      broken = await createAgent(relay, { name: "Broken", webhook_url: `http://127.0.0.1:${deadPort}/hook` });
      const id = broken.agent.id;
      await page.goto(`${relay.url}/agents/${id}`);
      await page.locator(t("agent-name-heading")).filter({ hasText: "Broken" }).waitFor();
      const health = page.locator(t("delivery-health"));
      await health.waitFor();
      assert.equal(await health.getAttribute("data-health"), "none", "an agent with no delivery yet has a health");
      for (const sent of [1, 2]) {
        await page.locator(t("send-test-event")).click();
        await page
          .locator(`${t("attempt")}[data-outcome="failed"]`)
          .nth(sent - 1)
          .waitFor({ timeout: 15_000 });
        await page.locator(`${t("delivery-health")}[data-failures="${sent}"]`).waitFor();
      }
      assert.equal(await page.locator(t("agent-state")).innerText(), "Active");
      assert.equal(await health.getAttribute("data-health"), "failing");
      assert.match(await health.innerText(), /failed.*2 in a row/i);

      await page.locator(t("nav-agents")).click();
      const card = page.locator(`${t("agent-item")}[data-agent-id="${id}"]`);
      await card.locator(`${t("delivery-health")}[data-health="failing"]`).waitFor();
      const echoCard = page.locator(`${t("agent-item")}[data-agent-id="${needAgent().id}"]`);
      assert.equal(await echoCard.locator(t("delivery-health")).getAttribute("data-health"), "ok");
    }));

  test("setting a new token or signing secret asks first and says what stops working; cancelling changes nothing", () =>
    step("rotate-confirm", owner, async () => {
      assert.ok(broken, "the Broken agent of the previous test is missing");
      const { page } = owner;
      await page.goto(`${relay.url}/agents/${broken.agent.id}`);
      await page.locator(t("agent-name-heading")).filter({ hasText: "Broken" }).waitFor();
      const dialog = page.locator(t("confirm-dialog"));
      const panel = page.locator(t("secrets-panel"));

      await page.locator(t("rotate-token")).click();
      await dialog.waitFor();
      assert.match(await dialog.innerText(), /token.*stops working/is);
      await dialog.locator(t("confirm-cancel")).click();
      await dialog.waitFor({ state: "detached" });
      assert.equal(await panel.count(), 0, "a new token was shown after cancelling");
      assert.equal((await agentApiMe(broken.token)).status, 200, "cancelling still replaced the token");

      await page.locator(t("rotate-signing-secret")).click();
      await dialog.waitFor();
      assert.match(await dialog.innerText(), /signing secret/i);
      assert.match(await dialog.innerText(), /reject|stops? (working|accepting)/i);
      await dialog.locator(t("confirm-cancel")).click();
      await dialog.waitFor({ state: "detached" });
      assert.equal(await panel.count(), 0, "a new signing secret was shown after cancelling");

      await page.locator(t("rotate-token")).click();
      await dialog.locator(t("confirm-ok")).click();
      await panel.waitFor();
      const fresh = ((await panel.locator(t("secret-token")).textContent()) ?? "").trim();
      assert.match(fresh, /^svc_agent_/);
      assert.equal((await agentApiMe(broken.token)).status, 401, "the old token still works after confirming");
      assert.equal((await agentApiMe(fresh)).status, 200, "the new token does not work");
    }));

  test("errors read as sentences without raw field names; a channel name like General Chat is offered as general-chat", () =>
    step("wording", owner, async () => {
      const { page } = owner;
      await page.locator(t("nav-conversations")).click();
      const form = page.locator(t("create-channel-form"));
      await form.waitFor();
      await form.locator(t("channel-name")).fill("general");
      await form.locator("button[type=submit]").click();
      const duplicate = await waitForText(form.locator(t("error")));
      assert.match(duplicate, /general/);
      assert.doesNotMatch(duplicate, /^[\w.]+: /, `a raw field name in "${duplicate}"`);

      await form.locator(t("channel-name")).fill("General Chat");
      await form.locator("button[type=submit]").click();
      const offer = form.locator(t("channel-name-suggestion"));
      await offer.waitFor();
      assert.match(await offer.innerText(), /general-chat/);
      await offer.click();
      assert.equal(await form.locator(t("channel-name")).inputValue(), "general-chat");
      await form.locator("button[type=submit]").click();
      await page.locator(t("conversation-title")).filter({ hasText: "general-chat" }).waitFor();
      assert.match(page.url(), /\/conversations\/channel\/ch_[^/]+$/, `the new channel opened at ${page.url()}`);
      assert.equal(
        await page
          .locator(`main ${t("error")}`)
          .filter({ hasText: /\S/ })
          .count(),
        0,
        "an error shows in the new channel",
      );

      const stranger = await openPersonPage(browser, "stranger", LAPTOP);
      try {
        await stranger.page.goto(`${relay.url}/`);
        const key = stranger.page.locator(t("signin-key"));
        await key.fill("svc_ws_not_a_real_key_0000000000000000");
        await key.press("Enter");
        const refused = await waitForText(stranger.page.locator(t("error")));
        assert.doesNotMatch(refused, /^[\w.]+: /, `a raw field name in "${refused}"`);
      } finally {
        await stranger.page.context().close();
      }
    }));

  test("someone in no conversation yet is told how to start, at laptop and phone widths", async () => {
    const guest = await createUser(relay, "Gus Guest", "guest");
    const person = await openPersonPage(browser, "guest", LAPTOP);
    try {
      await step("empty-state", person, async () => {
        const { page } = person;
        await signIn(page, relay.url, guest.key);
        const empty = page.locator(t("conversations-empty"));
        await empty.waitFor();
        assert.equal(await page.locator(t("home-conversation")).count(), 0);
        assert.match(await empty.innerText(), /no conversation/i);
        assert.match(await empty.innerText(), /direct message|ask/i);
        for (const viewport of [LAPTOP, PHONE]) {
          await page.setViewportSize(viewport);
          const file = join(OUTPUT, `home-empty-${viewport.width}.png`);
          await page.screenshot({ path: file, fullPage: true });
          assert.equal(pngSize(file).width, viewport.width, `${file} has the wrong width`);
        }
      });
      const ownerHome = owner.page;
      await ownerHome.locator(t("nav-conversations")).click();
      await ownerHome.locator(t("home-conversation")).first().waitFor();
      assert.equal(
        await ownerHome.locator(t("conversations-empty")).isVisible(),
        false,
        "the empty state shows beside conversations",
      );
    } finally {
      writeFileSync(join(OUTPUT, "browser-console-guest.log"), `${person.log.join("\n")}\n`);
      assert.deepEqual(person.scriptErrors, []);
      await person.page.context().close();
    }
  });

  test("on a long page the top bar stays in view and the sidebar's background reaches the bottom of the screen", () =>
    step("long-page", owner, async () => {
      const { page } = owner;
      const short = { width: LAPTOP.width, height: 480 };
      await page.setViewportSize(short);
      try {
        await page.goto(`${relay.url}/agents/${needAgent().id}`);
        await page
          .locator(`${t("delivery")}[data-status="delivered"]`)
          .first()
          .waitFor();
        const height = await page.evaluate<number>("document.documentElement.scrollHeight");
        assert.ok(height > 2 * short.height, `the page is only ${height} px high, not a long page`);
        await page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)");
        await page.waitForFunction("window.scrollY > 0");
        const bar = await page.locator(".topbar").boundingBox();
        assert.ok(bar && Math.abs(bar.y) < 0.5, `the top bar is at ${bar?.y ?? "?"} px after scrolling down`);
        const side = await page.locator(t("sidebar")).boundingBox();
        assert.ok(
          side && side.y + side.height >= short.height - 0.5,
          `the sidebar ends at ${side ? side.y + side.height : "?"} px of ${short.height}`,
        );
        const paint = await page.evaluate<string>(
          `getComputedStyle(document.querySelector('[data-testid="sidebar"]')).backgroundColor`,
        );
        assert.notEqual(paint, "rgba(0, 0, 0, 0)", "the sidebar has no background of its own");
      } finally {
        await page.setViewportSize(LAPTOP);
      }
    }));

  test("at phone width the delivery log fits the screen without scrolling inside itself, and the status toast leaves the heading readable", () =>
    step("phone-deliveries", owner, async () => {
      assert.ok(broken, "the Broken agent is missing");
      const { page } = owner;
      await page.setViewportSize(PHONE);
      try {
        await page.goto(`${relay.url}/agents/${broken.agent.id}`);
        await page
          .locator(`${t("attempt")}[data-outcome="failed"]`)
          .first()
          .waitFor();
        const wraps = await page.evaluate<{ scroll: number; client: number }[]>(
          `[...document.querySelectorAll('[data-testid="delivery"] .table-wrap')].map((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }))`,
        );
        assert.ok(wraps.length >= 2, "no attempt tables");
        for (const wrap of wraps)
          assert.ok(
            wrap.scroll <= wrap.client,
            `an attempts table scrolls inside itself: ${wrap.scroll} px in ${wrap.client} px`,
          );
        const times = await page.evaluate<{ height: number; line: number }[]>(
          `[...document.querySelectorAll('[data-testid="attempt"] time')].map((el) => ({ height: el.getBoundingClientRect().height, line: parseFloat(getComputedStyle(el).lineHeight) }))`,
        );
        assert.ok(times.length >= 2, "no attempt times");
        for (const time of times)
          assert.ok(
            time.height <= 2 * time.line + 0.5,
            `an attempt's date takes ${Math.round(time.height / time.line)} lines`,
          );
        const phoneShot = join(OUTPUT, `agent-failing-${PHONE.width}.png`);
        await page.screenshot({ path: phoneShot, fullPage: true });
        assert.equal(pngSize(phoneShot).width, PHONE.width, `${phoneShot} has the wrong width`);

        await page.locator(t("refresh-agent")).click();
        const toast = page.locator(t("status")).filter({ hasText: "Agent refreshed" });
        await toast.waitFor();
        const toastBox = await toast.boundingBox();
        const headingBox = await page.locator(t("agent-name-heading")).boundingBox();
        assert.ok(toastBox && headingBox, "no toast or heading to compare");
        const overlap =
          toastBox.x < headingBox.x + headingBox.width &&
          headingBox.x < toastBox.x + toastBox.width &&
          toastBox.y < headingBox.y + headingBox.height &&
          headingBox.y < toastBox.y + toastBox.height;
        assert.equal(
          overlap,
          false,
          `the toast (${JSON.stringify(toastBox)}) covers the heading (${JSON.stringify(headingBox)})`,
        );
      } finally {
        await page.setViewportSize(LAPTOP);
      }
      const laptopShot = join(OUTPUT, `agent-failing-${LAPTOP.width}.png`);
      await page.screenshot({ path: laptopShot, fullPage: true });
      assert.equal(pngSize(laptopShot).width, LAPTOP.width, `${laptopShot} has the wrong width`);
    }));

  test("another person sees neither the owner's private channel nor controls for an agent they do not own", async () => {
    const { id } = needAgent();
    member = await openPersonPage(browser, "mia", LAPTOP);
    const { page } = member;
    await step("second-person", member, async () => {
      await signIn(page, relay.url, mia.key);
      assert.match(await waitForText(page.locator(t("current-user"))), /^Mia Member · /);

      await page.locator(`${t("conversation-link")}[data-conversation-id="${general.id}"]`).waitFor();
      assert.equal(
        await page.locator(`${t("conversation-link")}[data-conversation-id="${privateChannel.id}"]`).count(),
        0,
      );
      assert.ok(
        !(await page.locator(t("sidebar")).innerText()).includes(privateChannel.name),
        "the private channel's name is in the sidebar",
      );

      await page.goto(`${relay.url}/conversations/channel/${privateChannel.id}`);
      const error = await waitForText(page.locator(`main ${t("error")}`));
      assert.match(error, /not in this channel/i, "the error in place does not say why");
      assert.equal(
        await page.locator(t("composer")).first().isVisible(),
        false,
        "a composer is offered for a channel Mia may not see",
      );
      assert.ok(!(await page.content()).includes(PRIVATE_TEXT), "the private channel's message reached Mia's page");

      await page.goto(`${relay.url}/agents/${id}`);
      await page.locator(t("agent-readonly")).waitFor();
      await page.locator(t("agent-name-heading")).filter({ hasText: "Echo" }).waitFor();
      for (const control of [
        "agent-controls",
        "send-test-event",
        "pause-agent",
        "resume-agent",
        "edit-agent",
        "remove-agent",
        "delivery-list",
      ]) {
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
        await page
          .locator(`${t("delivery")}[data-status="delivered"]`)
          .first()
          .waitFor();
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
        assert.ok(
          size.height >= (width === PHONE.width ? PHONE.height : LAPTOP.height),
          `${file} is only ${size.height} px high`,
        );
      }
    }));

  test("the completion playground streams a real completion at the cursor with the session, its timing, and the model's raw text", () =>
    step("playground", owner, async () => {
      const { page } = owner;
      await page.setViewportSize(LAPTOP);
      await page.locator(t("nav-playground")).click();
      await page.waitForURL(`${relay.url}/playground`);
      // The page as it opens: its own sample, sent as it stands, answers visible text (the local engine's).
      await page.locator(t("playground-send")).click();
      const opening = page.locator(`${t("playground-result")}[data-state="done"]`);
      await opening.waitFor({ timeout: 15_000 });
      const openingAnswer = await opening.locator(t("playground-answer")).innerText();
      assert.match(openingAnswer, /\S/);
      assert.doesNotMatch(openingAnswer, /^\(nothing/, "the playground's own sample answered nothing");
      // A fresh page for the rest, so no "done" from this answer is taken for the next one's.
      await page.reload();
      await page.locator(`${t("playground-result")}[data-state="idle"]`).waitFor({ state: "attached" });

      const earlier = "function total(items) {\n  return items.reduce((sum, item) => sum + item.price, 0);\n}\n\n";
      const before = `${earlier}function total(items) {`;
      const after = "\n\nexport { total };\n";
      const text = page.locator(t("playground-text"));
      await text.fill(before + after);
      await text.evaluate((el, at) => {
        const area = el as unknown as {
          setSelectionRange(start: number, end: number): void;
          dispatchEvent(event: unknown): boolean;
        };
        area.setSelectionRange(at, at);
        area.dispatchEvent(new (globalThis as unknown as { Event: new (type: string) => unknown }).Event("select"));
      }, before.length);
      assert.match(
        await page.locator(t("playground-cursor")).innerText(),
        new RegExp(`line 5, column 24 \\(character ${before.length} of ${(before + after).length}\\)`),
      );
      await page.locator(t("playground-surface")).selectOption("code");
      await page.locator(t("playground-language")).fill("javascript");
      await page.locator(t("playground-send")).click();
      const result = page.locator(`${t("playground-result")}[data-state="done"]`);
      await result.waitFor({ timeout: 15_000 });

      // The same request with the owner's key answers the same text and raw text: the page showed the real answer.
      const direct = await fetch(`${relay.url}/api/v1/tab/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${relay.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({
          stream: true,
          tab_raw_text: true,
          tab_context: {
            surface: "code",
            workspace_slug: relay.workspace.slug,
            entity_id: "console-playground",
            document_type: "plaintext",
            active_text_before_cursor: before,
            active_text_after_cursor: after,
            code_language: "javascript",
          },
        }),
      });
      let answer = "";
      let raw = "";
      for await (const event of readSseEvents(direct.body as ReadableStream<Uint8Array>)) {
        if (event.event === "raw") raw += (JSON.parse(event.data) as { text: string }).text;
        else if (event.data !== "[DONE]")
          answer +=
            (JSON.parse(event.data) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? "";
      }
      assert.match(answer, /items\.reduce/, "the local engine did not continue the function (the test's premise)");
      assert.equal(await result.locator(t("playground-answer")).innerText(), answer);
      assert.equal(await result.locator(t("playground-raw")).innerText(), raw);
      assert.match(await result.locator(t("playground-finish")).innerText(), /^(stop|length)$/);
      const first = Number((await result.locator(t("playground-first-ms")).innerText()).replace(/ ms$/, ""));
      const total = Number((await result.locator(t("playground-total-ms")).innerText()).replace(/ ms$/, ""));
      assert.ok(
        Number.isInteger(first) && Number.isInteger(total) && first <= total,
        `timing ${first} ms to first text, ${total} ms in all`,
      );
      for (const viewport of [LAPTOP, PHONE]) {
        await page.setViewportSize(viewport);
        await checkLayout(page, viewport.width === PHONE.width);
        const file = join(OUTPUT, `playground-${viewport.width}.png`);
        await page.screenshot({ path: file, fullPage: true });
        assert.equal(pngSize(file).width, viewport.width, `${file} has the wrong width`);
      }
      await page.setViewportSize(LAPTOP);
    }));

  test("no page raised a script error, and the relay logged no error", () => {
    const errors = [owner, member].flatMap((person) => person?.scriptErrors ?? []);
    assert.deepEqual(errors, []);
    assert.deepEqual(
      relayLog.filter((line) => (JSON.parse(line) as { level: string }).level === "error"),
      [],
    );
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
    const overflow = await page.evaluate<{ scroll: number; inner: number }>(
      "({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth })",
    );
    assert.ok(
      overflow.scroll <= overflow.inner,
      `the page scrolls sideways: ${overflow.scroll} px of content in ${overflow.inner} px`,
    );
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

  /** The element is inside the window, below the top bar that stays over the page. */
  async function expectOnScreen(page: Page, locator: Locator, what: string): Promise<void> {
    const box = await locator.boundingBox();
    const bar = await page.locator(".topbar").boundingBox();
    const height = page.viewportSize()?.height ?? 0;
    assert.ok(box && bar, `${what} or the top bar has no box`);
    assert.ok(
      box.y >= bar.y + bar.height - 0.5 && box.y + box.height <= height + 0.5,
      `${what} is at ${box.y}-${box.y + box.height} px, not between the top bar (${bar.y + bar.height} px) and ${height} px`,
    );
  }

  async function expectNoWiderThan(locator: Locator, width: number): Promise<void> {
    const box = await locator.boundingBox();
    assert.ok(
      box && box.x + box.width <= width + 0.5,
      `main ends at ${box ? box.x + box.width : "?"} px, past ${width} px`,
    );
  }
});
