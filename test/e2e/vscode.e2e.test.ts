// The extension end to end: the packaged .vsix in a real VS Code (code-server + headless Chromium), talking to
// the relay started through its CLI with the local engine. Screenshots and logs go to test-output/e2e/<case>/.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CompletionRequest, parseSnippets, TAB_COMPLETIONS_PATH, type Api } from "@tab-relay/shared";
import type { Locator } from "playwright-core";
import {
  ensurePrerequisites,
  lastKeyToGhostMs,
  readGhostText,
  REPO_ROOT,
  runFromPalette,
  sleep,
  typeAndWaitForGhostText,
  VsCodeSession,
  waitUntil,
  watchKeyToGhost,
} from "./codeServer";
import { EXTENSION_DISPLAY_NAME, EXTENSION_ID, LOG_CHANNEL, packageTabRelayExtension } from "./extensionPackage";
import { startRecordingProxy, type RecordedExchange, type RecordingProxy } from "./recordingProxy";
import { ensureRelayBuilt, startCliRelay, type RelayUnderTest } from "./relay";

// The two things under test.
const packageExtension = packageTabRelayExtension;
const startRelay = startCliRelay;

const OUTPUT = join(REPO_ROOT, "test-output/e2e");

// The local engine continues with what followed the longest earlier match of the text before the cursor.
// Retyping the function's first line at the end of the file matches exactly one earlier place, so the
// continuation is that function's body.
const FILE = "greet.js";
const FIXTURE =
  '// Greetings for the tab-relay end-to-end test.\nfunction greetVisitor(name) {\n  return "Hello, " + name + "!";\n}\n\n';
const TYPED = "function greetVisitor(name) {";
const BODY = '\n  return "Hello, " + name + "!";';

// Code from another file: the typed file has nothing that predicts the function's body, the other file (open in a
// tab behind it) has the function. The local engine searches surrounding_context as it searches the file itself.
const PRICING = "src/pricing.js";
const CHECKOUT = "src/checkout.js";
const PRICING_SOURCE = [
  "// Prices for the shop: bulk discounts and tax.",
  "const BULK_THRESHOLD = 10;",
  "const BULK_RATE = 0.85;",
  "",
  "function applyBulkDiscount(price, quantity) {",
  "  const rate = quantity >= BULK_THRESHOLD ? BULK_RATE : 1;",
  "  return Math.round(price * quantity * rate * 100) / 100;",
  "}",
  "",
  "function withTax(amount, taxRate) {",
  "  return amount * (1 + taxRate);",
  "}",
  "",
  "module.exports = { applyBulkDiscount, withTax };",
  "",
].join("\n");
const CHECKOUT_SOURCE = [
  "// Checkout: turns a cart into an order.",
  'const { randomUUID } = require("node:crypto");',
  "",
  "function createOrder(cart, customer) {",
  "  return { id: randomUUID(), items: cart.items, customer, placedAt: new Date() };",
  "}",
  "",
  "",
].join("\n");
const SHOP = { [PRICING]: PRICING_SOURCE, [CHECKOUT]: CHECKOUT_SOURCE };
const CROSS_TYPED = "function applyBulkDiscount(price, quantity) {";
const CROSS_BODY = "\n  const rate = quantity >= BULK_THRESHOLD ? BULK_RATE : 1;";
/** Names only pricing.js has: wherever they show up, they came from it. */
const PRICING_ONLY = ["BULK_THRESHOLD", "BULK_RATE"];

/** Pauses timed on top of the accept and Escape steps' two, for the keystroke-to-ghost-text figures. */
const KEY_TO_GHOST_ROUNDS = 10;

/**
 * The harness turns VS Code's telemetry off, and with it the extension's usage reports; any other level allows them
 * (code-server's --disable-telemetry still keeps VS Code's own telemetry from going anywhere).
 */
const USAGE_REPORTS_ON = { "telemetry.telemetryLevel": "error" };

const prerequisites = ensurePrerequisites();
const skip = !prerequisites.ready && !process.env.CI ? `SKIPPED, NOT TESTED: ${prerequisites.reason}` : false;
if (skip) console.error(`\n${"!".repeat(100)}\n[e2e] ${skip}\n${"!".repeat(100)}\n`);

interface Stage {
  readonly relay: RelayUnderTest;
  readonly vscode: VsCodeSession;
  /** With `recordRequests`: what the extension sent the relay, and what came back. */
  readonly proxy: RecordingProxy | undefined;
  /** Puts the time since the previous phase ended into timings.json under `label`. */
  phase(label: string): void;
  stop(): Promise<void>;
}

