// The console's People and Audit log views end to end: headless Chromium on the console a real relay serves. An owner
// adds, re-roles and removes a person, the last owner's refusal is read in words, a member and an admin are offered
// only what the API lets them do, and the audit log lists what was just done. Screenshots and logs go to
// test-output/console-people/.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { createJsonLogger } from "../../relay/src/logger";
import { startTestRelay, type TestRelay } from "../support/relayHarness";
import type { Agent, User } from "@tab-relay/shared/api";
import { createAgent, createUser } from "../support/workspace";
import { REPO_ROOT } from "./codeServer";
import {
  byTestId as t,
  chromiumFor,
  ensureConsoleBuilt,
  keepFailedPage,
  LAPTOP,
  PHONE,
  launchChromium,
  openPersonPage,
  pngSize,
  signIn,
  waitForText,
  type PersonPage,
} from "./console/harness";

const OUTPUT = join(REPO_ROOT, "test-output/console-people");
const execFileAsync = promisify(execFile);
const { prerequisites, skip } = chromiumFor("console-people-e2e");

describe("the console's People and Audit log views in a browser", { skip, timeout: 180_000 }, () => {
  let relay: TestRelay;
  let browser: Browser;
  let owner: PersonPage;
  const others: PersonPage[] = [];
  let mia: { id: string; key: string };
  let adam: { id: string; key: string };
  /** The person the owner adds in the first test; later tests re-role and remove them. */
  let pat: { id: string; key: string } | undefined;
  const relayLog: string[] = [];

  before(async () => {
    if (!prerequisites.ready) throw new Error(`cannot run the console browser test: ${prerequisites.reason}`);
    rmSync(OUTPUT, { recursive: true, force: true });
    mkdirSync(OUTPUT, { recursive: true });
    ensureConsoleBuilt();
    relay = await startTestRelay({
      env: { TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000,session_reads=100000,session_writes=100000" },
      logger: createJsonLogger({ level: "info", write: (line) => relayLog.push(line), now: () => Date.now() }),
    });
    mia = await createUser(relay, "Mia Member", "member");
    adam = await createUser(relay, "Adam Admin", "admin");
    browser = await launchChromium();
    owner = await openPersonPage(browser, "owner", LAPTOP);
  });

  after(async () => {
    const pages = [owner, ...others].filter((p): p is PersonPage => p !== undefined);
    if (pages.length) writeFileSync(join(OUTPUT, "browser-console.log"), `${pages.flatMap((p) => p.log).join("\n")}\n`);
    writeFileSync(join(OUTPUT, "relay.log"), relayLog.join(""));
    await browser?.close();
    await relay?.close();
  });

  const step = (name: string, person: PersonPage | undefined, body: () => Promise<void>) =>
    keepFailedPage(OUTPUT, name, person, body);

  function needPat(): { id: string; key: string } {
    assert.ok(pat, "the person added in the first test is missing (that test failed)");
    return pat;
  }

  function row(page: Page, id: string) {
    return page.locator(`${t("person-row")}[data-user-id="${id}"]`);
  }

  async function openPeople(page: Page): Promise<void> {
    await page.locator(t("nav-people")).click();
    await page.waitForURL(`${relay.url}/people`);
    await page.locator(t("person-row")).first().waitFor();
  }

  async function usersByApi(): Promise<User[]> {
    return ((await (await relay.request("/api/v1/users")).json()) as { data: User[] }).data;
  }

  async function optionsOf(page: Page, selector: string): Promise<string[]> {
    return page.locator(`${selector} option`).evaluateAll((options) => options.map((o) => o.getAttribute("value")));
  }

  /**
   * Runs a copied install line in a shell, with `code` standing in for VS Code's command (it records its arguments);
   * resolves with the file it downloaded. test/e2e/vsixDownload.e2e.test.ts installs such a file in a real VS Code.
   * Asynchronously: the relay answering the download runs in this process.
   */
  async function runInstallLine(line: string): Promise<{ file: Buffer; codeArgs: string[] }> {
    const dir = mkdtempSync(join(tmpdir(), "tab-relay-install-line-"));
    try {
      await execFileAsync("bash", ["-c", `code() { printf '%s\\n' "$@" > code-args; }\n${line}`], {
        cwd: dir,
        timeout: 30_000,
      });
      return {
        file: readFileSync(join(dir, "tab-relay.vsix")),
        codeArgs: readFileSync(join(dir, "code-args"), "utf8").split("\n").filter(Boolean),
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  test("the first page after signing in gives the install line for the relay's own extension and the settings, and the line works", () =>
    step("vscode-setup", owner, async () => {
      // The package a relay in this checkout serves (npm start makes it; packaged here when missing or stale).
      const ensure = spawnSync(process.execPath, [join(REPO_ROOT, "scripts/ensure-vsix.mjs")], {
        encoding: "utf8",
        timeout: 180_000,
      });
      assert.equal(ensure.status, 0, ensure.stderr);
      const { page } = owner;
      await signIn(page, relay.url, relay.apiKey);
      const block = page.locator(t("vscode-setup"));
      await block.waitFor();
      const line = ((await block.locator(t("secret-vscode-install-line")).textContent()) ?? "").trim();
      assert.equal(
        line,
        `curl -fsSLo tab-relay.vsix ${relay.url}/downloads/tab-relay.vsix && code --install-extension tab-relay.vsix`,
      );
      assert.equal(await block.locator(t("copy-vscode-install-line")).isVisible(), true);
      assert.equal(
        ((await block.locator(t("secret-vscode-settings")).textContent()) ?? "").trim(),
        `"tabRelay.relayUrl": "${relay.url}", "tabRelay.workspaceSlug": "acme"`,
      );
      assert.match(await block.locator(t("vscode-key-step")).innerText(), /“Tab Relay: Set API Key”/);
      const { file, codeArgs } = await runInstallLine(line);
      assert.ok(file.equals(readFileSync(join(REPO_ROOT, "extension/dist/tab-relay-vscode.vsix"))));
      assert.deepEqual(codeArgs, ["--install-extension", "tab-relay.vsix"]);
      await page.screenshot({ path: join(OUTPUT, "home-vscode-setup-1280.png"), fullPage: true });
    }));

  test("an owner adds a person; their first key is shown once with the install line and the VS Code settings, and it works", () =>
    step("add", owner, async () => {
      const { page } = owner;
      await openPeople(page);
      assert.match(await row(page, mia.id).innerText(), /Mia Member[\s\S]*member[\s\S]*Joined/);

      const form = page.locator(t("add-person-form"));
      assert.deepEqual(await optionsOf(page, `${t("add-person-form")} select`), ["owner", "admin", "member", "guest"]);
      await form.locator(t("person-name")).fill("Pat Person");
      await form.locator("select").selectOption("member");
      await form.locator(t("add-person-submit")).click();

      const panel = page.locator(t("secrets-panel"));
      await panel.waitFor();
      assert.match(await panel.locator(t("secrets-warning")).innerText(), /you will not see this again/i);
      const key = ((await panel.locator(t("secret-api-key")).textContent()) ?? "").trim();
      assert.match(key, /^svc_ws_/);
      assert.equal(
        ((await panel.locator(t("secret-setup")).textContent()) ?? "").trim(),
        `"tabRelay.relayUrl": "${relay.url}", "tabRelay.workspaceSlug": "acme"`,
      );
      assert.equal(await panel.locator(t("copy-setup")).isVisible(), true, "no copy button for the settings line");
      assert.match(await panel.locator(t("setup-steps")).innerText(), /“Tab Relay: Set API Key”/);
      const install = ((await panel.locator(t("secret-install")).textContent()) ?? "").trim();
      assert.equal(
        install,
        `curl -fsSLo tab-relay.vsix ${relay.url}/downloads/tab-relay.vsix && code --install-extension tab-relay.vsix`,
      );
      assert.equal(await panel.locator(t("copy-install")).isVisible(), true, "no copy button for the install line");

      const me = await relay.request("/api/v1/me", { key });
      assert.equal(me.status, 200);
      const person = ((await me.json()) as { data: { user: { id: string; name: string; role: string } } }).data.user;
      assert.equal(person.name, "Pat Person");
      pat = { id: person.id, key };

      const added = row(page, person.id);
      await added.waitFor();
      assert.equal(await added.getAttribute("data-role"), "member");
      await panel.locator(t("secrets-done")).click();
      assert.ok(!(await page.content()).includes(key), "the key is still in the page after hiding it");
    }));

  test("the owner changes the person's role, and the list and the API agree", () =>
    step("re-role", owner, async () => {
      const { id } = needPat();
      const { page } = owner;
      await row(page, id).locator(t("person-role-select")).selectOption("admin");
      await row(page, id).locator(t("change-role")).click();
      await page.locator(`${t("person-row")}[data-user-id="${id}"][data-role="admin"]`).waitFor();
      assert.equal((await usersByApi()).find((u) => u.id === id)?.role, "admin");
    }));

  test("the last owner demoting themselves is refused in words that name them, and stays an owner", () =>
    step("last-owner", owner, async () => {
      const { page } = owner;
      const olive = (await usersByApi()).find((u) => u.role === "owner");
      assert.ok(olive);
      const own = row(page, olive.id);
      assert.equal(await own.locator(t("remove-person")).count(), 0, "the owner is offered removing themselves");
      await own.locator(t("person-role-select")).selectOption("member");
      await own.locator(t("change-role")).click();
      const error = await waitForText(own.locator(t("error")));
      assert.equal(error, "Olive Owner is the workspace's last owner and stays one; make someone else an owner first.");
      assert.equal(await own.locator(t("error")).getAttribute("data-code"), "CONFLICT");
      assert.equal((await usersByApi()).find((u) => u.id === olive.id)?.role, "owner");
      await page.reload();
      await row(page, olive.id).waitFor();
      assert.equal(await row(page, olive.id).getAttribute("data-role"), "owner");
    }));

  test("removing a person asks first, saying their agents are paused; cancelling keeps them, confirming pauses their agent", () =>
    step("remove", owner, async () => {
      const { id, key } = needPat();
      const { page } = owner;
      const created = await createAgent(relay, { name: "Pat's helper" }, key);

      const remove = row(page, id).locator(t("remove-person"));
      await remove.click();
      const dialog = page.locator(t("confirm-dialog"));
      await dialog.waitFor();
      assert.match(await dialog.innerText(), /Remove Pat Person\?[\s\S]*agent they own is paused/);
      await dialog.locator(t("confirm-cancel")).click();
      await dialog.waitFor({ state: "detached" });
      assert.ok(
        (await usersByApi()).some((u) => u.id === id),
        "cancelling removed the person",
      );

      await remove.click();
      await dialog.locator(t("confirm-ok")).click();
      await row(page, id).waitFor({ state: "detached" });
      assert.ok(!(await usersByApi()).some((u) => u.id === id), "the person is still in the workspace");
      const agent = ((await (await relay.request(`/api/v1/agents/${created.agent.id}`)).json()) as { data: Agent })
        .data;
      assert.equal(agent.state, "paused");
      assert.equal((await relay.request("/api/v1/me", { key })).status, 403);
    }));

  test("a member has no People or Audit entry; the list at /people is read-only and /audit says who may read it", async () => {
    const person = await openPersonPage(browser, "mia", LAPTOP);
    others.push(person);
    await step("member", person, async () => {
      const { page } = person;
      await signIn(page, relay.url, mia.key);
      await page.locator(t("nav-agents")).waitFor();
      assert.equal(await page.locator(t("nav-people")).count(), 0, "a member is offered People");
      assert.equal(await page.locator(t("nav-audit")).count(), 0, "a member is offered the audit log");

      await page.goto(`${relay.url}/people`);
      await row(page, adam.id).waitFor();
      assert.match(await page.locator(t("people-intro")).innerText(), /only owners and admins/i);
      for (const control of ["person-role-select", "change-role", "remove-person", "add-person-form"])
        assert.equal(await page.locator(t(control)).count(), 0, `a member is shown ${control}`);

      await page.goto(`${relay.url}/audit`);
      assert.match(await waitForText(page.locator(t("audit-forbidden"))), /only owners and admins/i);
      assert.equal(await page.locator(t("audit-list")).count(), 0);
    });
  });

  test("an admin is never offered making, unmaking or removing an owner; demoting themselves takes People away", async () => {
    const person = await openPersonPage(browser, "adam", LAPTOP);
    others.push(person);
    await step("admin", person, async () => {
      const { page } = person;
      await signIn(page, relay.url, adam.key);
      await page.locator(t("nav-audit")).waitFor();
      await openPeople(page);
      const olive = (await usersByApi()).find((u) => u.role === "owner");
      assert.ok(olive);
      await row(page, mia.id).locator(t("person-role-select")).waitFor();
      assert.deepEqual(await optionsOf(page, `${t("person-row")}[data-user-id="${mia.id}"] select`), [
        "admin",
        "member",
        "guest",
      ]);
      assert.deepEqual(await optionsOf(page, `${t("add-person-form")} select`), ["admin", "member", "guest"]);
      for (const control of ["person-role-select", "change-role", "remove-person"])
        assert.equal(await row(page, olive.id).locator(t(control)).count(), 0, `the owner's row offers ${control}`);
      assert.equal(await row(page, adam.id).locator(t("remove-person")).count(), 0, "the admin may remove themselves");

      // Demoting oneself changes the session's scopes: the console starts again and no longer offers People.
      await row(page, adam.id).locator(t("person-role-select")).selectOption("member");
      await row(page, adam.id).locator(t("change-role")).click();
      await page
        .locator(t("people-intro"))
        .filter({ hasText: /only owners and admins/i })
        .waitFor();
      assert.equal(await page.locator(t("nav-people")).count(), 0, "a demoted admin is still offered People");
      assert.equal(await page.locator(t("change-role")).count(), 0, "a demoted admin is still offered role changes");
    });
  });

  test("the audit log lists what was just done, newest first, filters by action and person, and pages with `before`", () =>
    step("audit", owner, async () => {
      const { page } = owner;
      await page.locator(t("nav-audit")).click();
      await page.waitForURL(`${relay.url}/audit`);
      const entries = page.locator(t("audit-entry"));
      await entries.first().waitFor();
      const actions = await entries.evaluateAll((els) => els.map((el) => el.getAttribute("data-action")));
      assert.deepEqual(
        actions.filter((action) => action?.startsWith("user.")),
        ["user.role_changed", "user.removed", "user.role_changed", "user.added", "user.added", "user.added"],
      );
      assert.ok(actions.includes("agent.paused"), "the removed person's agent's pause is not listed");

      const action = page.locator(t("audit-action"));
      await action.selectOption("user.role_changed");
      await page
        .locator(`${t("audit-entry")}:not([data-action="user.role_changed"])`)
        .first()
        .waitFor({ state: "detached" });
      assert.equal(await entries.count(), 2);
      assert.match(await entries.first().innerText(), /Adam Admin[\s\S]*By Adam Admin[\s\S]*from: admin · to: member/);
      const text = await entries.nth(1).innerText();
      assert.match(text, /^Role changed/);
      // Pat has been removed, so the console no longer knows the name, and says so rather than showing a bare id.
      assert.match(text, /someone no longer here \(usr_/);
      assert.match(text, /from: member · to: admin/);
      assert.match(text, /By Olive Owner, from /);

      // More than a page of one action, so the filtered list needs a second page.
      for (let i = 0; i < 52; i++) {
        const made = await relay.request("/api/v1/api-keys", {
          method: "POST",
          json: { name: `batch ${i}`, scopes: ["workspace.read"] },
        });
        assert.equal(made.status, 201);
      }
      await action.selectOption("api_key.created");
      await page
        .locator(`${t("audit-entry")}:not([data-action="api_key.created"])`)
        .first()
        .waitFor({ state: "detached" });
      await page.locator(`${t("audit-older")}:visible`).waitFor();
      assert.equal(await entries.count(), 50);
      await page.locator(t("audit-older")).click();
      await page.locator(t("audit-older")).waitFor({ state: "hidden" });
      // People's first keys are recorded in user.added, so the batch is every api_key.created there is.
      assert.equal(await entries.count(), 52);
      const shown = await entries.evaluateAll((els) => els.map((el) => el.textContent ?? ""));
      assert.equal(new Set(shown).size, 52, "the second page repeated an entry");

      await action.selectOption("");
      await page.locator(t("audit-actor")).selectOption(adam.id);
      await entries.filter({ hasNotText: "By Adam Admin" }).first().waitFor({ state: "detached" });
      const byAdam = await entries.evaluateAll((els) => els.map((el) => el.getAttribute("data-action")));
      assert.ok(byAdam.includes("session.signed_in"), `Adam's entries: ${byAdam.join(", ")}`);
    }));

  test("screenshots at laptop and phone widths: People and the audit log, phone without sideways scrolling", () =>
    step("screenshots", owner, async () => {
      const { page } = owner;
      for (const viewport of [LAPTOP, PHONE]) {
        await page.setViewportSize(viewport);
        for (const [path, ready, name] of [
          ["/people", t("add-person-form"), "people"],
          ["/audit", t("audit-entry"), "audit"],
        ] as const) {
          await page.goto(`${relay.url}${path}`);
          await page.locator(ready).first().waitFor();
          const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
          assert.ok(overflow <= 0, `${path} scrolls sideways by ${overflow} px at ${viewport.width} px`);
          const file = join(OUTPUT, `${name}-${viewport.width}.png`);
          await page.screenshot({ path: file, fullPage: true });
          assert.equal(pngSize(file).width, viewport.width, `${file} has the wrong width`);
        }
      }
    }));

  test("no page raised a script error, and the relay logged no error", () => {
    assert.deepEqual(
      [owner, ...others].flatMap((person) => person?.scriptErrors ?? []),
      [],
    );
    assert.deepEqual(
      relayLog.filter((line) => (JSON.parse(line) as { level: string }).level === "error"),
      [],
    );
  });
});
