// Next edits end to end: the packaged .vsix in a real VS Code (code-server + headless Chromium), talking through a
// recording proxy to the relay started through its CLI, whose local engine propagates a rename; then, timed, in a
// window of its own that asks a relay directly. Screenshots and logs go to test-output/e2e/next-edits/ (the timed
// window's to latency/ in it). Set TAB_RELAY_E2E_DOCS_SCREENSHOT to a path (docs/images/next-edit.png) to save
// the picture docs/extension.md shows, and TAB_RELAY_E2E_LATENCY_SAMPLES to time more pauses than the default.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { NextEditRequest, TAB_NEXT_EDITS_PATH } from "@tab-relay/shared";
import type { Locator, Page } from "playwright-core";
import { ensurePrerequisites, REPO_ROOT, sleep, VsCodeSession, waitUntil } from "./codeServer";
import { EXTENSION_ID, LOG_CHANNEL, packageTabRelayExtension } from "./extensionPackage";
import { startRecordingProxy, type RecordingProxy } from "./recordingProxy";
import { ensureRelayBuilt, startCliRelay, type RelayUnderTest } from "./relay";

const OUTPUT = join(REPO_ROOT, "test-output/e2e/next-edits");
/** The latency test's window: its screenshots, logs and relay log. */
const LATENCY_OUTPUT = join(OUTPUT, "latency");
const FILE = "prices.js";
const EXCLUDED = "private/secretPrices.js";
const FIXTURE = [
  "// Totals for the next-edit end-to-end test.",
  "function total(items) {",
  "  let sum = 0;",
  "  for (const item of items) sum += item.price;",
  "  return sum;",
  "}",
  "",
  "function units(list) {",
  "  let tally = 0;",
  "  for (const entry of list) tally += entry.quantity;",
  "  return tally;",
  "}",
  "",
  "function weight(parcels) {",
  "  let mass = 0;",
  "  for (const parcel of parcels) mass += parcel.kg;",
  "  return mass;",
  "}",
  "",
].join("\n");

/** Words that no other name in LATENCY_FIXTURE holds, so each rename is one the local engine propagates. */
const COUNTED = ["apples", "pears", "plums", "cherries", "grapes", "lemons", "limes", "melons", "peaches", "figs"];
const LATENCY_SAMPLES = Math.max(
  COUNTED.length,
  Number.parseInt(process.env.TAB_RELAY_E2E_LATENCY_SAMPLES ?? "", 10) || COUNTED.length,
);
/** One small function per sample, each with its own counter: `let <word><n> = 0;` on its second line. */
const LATENCY_FILE = "counts.js";
/** Pauses done first in the latency test's window and not counted. */
const WARM_UP_PAUSES = 1;
const LATENCY_NAMES = Array.from(
  { length: WARM_UP_PAUSES + LATENCY_SAMPLES },
  (_, i) => `${COUNTED[i % COUNTED.length] as string}${String.fromCharCode(65 + Math.floor(i / COUNTED.length))}`,
);
const LATENCY_FIXTURE = LATENCY_NAMES.map((name) =>
  [
    `function count${name}(list) {`,
    `  let ${name} = 0;`,
    `  for (const entry of list) ${name} += entry.size;`,
    `  return ${name};`,
    "}",
    "",
  ].join("\n"),
).join("\n");

const prerequisites = ensurePrerequisites();
const skip = !prerequisites.ready && !process.env.CI ? `SKIPPED, NOT TESTED: ${prerequisites.reason}` : false;
if (skip) console.error(`\n${"!".repeat(100)}\n[e2e] ${skip}\n${"!".repeat(100)}\n`);
const STEP = { timeout: 240_000 };

/**
 * Selects `word` on 1-based line `line` of `file` with the keyboard, as a person would: Go to Line with the column
 * (`14:7`), then Shift+Right over the word. (Home and arrows once lost the arrows under load, and the rename landed
 * on the wrong characters.)
 */
async function selectWord(page: Page, line: number, word: string, file = FIXTURE): Promise<void> {
  const text = file.split("\n")[line - 1] ?? "";
  const column = text.indexOf(word);
  assert.ok(column >= 0, `${word} is on line ${line}`);
  await page.keyboard.press("Control+G");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible" });
  await page.keyboard.type(`${line}:${column + 1}`);
  await page.keyboard.press("Enter");
  await page.locator(".quick-input-widget").waitFor({ state: "hidden" });
  for (let i = 0; i < word.length; i++) await page.keyboard.press("Shift+ArrowRight");
}