interface StageOptions {
  workspaceFiles?: Record<string, string>;
  /** Puts a recording proxy between the extension and the relay. */
  recordRequests?: boolean;
  /** User settings on top of the relay's URL and workspace. */
  settings?: Record<string, unknown>;
  /** Neither the relay's URL, its workspace nor the key are given: the test sets them up as a person would. */
  setUpByHand?: boolean;
}

/**
 * A fresh relay and a VS Code with the extension configured for it and activated. stop() ends both and writes
 * timings.json, which says where the time went.
 */
async function startRelayAndVsCode(name: string, vsix: string, options: StageOptions = {}): Promise<Stage> {
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
  let proxy: RecordingProxy | undefined;
  let vscode: VsCodeSession | undefined;
  const stop = async () => {
    await vscode?.close();
    await proxy?.close();
    await relay.stop();
    phase("teardownMs");
    writeFileSync(join(outDir, "timings.json"), `${JSON.stringify(timings, null, 2)}\n`);
  };
  try {
    if (options.recordRequests) proxy = await startRecordingProxy(relay.url);
    vscode = await VsCodeSession.start({
      vsix,
      outDir,
      workspaceFiles: options.workspaceFiles ?? { [FILE]: FIXTURE },
      settings: options.setUpByHand
        ? { ...options.settings }
        : {
            ...options.settings,
            "tabRelay.relayUrl": proxy?.url ?? relay.url,
            "tabRelay.workspaceSlug": relay.workspaceSlug,
          },
      env: options.setUpByHand ? {} : { TAB_RELAY_API_KEY: relay.apiKey },
    });
    phase("vscodeStartMs");
    await vscode.waitForActivation();
    phase("activationMs");
    return { relay, vscode, proxy, phase, stop };
  } catch (error) {
    await vscode?.screenshot("failure").catch(() => undefined);
    await stop();
    throw error;
  }
}

/** Runs `body` on the stage; a failing step leaves a picture of the workbench behind (`failure.png`, or `<name>.png`). */
async function onStage(stage: Stage, body: () => Promise<void>, failureShot = "failure"): Promise<void> {
  try {
    await body();
  } catch (error) {
    await stage.vscode.screenshot(failureShot).catch(() => undefined);
    throw error;
  }
}

/** Runs `body` against a fresh relay and VS Code, then stops both. */
async function withRelayAndVsCode(
  name: string,
  vsix: string,
  options: StageOptions,
  body: (relay: RelayUnderTest, vscode: VsCodeSession) => Promise<void>,
): Promise<void> {
  const stage = await startRelayAndVsCode(name, vsix, options);
  try {
    await onStage(stage, () => body(stage.relay, stage.vscode));
    stage.phase("stepsMs");
  } finally {
    await stage.stop();
  }
}

/** Opens `other`, then `typed` in the same editor group: `other` stays open in a tab behind it, out of sight. */
async function openWithTabBehind(vscode: VsCodeSession, other: string, typed: string): Promise<Locator> {
  await vscode.openFile(other);
  const editor = await vscode.openFile(typed);
  await vscode.page
    .locator(".tabs-container .tab", { hasText: basename(other) })
    .first()
    .waitFor({ timeout: 10_000 });
  const shown = await vscode.page.locator(`.editor-instance .monaco-editor[data-uri$="/${other}"]`).count();
  assert.equal(shown, 0, `${other} is shown in an editor, so this would not test the code of a tab out of sight`);
  return editor;
}

interface CompletionExchange {
  readonly request: CompletionRequest;
  readonly exchange: RecordedExchange;
}

/** The completion requests the proxy has seen since the `from`-th exchange, parsed. */
function completionExchanges(proxy: RecordingProxy, from = 0): CompletionExchange[] {
  return proxy.exchanges
    .slice(from)
    .filter(
      (exchange) =>
        exchange.method === "POST" && exchange.path.endsWith(TAB_COMPLETIONS_PATH) && exchange.requestBody !== "",
    )
    .map((exchange) => ({ request: CompletionRequest.parse(JSON.parse(exchange.requestBody)), exchange }));
}

/**
 * Waits until every completion request the proxy has seen since the `from`-th exchange has been answered (or given
 * up) and the extension has dealt with each: it logs one line per request it sent, whatever the outcome.
 */
async function allRequestsHandled(
  vscode: VsCodeSession,
  proxy: RecordingProxy,
  from: number,
  path: string,
): Promise<CompletionExchange[]> {
  try {
    return await waitUntil(`the extension to log every request it sent for ${path}`, 15_000, () => {
      const exchanges = completionExchanges(proxy, from);
      const settled = exchanges.every(({ exchange }) => exchange.finished || exchange.aborted);
      return settled && requestLogLines(vscode, path).length >= exchanges.length ? exchanges : undefined;
    });
  } catch (error) {
    const state = completionExchanges(proxy, from).map(({ exchange }) => ({
      ...exchange,
      requestBody: `${exchange.requestBody.length} chars`,
    }));
    throw new Error(
      `${String(error)}\nexchanges: ${JSON.stringify(state)}\nlog:\n${requestLogLines(vscode, path).join("\n")}`,
      { cause: error },
    );
  }
}

/**
 * The extension's log lines about completion requests for `path` (one per request that was sent), in the current
 * window. A next edit's line (`next edit <path>: …`) is another request, counted by the next-edit tests.
 */
function requestLogLines(vscode: VsCodeSession, path: string): string[] {
  return vscode
    .outputChannelLog(EXTENSION_ID, LOG_CHANNEL)
    .split("\n")
    .filter((line) => line.includes(` ${path}: `) && !line.includes(`] next edit ${path}: `));
}

// Each step (packaging, a case, starting a shared stage) takes 10 to 80 s, depending on how busy the machine is. The
// bound is per step, not for the file, and only keeps a hung browser from stalling the whole suite.
const STEP = { timeout: 240_000 };