/**
 * The texts drawn after lines of the editor by decorations: VS Code renders a decoration's `after.contentText` as the
 * content of a `::after` pseudo-element, so it is read from the computed style rather than the DOM text.
 */
async function afterTexts(editor: Locator): Promise<string[]> {
  return editor.locator(".view-lines span").evaluateAll((spans) =>
    spans
      .map(
        (span) =>
          (globalThis as unknown as { getComputedStyle: ComputedStyleOf }).getComputedStyle(span, "::after").content,
      )
      .filter((content) => content !== "none" && content !== "normal" && content !== '""')
      .map((content) =>
        content
          .slice(1, -1)
          .replace(/\\(.)/g, "$1")
          .replace(/\u00a0/g, " "),
      ),
  );
}

/** Waits for a next edit whose hint starts with `hint` ("Tab to jump" or "Tab to apply"); returns its text. */
async function waitForHint(editor: Locator, hint: string, timeoutMs = 30_000): Promise<string> {
  return waitUntil(`a next edit with "${hint}"`, timeoutMs, async () =>
    (await afterTexts(editor)).find((text) => text.startsWith(hint)),
  );
}

async function noHint(editor: Locator): Promise<boolean> {
  return (await afterTexts(editor)).every((text) => !/^Tab to (jump|apply)/.test(text));
}

/**
 * Records, in the page, the wall-clock time (Date.now(), the clock the extension host's pausedAt is read on) of the
 * first animation frame after a next edit's hint entered the editor's DOM: the frame that puts it on screen. Armed
 * before each sample; `drawnAt` waits for it. The hint is a decoration's `::after` text, so only the spans VS Code
 * gives decoration classes (`ced-…`) among the nodes each change adds are checked for it, which keeps the observer
 * cheap.
 */
async function watchNextEditDrawn(page: Page): Promise<void> {
  // A string, run in the page: the test's TypeScript has no DOM types.
  await page.evaluate(`(() => {
    const state = { armed: false, drawn: undefined, resolve: () => {} };
    window.__nextEditDrawn = state;
    const HINT = /^"Tab to (jump|apply)/;
    const hinted = (node) => node.nodeType === 1 && [
      ...(node.matches('span[class*="ced-"]') ? [node] : []),
      ...node.querySelectorAll('span[class*="ced-"]'),
    ].some((span) => HINT.test(getComputedStyle(span, "::after").content));
    new MutationObserver((records) => {
      if (!state.armed || !records.some((record) => [...record.addedNodes].some(hinted))) return;
      state.armed = false;
      requestAnimationFrame(() => state.resolve(Date.now()));
    }).observe(document.body, { subtree: true, childList: true });
  })()`);
}

async function armNextEditDrawn(page: Page): Promise<void> {
  await page.evaluate(`(() => {
    const state = window.__nextEditDrawn;
    state.armed = true;
    state.drawn = new Promise((resolve) => { state.resolve = resolve; });
  })()`);
}

/**
 * One call that the page answers when the frame comes, rather than asking every 100 ms: each ask is work for the
 * renderer, and the asks fell around the end of the pause, while the renderer was to draw the answer. The timeout
 * is kept on this side, so the page has no timer left behind to wake it during later pauses.
 */