describe("the extension in a real VS Code", { skip }, () => {
  let packagingDir = "";
  let vsix = "";

  before(() => {
    if (!prerequisites.ready) throw new Error(`cannot run the VS Code end-to-end test: ${prerequisites.reason}`);
    ensureRelayBuilt();
    packagingDir = mkdtempSync(join(tmpdir(), "tab-relay-e2e-vsix-"));
    vsix = packageExtension(packagingDir);
  }, STEP);
  after(() => rmSync(packagingDir, { recursive: true, force: true }));

  test("ghost text from the relay: Tab saves it in the file, Escape hides it, and usage reports count both", STEP, () =>
    withRelayAndVsCode("accept", vsix, { settings: USAGE_REPORTS_ON }, async (relay, vscode) => {
      // VS Code's keyboard shortcut troubleshooting logs, to the browser's console, which command each key ran.
      const windowLog: string[] = [];
      vscode.page.on("console", (message) => windowLog.push(message.text()));
      await runFromPalette(vscode, "Toggle Keyboard Shortcuts Troubleshooting");
      // It also shows that log in the panel and focuses it, which would take the keys of the next steps.
      await vscode.page.waitForFunction('document.activeElement?.closest(".part.panel") != null', undefined, {
        timeout: 10_000,
      });
      const editor = await vscode.openFile(FILE);
      await watchKeyToGhost(vscode.page, BODY.trim());
      // Per pause: the last keydown to the body's ghost text in the page, the requests the typed line cost, and the
      // wait the extension logs beside the relay's time ("showing N chars, W ms after the keystroke").
      const keyToGhost: number[] = [];
      const requestsPerPause: number[] = [];
      const extensionWaitMs: number[] = [];
      const loadAverage = [loadavg()[0] ?? Number.NaN];
      const measuredPause = async (typed: string) => {
        const logged = requestLogLines(vscode, FILE).length;
        const shown = await typeAndWaitForGhostText(vscode.page, editor, typed, (text) => text.startsWith(BODY));
        keyToGhost.push((await lastKeyToGhostMs(vscode.page)) ?? Number.NaN);
        const lines = await waitUntil("the log line of the shown suggestion", 10_000, () => {
          const since = requestLogLines(vscode, FILE).slice(logged);
          return since.some((line) => line.includes("after the keystroke")) ? since : undefined;
        });
        requestsPerPause.push(lines.length);
        const waited = lines.map((line) => /, (\d+) ms after the keystroke/.exec(line)?.[1]).find(Boolean);
        extensionWaitMs.push(Number(waited));
        return shown;
      };

      // VS Code's default auto-closing turns the typed `{` into `{|}`: the body comes as ghost text inside the pair.
      const ghost = await measuredPause(TYPED);
      await vscode.screenshot("1-ghost-text");

      await vscode.page.keyboard.press("Tab");
      await waitUntil("the ghost text to be accepted", 10_000, async () =>
        (await readGhostText(editor)) === undefined ? true : undefined,
      );
      await vscode.page.keyboard.press("Control+S");
      const expected = `${FIXTURE}${TYPED}${BODY}\n}`;
      // VS Code saves by truncating and rewriting the file, so a read can land on an empty or half-written file.
      const saved = await waitUntil("the file to be saved", 10_000, () => {
        const text = readFileSync(join(vscode.workspaceDir, FILE), "utf8");
        return text.length < expected.length ? undefined : text;
      });
      await vscode.screenshot("2-accepted");
      assert.equal(saved, expected, `ghost text was ${JSON.stringify(ghost)}`);
      const accepted = saved.slice(FIXTURE.length + TYPED.length, -1);

      // The same line again below, after the closing brace: the same body comes as ghost text, and Escape hides it
      // without touching the file.
      await vscode.page.keyboard.press("Control+End");
      const again = `\n\n${TYPED}`;
      const second = await measuredPause(again);
      const consoleLogged = windowLog.length;
      await vscode.page.keyboard.press("Escape");
      await waitUntil("Escape to hide the ghost text", 10_000, async () =>
        (await readGhostText(editor)) === undefined ? true : undefined,
      );
      await waitUntil("VS Code to log the command Escape ran", 10_000, () =>
        windowLog.slice(consoleLogged).find((line) => line.includes("[KeybindingService]: + Invoking command")),
      );
      const invoked = windowLog
        .slice(consoleLogged)
        .filter((line) => line.includes("[KeybindingService]: + Invoking command"));
      assert.deepEqual(
        invoked.map((line) => /Invoking command (\S+?)\.?$/.exec(line)?.[1]),
        ["tabRelay.dismissSuggestion"],
        `Escape ran:\n${windowLog.slice(consoleLogged).join("\n")}`,
      );
      await vscode.screenshot("3-dismissed");
      await vscode.page.keyboard.press("Control+S");
      const typedOnly = `${expected}${again}}`;
      const afterEscape = await waitUntil("the file to be saved", 10_000, () => {
        const text = readFileSync(join(vscode.workspaceDir, FILE), "utf8");
        return text.length < typedOnly.length ? undefined : text;
      });
      assert.equal(afterEscape, typedOnly, `Escape changed the file (ghost text was ${JSON.stringify(second)})`);

      // More pauses for the keystroke-to-ghost figures, at the place of the Escape step: the line typed there is taken
      // out (from the end of the last line up to the accepted function's `}`) and typed again after one more empty
      // line each round. The local engine still answers with the same body (the accepted copy, after `}` and empty
      // lines, stays the longest match), and the extension's typing-through cache, which knows each place it
      // answered by the length of the text before the cursor, cannot answer for it: every pause asks the relay.
      const takeOutLastLine = async (newlines: number) => {
        await vscode.page.keyboard.press("End");
        for (let line = 0; line < newlines; line++) await vscode.page.keyboard.press("Shift+ArrowUp");
        await vscode.page.keyboard.press("Shift+End");
        await vscode.page.keyboard.press("Backspace");
      };
      let newlines = 2;
      for (let round = 0; round < KEY_TO_GHOST_ROUNDS; round++) {
        await takeOutLastLine(newlines);
        newlines++;
        await measuredPause(`${"\n".repeat(newlines)}${TYPED}`);
        await vscode.page.keyboard.press("Escape");
        await waitUntil("Escape to hide the ghost text", 10_000, async () =>
          (await readGhostText(editor)) === undefined ? true : undefined,
        );
      }
      await takeOutLastLine(newlines);
      await vscode.page.keyboard.press("Control+S");
      await waitUntil("the file to be saved without the measured lines", 10_000, () =>
        readFileSync(join(vscode.workspaceDir, FILE), "utf8") === expected ? true : undefined,
      );
      loadAverage.push(loadavg()[0] ?? Number.NaN);

      // Keystroke to ghost text at the default settings, as a person waits for it (last keydown to the ghost-text
      // element, measured in the page); recorded, not asserted: a loaded machine's figures say little. The figures
      // and the command are in docs/benchmarks.md.
      const sorted = [...keyToGhost].sort((x, y) => x - y);
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
      const timing = {
        n: keyToGhost.length,
        p50: at(0.5),
        p90: at(0.9),
        max: sorted.at(-1),
        keyToGhostMs: keyToGhost,
        extensionWaitMs,
        requestsPerPause,
        loadAverage1m: loadAverage.map((load) => Math.round(load * 10) / 10),
        cpus: cpus().length,
      };
      writeFileSync(join(vscode.outDir, "key-to-ghost.json"), `${JSON.stringify(timing, null, 2)}\n`);
      console.log(`[e2e] keystroke to ghost text: ${JSON.stringify(timing)}`);

      // The extension sends its usage events every 30 s and when it is deactivated: reloading the window ends its
      // extension host, which runs deactivate first.
      const dayBefore = new Date().toISOString().slice(0, 10);
      await vscode.page.reload();
      const report = await waitUntil("the usage events to reach the relay", 20_000, async () => {
        const response = await fetch(`${relay.url}/api/v1/tab/usage?group_by=day`, {
          headers: { authorization: `Bearer ${relay.apiKey}` },
        });
        assert.equal(response.status, 200, await response.clone().text());
        const { data } = (await response.json()) as { data: Api.TabUsageReport };
        return data.totals.suggestions_shown >= 2 ? data : undefined;
      });
      const days = [dayBefore, new Date().toISOString().slice(0, 10)];
      const figures = report.rows.map((row) => ({
        day: days.includes(row.key) ? "today" : row.key,
        suggestions_shown: row.suggestions_shown,
        acceptances: row.acceptances,
        dismissals: row.dismissals,
        typed_over: row.typed_over,
        chars_accepted: row.chars_accepted,
      }));
      // VS Code may ask again after Tab or after the line is typed once more, and a suggestion still showing when
      // the window reloads is reported dismissed (seen in CI: 3 shown, 2 dismissed); one that came while the line was
      // typed again, before it was whole, was typed over (seen in CI on a loaded machine: 3 shown, 1 typed over). The
      // accepted one is exact, the Escape one is at least there, and every suggestion shown has exactly one outcome.
      assert.equal(figures.length, 1, JSON.stringify(figures));
      const [today] = figures;
      assert.deepEqual(
        [today?.day, today?.acceptances, today?.chars_accepted],
        ["today", 1, accepted.length],
        JSON.stringify(figures),
      );
      assert.ok((today?.dismissals ?? 0) >= 1, JSON.stringify(figures));
      assert.equal(
        today?.suggestions_shown,
        (today?.acceptances ?? 0) + (today?.dismissals ?? 0) + (today?.typed_over ?? 0),
        JSON.stringify(figures),
      );
    }),
  );

  test(
    "in a remote window: setup from the first-run notification (a malformed key refused), the two settings, a wrong workspace, recovery after a relay restart, an excluded file, a revoked key",
    // Seven steps in one window rather than seven windows: a longer bound than one step's.
    { timeout: 2 * STEP.timeout },
    () =>
      withRelayAndVsCode(
        "setup",
        vsix,
        { setUpByHand: true, workspaceFiles: { [FILE]: FIXTURE, ".env": "SECRET_TOKEN=1\n" } },
        async (relay, vscode) => {
          const page = vscode.page;
          const status = (text: string) => page.locator(".statusbar-item", { hasText: text }).first();
          const toast = (text: string | RegExp) =>
            page.locator(".notifications-toasts .notification-toast", { hasText: text }).first();
          const quickInput = page.locator(".quick-input-widget");
          await status("Tab: set up").waitFor({ timeout: 20_000 });

          // First run: one notification, whose button opens setup. code-server's window is a remote one, where a
          // machine-scoped relayUrl could not be set from the user settings.
          const welcome = toast("Set it up");
          await welcome.waitFor({ timeout: 20_000 });
          await welcome.locator(".monaco-button", { hasText: "Set up…" }).click();
          const step = async (n: number) =>
            quickInput.locator(".quick-input-title", { hasText: `(${n}/3)` }).waitFor({ timeout: 20_000 });
          await step(1);
          await page.keyboard.press("Control+A");
          await page.keyboard.type(relay.url);
          await page.keyboard.press("Enter");

          // A malformed key is refused in the input box, with the reason; Enter does not take it.
          await step(2);
          await page.keyboard.type("hello");
          await quickInput.locator(".quick-input-message", { hasText: "keys start with svc_ws_" }).waitFor();
          await page.keyboard.press("Enter");
          await sleep(300);
          await step(2);
          await vscode.screenshot("setup-key-refused");
          await page.keyboard.press("Control+A");
          await page.keyboard.type(relay.apiKey);
          await page.keyboard.press("Enter");

          // The workspace, filled in from what the relay says about the key.
          await step(3);
          assert.equal(await quickInput.locator("input").inputValue(), relay.workspaceSlug);
          await page.keyboard.press("Enter");
          await toast(`Connected to workspace ${relay.workspaceSlug} as e2e (owner)`).waitFor({ timeout: 20_000 });
          await vscode.screenshot("setup-connected");
          await status("Tab: set up").waitFor({ state: "detached", timeout: 10_000 });

          // The palette: "tab-relay" finds the extension's commands (VS Code matches - to a space), only those that
          // apply: Resume is there only while snoozed, Enable only while off.
          await page.keyboard.press("F1");
          await quickInput.locator("input").waitFor({ state: "visible" });
          await page.keyboard.type("tab-relay");
          const rows = quickInput.locator(".monaco-list-row .label-name");
          const commands = await waitUntil("the palette to list the extension's commands", 10_000, async () => {
            const ours = (await rows.allInnerTexts())
              .map((text) => text.trim())
              .filter((text) => text.startsWith(`${EXTENSION_DISPLAY_NAME}: `));
            return ours.length >= 6 ? ours : undefined;
          });
          await page.keyboard.press("Escape");
          for (const title of ["Set Up", "Open Settings", "Show Log", "Snooze Inline Completions…"])
            assert.ok(
              commands.includes(`${EXTENSION_DISPLAY_NAME}: ${title}`) ||
                commands.some((text) => text.startsWith(`${EXTENSION_DISPLAY_NAME}: ${title} `)),
              `${title} not in ${String(commands)}`,
            );
          for (const title of ["Resume Inline Completions", "Enable Inline Completions"])
            assert.ok(
              !commands.includes(`${EXTENSION_DISPLAY_NAME}: ${title}`),
              `${title} offered: ${String(commands)}`,
            );

          // What was saved takes effect in this remote window: ghost text comes.
          const editor = await vscode.openFile(FILE);
          await typeAndWaitForGhostText(page, editor, TYPED, (text) => text.startsWith(BODY));
          await page.keyboard.press("Escape");

          // "Open settings" shows exactly the two settings setup needs; the workspace is changed there to a wrong one.
          await runFromPalette(vscode, "Tab Relay: Open Settings");
          const labels = page.locator(".settings-editor .setting-item-contents .setting-item-label");
          await waitUntil("the settings editor to show the two setup settings", 20_000, async () => {
            const texts = (await labels.allInnerTexts()).map((text) => text.trim()).sort();
            return texts.length === 2 && texts[0] === "Relay Url" && texts[1] === "Workspace Slug" ? true : undefined;
          });
          await vscode.screenshot("setup-settings");
          const slugInput = page
            .locator(".settings-editor .setting-item-contents", { hasText: "Workspace Slug" })
            .locator("input");
          await slugInput.fill("not-this-one");
          await slugInput.press("Enter");

          // A valid key for another workspace: told apart from a bad key, its workspace named, a switch offered.
          // Back to the file by its tab: Quick Open's Enter from the Settings editor's input did not bring it up.
          await page.locator(".tabs-container .tab", { hasText: FILE }).first().click();
          const again = page.locator(`.editor-instance .monaco-editor[data-uri$="/${FILE}"]`);
          await again.waitFor({ timeout: 30_000 });
          await again.locator(".view-lines").click();
          await page.keyboard.press("Control+End");
          await page.keyboard.type(`\n${TYPED}`, { delay: 25 });
          const mismatch = toast(`belongs to workspace ${relay.workspaceSlug}, not "not-this-one"`);
          for (let attempt = 0; ; attempt++) {
            try {
              await mismatch.waitFor({ timeout: 8_000 });
              break;
            } catch (error) {
              if (attempt >= 3) throw error;
              await page.keyboard.press("Backspace");
              await page.keyboard.type(TYPED.slice(-1));
            }
          }
          await status("Tab: wrong workspace").waitFor({ timeout: 5_000 });
          await vscode.screenshot("wrong-workspace");
          await mismatch.locator(".monaco-button", { hasText: "Use the key's workspace" }).click();
          await status("Tab: wrong workspace").waitFor({ state: "detached", timeout: 10_000 });
          // The click leaves the keyboard in the notifications when another toast is still up (setup's "Connected"
          // one, kept while the mouse is over it): the edit below went there, and no request was made (the status
          // never read "relay unreachable", seen twice in a row).
          await vscode.focusEditor(again);

          // The relay goes away and comes back: the status returns to "on" by itself, with no keystroke.
          await relay.halt();
          await page.keyboard.press("Backspace");
          await page.keyboard.type(TYPED.slice(-1));
          // Once in CI (stop 30, a parallel suite on 2 cores) no request followed that edit within 20 s, and nothing
          // said why. Each retry focuses the editor again and types a character not typed before, so a cached
          // suggestion cannot answer it; the last failure says what the status bar and the log showed.
          for (let attempt = 0; ; attempt++) {
            try {
              await status("Tab: relay unreachable").waitFor({ timeout: 10_000 });
              break;
            } catch (error) {
              if (attempt >= 3) {
                throw new Error(
                  `${String(error)}\nstatus bar: ${JSON.stringify(await vscode.statusBarTexts())}\nlog:\n` +
                    vscode.outputChannelLog(EXTENSION_ID, LOG_CHANNEL).split("\n").slice(-15).join("\n"),
                  { cause: error },
                );
              }
              await vscode.focusEditor(again);
              await page.keyboard.type("abc"[attempt] ?? "d");
            }
          }
          const requestsWhileDown = requestLogLines(vscode, FILE).length;
          await relay.start();
          await status("Tab: relay unreachable").waitFor({ state: "detached", timeout: 40_000 });
          assert.equal(requestLogLines(vscode, FILE).length, requestsWhileDown, "a completion request was sent");
          assert.match(vscode.outputChannelLog(EXTENSION_ID, LOG_CHANNEL), /relay answers again/);
          await vscode.screenshot("recovered");

          // An excluded file: the status says why nothing will come.
          await vscode.openFile(".env");
          await status("Tab: off for .env (excluded)").waitFor({ timeout: 10_000 });
          await vscode.screenshot("excluded-status");

          // A revoked key: unauthorized, and no ghost text.
          await vscode.openFile(FILE);
          await relay.revokeKey();
          await page.keyboard.type(`\n${TYPED}`, { delay: 25 });
          for (let attempt = 0; ; attempt++) {
            try {
              await status("Tab: unauthorized").waitFor({ state: "visible", timeout: 5_000 });
              break;
            } catch (error) {
              if (attempt >= 3) throw error;
              // An edit is what triggers a new request (see typeAndWaitForGhostText).
              await page.keyboard.press("Backspace");
              await page.keyboard.type(TYPED.slice(-1));
            }
          }
          await vscode.screenshot("unauthorized");
          await sleep(300);
          assert.equal(await readGhostText(again), undefined, "ghost text shown although the key is revoked");
        },
      ),
  );

  // One relay, code-server and browser for both: the second test shows another folder in the same window, so its
  // extension host starts afresh with the workspace setting in place.
  describe("code from another open file", () => {
    let stage: Stage | undefined;
    const started = (): Stage & { proxy: RecordingProxy } => {
      if (stage?.proxy === undefined)
        throw new Error("the relay and VS Code did not start; see the error of the before hook");
      return { ...stage, proxy: stage.proxy };
    };
    before(async () => {
      stage = await startRelayAndVsCode("cross-file", vsix, { workspaceFiles: SHOP, recordRequests: true });
    }, STEP);
    after(() => stage?.stop(), STEP);

    test(
      "a function's body from a file open in a tab out of sight comes as ghost text, and Tab puts it into the saved file",
      STEP,
      () => {
        const current = started();
        const { vscode, proxy } = current;
        return onStage(
          current,
          async () => {
            assert.ok(
              !CHECKOUT_SOURCE.includes(CROSS_TYPED) && !PRICING_ONLY.some((name) => CHECKOUT_SOURCE.includes(name)),
              "the typed file predicts the body itself",
            );
            const editor = await openWithTabBehind(vscode, PRICING, CHECKOUT);

            const ghost = await typeAndWaitForGhostText(vscode.page, editor, CROSS_TYPED, (text) =>
              text.startsWith(CROSS_BODY),
            );
            await vscode.screenshot("1-ghost-text-from-other-file");
            await waitUntil("the Tab log to name src/pricing.js as the context of a shown completion", 10_000, () =>
              requestLogLines(vscode, CHECKOUT).find((line) =>
                new RegExp(`: 200 .*\\(context \\d+ chars from ${PRICING}\\); showing \\d+ chars`).test(line),
              ),
            );
            // What went over the wire: the answer with the body was asked with pricing.js's code as context, and
            // with nothing of it around the cursor.
            const answered = completionExchanges(proxy).find(
              ({ request, exchange }) =>
                request.tab_context.active_text_before_cursor.endsWith(CROSS_TYPED) &&
                exchange.responseBody.includes(PRICING_ONLY[0] as string),
            );
            assert.ok(answered, "no request for the typed line was answered with pricing.js's code");
            const { tab_context: context } = answered.request;
            assert.deepEqual(
              [...new Set(parseSnippets(context.surrounding_context ?? "").map((snippet) => snippet.path))],
              [PRICING],
            );
            assert.ok(
              !PRICING_ONLY.some((name) =>
                `${context.active_text_before_cursor}${context.active_text_after_cursor ?? ""}`.includes(name),
              ),
            );

            await vscode.page.keyboard.press("Tab");
            await waitUntil("the ghost text to be accepted", 10_000, async () =>
              (await readGhostText(editor)) === undefined ? true : undefined,
            );
            await vscode.page.keyboard.press("Control+S");
            const expected = CHECKOUT_SOURCE + CROSS_TYPED + ghost;
            const saved = await waitUntil("the file to be saved", 10_000, () => {
              const text = readFileSync(join(vscode.workspaceDir, CHECKOUT), "utf8");
              return text.length < expected.length ? undefined : text;
            });
            await vscode.screenshot("2-accepted-from-other-file");
            assert.equal(saved, expected);
            current.phase("otherFileStepsMs");
          },
          "failure-other-file",
        );
      },
    );

    test(
      "with tabRelay.excludeGlobs covering that file in the workspace settings, none of its code is sent and no ghost text comes",
      STEP,
      () => {
        const current = started();
        const { vscode, proxy } = current;
        return onStage(
          current,
          async () => {
            // The first window asks once more after Tab, with pricing.js as context, and that request can reach the
            // proxy late (seen in CI while the second folder opened): counting starts once the second window's
            // extension is active, and a request whose text is not the fresh file being typed is the first window's.
            await allRequestsHandled(vscode, proxy, 0, CHECKOUT);
            await vscode.openFolder({
              ...SHOP,
              ".vscode/settings.json": `${JSON.stringify({ "tabRelay.excludeGlobs": [PRICING] }, null, 2)}\n`,
            });
            await vscode.waitForActivation();
            const from = proxy.exchanges.length;
            const ofThisWindow = ({ request }: CompletionExchange) =>
              (CHECKOUT_SOURCE + CROSS_TYPED).startsWith(request.tab_context.active_text_before_cursor);
            current.phase("excludedFolderStartMs");
            const editor = await openWithTabBehind(vscode, PRICING, CHECKOUT);

            // The same typing as above. The proof of absence is the answer to the request for the whole line, and the
            // log line the extension writes once it has dealt with it, rather than a pause.
            await vscode.page.keyboard.type(CROSS_TYPED, { delay: 25 });
            let lastEdit = Date.now();
            await waitUntil("the relay to answer a request for the whole typed line", 30_000, async () => {
              const forLine = completionExchanges(proxy, from).filter(({ request }) =>
                request.tab_context.active_text_before_cursor.endsWith(CROSS_TYPED),
              );
              if (forLine.some(({ exchange }) => exchange.finished)) return true;
              if (forLine.every(({ exchange }) => exchange.aborted) && Date.now() - lastEdit > 5_000) {
                // As in typeAndWaitForGhostText: an edit is what makes VS Code ask the provider again.
                await vscode.page.keyboard.press("Backspace");
                await vscode.page.keyboard.type(CROSS_TYPED.slice(-1));
                lastEdit = Date.now();
              }
              return undefined;
            });
            const sent = (await allRequestsHandled(vscode, proxy, from, CHECKOUT)).filter(ofThisWindow);
            assert.ok(sent.length > 0, "no request of the second window was recorded");
            await vscode.screenshot("excluded-no-ghost-text");

            for (const { request, exchange } of sent) {
              const wire = JSON.stringify(request);
              assert.ok(
                !PRICING_ONLY.some((name) => wire.includes(name)) && !wire.includes(PRICING),
                `a request carried code of ${PRICING}: ${wire}`,
              );
              assert.ok(
                !PRICING_ONLY.some((name) => exchange.responseBody.includes(name)),
                `the relay answered with pricing.js's code: ${exchange.responseBody}`,
              );
            }
            const lines = requestLogLines(vscode, CHECKOUT);
            assert.ok(
              lines.length > 0 && lines.every((line) => line.includes("(no context from other code)")),
              `the Tab log reads:\n${lines.join("\n")}`,
            );
            assert.equal(
              await readGhostText(editor),
              undefined,
              "ghost text shown although its only source is excluded",
            );
            assert.equal(
              readFileSync(join(vscode.workspaceDir, CHECKOUT), "utf8"),
              CHECKOUT_SOURCE,
              "the file on disk changed",
            );
            current.phase("excludedStepsMs");
          },
          "failure-excluded",
        );
      },
    );
  });
});