async function drawnAt(page: Page): Promise<number> {
  const timeoutMs = 30_000;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${timeoutMs} ms waiting for the frame that drew the next edit`)),
      timeoutMs,
    );
  });
  try {
    return (await Promise.race([page.evaluate("window.__nextEditDrawn.drawn"), timedOut])) as number;
  } finally {
    clearTimeout(timer);
  }
}

/** The machine's CPU time, all cores (jiffies from /proc/stat's first line): busy and in all. */
function cpuTimes(): { busy: number; total: number } {
  const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((sum, value) => sum + value, 0);
  // idle and iowait are the 4th and 5th fields.
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
}

/**
 * Waits, up to `maxMs`, until the machine has been quiet for two half-second windows in a row: under `quietShare`
 * of all its cores busy. A window that has just opened a JavaScript file still runs VS Code's own start-up work
 * (the TypeScript server reading the file and its libraries), at half a core and more for seconds on the 2 cores
 * the pauses are timed on; the timed pauses start after it, as a benchmark's measured rounds start after warm-up.
 * Returns how long it waited and the share of the last window.
 */
async function waitForQuietMachine(maxMs = 30_000, quietShare = 0.2): Promise<{ waitedMs: number; busy: number }> {
  const started = Date.now();
  let quietWindows = 0;
  let busy = 1;
  let before = cpuTimes();
  while (Date.now() - started < maxMs) {
    await sleep(500);
    const now = cpuTimes();
    busy = (now.busy - before.busy) / Math.max(1, now.total - before.total);
    before = now;
    quietWindows = busy < quietShare ? quietWindows + 1 : 0;
    if (quietWindows >= 2) break;
  }
  return { waitedMs: Date.now() - started, busy: Math.round(busy * 1000) / 1000 };
}

interface DrawnLine {
  readonly id: string;
  /** When the pause ended, in the extension host (Date.now()). */
  readonly pausedAt: number;
  /** When the extension host set the decorations: the log line's own time stamp (local time, milliseconds). */
  readonly loggedAt: number;
}

/** The extension's log lines for drawn next edits. */
function drawnInLog(session: VsCodeSession): DrawnLine[] {
  const log = session.outputChannelLog(EXTENSION_ID, LOG_CHANNEL);
  return [...log.matchAll(/^(\S+ \S+) \[info\] next edit (\S+) drawn; its pause ended at (\d+)$/gm)].map((m) => ({
    loggedAt: new Date((m[1] as string).replace(" ", "T")).getTime(),
    id: m[2] as string,
    pausedAt: Number(m[3]),
  }));
}

/**
 * The packaged extension in a window of its own, activated, asking `relayUrl` (the relay itself, or a proxy in front
 * of it) for `relay`'s workspace with its key; `settings` go on top.
 */
async function openWindow(options: {
  packagingDir: string;
  outDir: string;
  relay: RelayUnderTest;
  relayUrl: string;
  workspaceFiles: Record<string, string>;
  settings?: Record<string, unknown>;
}): Promise<VsCodeSession> {
  const { relay } = options;
  const session = await VsCodeSession.start({
    vsix: packageTabRelayExtension(options.packagingDir),
    outDir: options.outDir,
    workspaceFiles: options.workspaceFiles,
    settings: {
      "tabRelay.relayUrl": options.relayUrl,
      "tabRelay.workspaceSlug": relay.workspaceSlug,
      // A loaded CI machine can take seconds to answer the first request; the default 5 s would drop it.
      "tabRelay.requestTimeoutMilliseconds": 30_000,
      ...options.settings,
    },
    env: { TAB_RELAY_API_KEY: relay.apiKey },
  });
  await session.waitForActivation();
  return session;
}

/** The `q` quantile (0..1) of `values`, nearest rank. */
function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

/**
 * Saves the picture docs/extension.md shows, when TAB_RELAY_E2E_DOCS_SCREENSHOT names where: the editor's first
 * `lines` lines, from the gutter to a little past the drawn hint, so the file stays small.
 */
async function docsScreenshot(page: Page, editor: Locator, lines: number): Promise<void> {
  const path = process.env.TAB_RELAY_E2E_DOCS_SCREENSHOT;
  if (!path) return;
  // The side bar closed (Ctrl+B), so the line and the hint beside it fit; opened again after.
  await page.keyboard.press("Control+B");
  await sleep(500);
  try {
    const box = await editor.boundingBox();
    const line = await editor.locator(".view-line").first().boundingBox();
    assert.ok(box && line, "the editor and its first line are on screen");
    const clip = {
      x: box.x,
      y: box.y,
      width: Math.min(box.width, 1060),
      height: Math.min(box.height, line.y - box.y + line.height * lines + 6),
    };
    await page.screenshot({ path: join(REPO_ROOT, path), clip });
  } finally {
    await page.keyboard.press("Control+B");
  }
}

/** The browser's getComputedStyle, inside page callbacks (the tests' tsconfig has no DOM types). */
type ComputedStyleOf = (element: unknown, pseudo?: string) => { content: string; textDecorationLine: string };

function nextEditRequests(proxy: RecordingProxy): NextEditRequest[] {
  return proxy.exchanges
    .filter((e) => e.method === "POST" && e.path.endsWith(TAB_NEXT_EDITS_PATH) && e.requestBody !== "")
    .map((e) => NextEditRequest.parse(JSON.parse(e.requestBody)));
}

async function saved(vscode: VsCodeSession, file: string, expected: string): Promise<string> {
  await vscode.page.keyboard.press("Control+S");
  // VS Code saves by truncating and rewriting the file, so a read can land on a half-written file.
  return waitUntil(`${file} to be saved`, 10_000, () => {
    const text = readFileSync(join(vscode.workspaceDir, file), "utf8");
    return text === expected ? text : undefined;
  }).catch(() => readFileSync(join(vscode.workspaceDir, file), "utf8"));
}

describe("next edits in a real VS Code", { skip }, () => {
  let packagingDir = "";
  let relay: RelayUnderTest | undefined;
  let proxy: RecordingProxy | undefined;
  let vscode: VsCodeSession | undefined;

  before(async () => {
    if (!prerequisites.ready) throw new Error(`cannot run the VS Code end-to-end test: ${prerequisites.reason}`);
    ensureRelayBuilt();
    packagingDir = mkdtempSync(join(tmpdir(), "tab-relay-e2e-vsix-"));
    rmSync(OUTPUT, { recursive: true, force: true });
    mkdirSync(OUTPUT, { recursive: true });
    relay = await startCliRelay("e2e-next-edits", join(OUTPUT, "relay.log"));
    proxy = await startRecordingProxy(relay.url);
    vscode = await openWindow({
      packagingDir,
      outDir: OUTPUT,
      relay,
      relayUrl: proxy.url,
      workspaceFiles: { [FILE]: FIXTURE, [EXCLUDED]: FIXTURE },
      settings: {
        "tabRelay.excludeGlobs": [".env*", "*.pem", "*.key", "id_*", "private/**"],
        // Room for the drawn hint in the docs picture.
        "editor.minimap.enabled": false,
      },
    });
  }, STEP);

  after(async () => {
    await vscode?.close();
    await proxy?.close();
    await relay?.stop();
    rmSync(packagingDir, { recursive: true, force: true });
  });

  test(
    "a rename on one line proposes the next occurrence: Tab jumps, Tab applies, and the saved file holds it; Escape dismisses one; typing over one leaves the file as typed",
    STEP,
    async () => {
      const session = vscode as VsCodeSession;
      const { page } = session;
      try {
        const editor = await session.openFile(FILE);
        await editor.locator(".view-lines").click();

        // Rename `sum` on line 3, then pause: the next occurrence (line 4) is proposed beside its line. Each rename keeps
        // the old name's words, as the local engine asks before it proposes one (relay/src/nextEdits/localEngine.ts,
        // `wordsKept`): sum -> subtotal reads as a switch to another name and gets no proposal.
        await selectWord(page, 3, "sum");
        await page.keyboard.type("priceSum", { delay: 25 });
        const jump = await waitForHint(editor, "Tab to jump");
        assert.match(jump, /for \(const item of items\) priceSum \+= item\.price;/);
        await session.screenshot("1-next-edit");
        await docsScreenshot(page, editor, 7);
        const struck = await editor
          .locator(".view-lines span", { hasText: /^sum$/ })
          .evaluateAll((spans) =>
            spans.some(
              (span) =>
                (globalThis as unknown as { getComputedStyle: ComputedStyleOf }).getComputedStyle(span)
                  .textDecorationLine === "line-through",
            ),
          );
        assert.ok(struck, "the text the next edit removes is struck through");

        await page.keyboard.press("Tab");
        await waitForHint(editor, "Tab to apply", 10_000);
        await session.screenshot("2-jumped");
        await page.keyboard.press("Tab");
        await waitUntil("the applied next edit to leave the screen", 10_000, async () =>
          (await noHint(editor)) ? true : undefined,
        );
        const renamed = FIXTURE.replace("let sum", "let priceSum").replace("items) sum +=", "items) priceSum +=");
        assert.equal(await saved(session, FILE, renamed), renamed);
        await session.screenshot("3-applied");

        // Escape dismisses: rename `tally`, wait for the proposal, Escape; the file holds only what was typed.
        await selectWord(page, 9, "tally");
        await page.keyboard.type("tallyCount", { delay: 25 });
        await waitForHint(editor, "Tab to jump");
        await page.keyboard.press("Escape");
        await waitUntil("Escape to take the next edit away", 10_000, async () =>
          (await noHint(editor)) ? true : undefined,
        );
        const typed = renamed.replace("let tally", "let tallyCount");
        // Whatever the relay proposes after the save (the rest of the first rename, say) is no part of the file.
        const afterEscape = await saved(session, FILE, typed);
        assert.equal(afterEscape, typed);

        // Typing over it: rename `mass`, wait for the proposal, type on; the file is exactly what was typed.
        await selectWord(page, 15, "mass");
        await page.keyboard.type("massKg", { delay: 25 });
        await waitForHint(editor, "Tab to jump");
        await page.keyboard.type("Total", { delay: 25 });
        await waitUntil("typing to take the next edit away", 10_000, async () =>
          (await noHint(editor)) ? true : undefined,
        );
        const typedOver = typed.replace("let mass", "let massKgTotal");
        assert.equal(await saved(session, FILE, typedOver), typedOver);

        const requests = nextEditRequests(proxy as RecordingProxy);
        assert.ok(requests.length >= 3, `${requests.length} next-edit requests`);
        // Under load a gap between two typed keys can outlast the debounce, so an earlier request may carry the rename
        // half typed (seen in CI: "  let priceSu = 0;"); the one that brought the proposal carries it whole.
        const lastEdits = requests.map((request) => request.recent_edits.at(-1)?.new_lines);
        assert.ok(
          lastEdits.some((lines) => JSON.stringify(lines) === JSON.stringify(["  let priceSum = 0;"])),
          `no request carried the rename as its last edit: ${JSON.stringify(lastEdits)}`,
        );
      } catch (error) {
        await session.screenshot("failure").catch(() => undefined);
        throw error;
      }
    },
  );

  test("no next edit is ever requested for a file tabRelay.excludeGlobs covers", STEP, async () => {
    const session = vscode as VsCodeSession;
    const before = nextEditRequests(proxy as RecordingProxy).length;
    const editor = await session.openFile(EXCLUDED);
    await editor.locator(".view-lines").click();
    await selectWord(session.page, 3, "sum");
    await session.page.keyboard.type("priceSum", { delay: 25 });
    // Longer than the debounce and the local engine's answer take together, several times over.
    await sleep(4_000);
    assert.ok(await noHint(editor), "no next edit is drawn in an excluded file");
    // The first test's last pause in prices.js can still be asked about after `before` (seen once): only requests
    // about the excluded file count here.
    const requests = nextEditRequests(proxy as RecordingProxy).slice(before);
    assert.deepEqual(
      requests.map((request) => request.file_path).filter((path) => path === EXCLUDED),
      [],
    );
    assert.ok(
      nextEditRequests(proxy as RecordingProxy).every((request) =>
        request.recent_edits.every((edit) => !edit.file_path.startsWith("private/")),
      ),
      "no edit of the excluded file was ever sent",
    );
    writeFileSync(
      join(OUTPUT, "next-edit-requests.json"),
      `${JSON.stringify(nextEditRequests(proxy as RecordingProxy), null, 2)}\n`,
    );
  });
});

// Timed in a window of its own that asks the relay directly, as a person's editor does: through the recording proxy
// above, each request and each answer would take one more process's turn on the CPU (the test's own process, which
// also drives the browser), and the time measured would be partly the test's.
describe("next-edit latency in a real VS Code", { skip }, () => {
  let packagingDir = "";
  let relay: RelayUnderTest | undefined;
  let vscode: VsCodeSession | undefined;

  before(async () => {
    if (!prerequisites.ready) throw new Error(`cannot run the VS Code end-to-end test: ${prerequisites.reason}`);
    ensureRelayBuilt();
    packagingDir = mkdtempSync(join(tmpdir(), "tab-relay-e2e-vsix-"));
    mkdirSync(LATENCY_OUTPUT, { recursive: true });
    relay = await startCliRelay("e2e-next-edit-latency", join(LATENCY_OUTPUT, "relay.log"));
    vscode = await openWindow({
      packagingDir,
      outDir: LATENCY_OUTPUT,
      relay,
      relayUrl: relay.url,
      workspaceFiles: { [LATENCY_FILE]: LATENCY_FIXTURE },
    });
  }, STEP);

  after(async () => {
    await vscode?.close();
    await relay?.stop();
    rmSync(packagingDir, { recursive: true, force: true });
  });

  test(
    "the time from the end of the debounce to the next edit on screen, with the local engine, is measured per pause",
    { timeout: 240_000 + LATENCY_SAMPLES * 15_000 },
    async () => {
      const session = vscode as VsCodeSession;
      const { page } = session;
      try {
        const editor = await session.openFile(LATENCY_FILE);
        await editor.locator(".view-lines").click();
        await watchNextEditDrawn(page);
        const settled = await waitForQuietMachine();
        console.log(`[e2e] machine quiet after ${settled.waitedMs} ms (last half second ${settled.busy} busy)`);
        const samples: { name: string; ms: number; extensionHostMs: number }[] = [];
        for (const [i, name] of LATENCY_NAMES.entries()) {
          // The window's first pause pays the first-use costs (a connection, the first request's parsing) that the
          // tests above paid in the other window: it is done but not counted.
          const counted = i >= WARM_UP_PAUSES;
          // Each rename keeps the old name's words (applesA -> applesACount), so the local engine proposes it below.
          await selectWord(page, 2 + i * 6, name, LATENCY_FIXTURE);
          const typedFrom = Date.now();
          await armNextEditDrawn(page);
          await page.keyboard.type(`${name}Count`, { delay: 25 });
          // The page's own observer says when the hint is drawn; reading every span's style (waitForHint) while the
          // answer is on its way would load the renderer that is to draw it, so the hint's text is checked after.
          const drawn = await drawnAt(page);
          await waitForHint(editor, "Tab to jump");
          // The pause whose answer that frame drew: the last to end before it. A slow keystroke can end a pause in
          // the middle of the name, and its next edit is drawn, then typed over; it is a sample all the same.
          // VS Code writes the log channel to its file a moment later.
          const line = await waitUntil(`the log line of the next edit after ${name}`, 10_000, () =>
            drawnInLog(session)
              .filter((entry) => entry.pausedAt >= typedFrom && entry.pausedAt < drawn)
              .at(-1),
          );
          if (counted)
            samples.push({ name, ms: drawn - line.pausedAt, extensionHostMs: line.loggedAt - line.pausedAt });
          await page.keyboard.press("Escape");
          await waitUntil("Escape to take the next edit away", 10_000, async () =>
            (await noHint(editor)) ? true : undefined,
          );
        }
        const ms = samples.map((sample) => sample.ms);
        const host = samples.map((sample) => sample.extensionHostMs);
        const figures = {
          samples: ms.length,
          p50_ms: quantile(ms, 0.5),
          p99_ms: quantile(ms, 0.99),
          max_ms: Math.max(...ms),
          // The extension host's share: the pause's end to the decorations set (the relay's round trip included).
          extension_host_p50_ms: quantile(host, 0.5),
          extension_host_p99_ms: quantile(host, 0.99),
          loadavg: readFileSync("/proc/loadavg", "utf8").trim(),
          settled_after_ms: settled.waitedMs,
          cpus: availableParallelism(),
        };
        writeFileSync(join(OUTPUT, "next-edit-latency.json"), `${JSON.stringify({ ...figures, samples }, null, 2)}\n`);
        console.log(`[e2e] debounce end -> next edit on screen: ${JSON.stringify(figures)}`);
        // The end of the pause comes before the frame that draws its answer, on one machine's wall clock.
        for (const sample of samples) assert.ok(sample.ms > 0, `${sample.name}: ${sample.ms} ms`);
        // The goal is 50 ms (docs/benchmarks.md records the figures and the load); a median ten times that is broken.
        assert.ok(figures.p50_ms < 500, `median ${figures.p50_ms} ms`);
      } catch (error) {
        await session.screenshot("latency-failure").catch(() => undefined);
        throw error;
      }
    },
  );
});
