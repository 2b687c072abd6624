// Drives a real VS Code in end-to-end tests: code-server (VS Code 1.100.3 served over HTTP) with a throwaway
// profile, and Debian's Chromium through playwright-core. test/e2e/README.md and setup.sh explain the recipe.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import {
  cpSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";

export const CODE_SERVER_VERSION = "4.100.3";
export const CHROMIUM_PATH = "/usr/bin/chromium";
export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const SETUP_SCRIPT = join(REPO_ROOT, "test/e2e/setup.sh");

export function e2eHome(): string {
  return process.env.TAB_RELAY_E2E_HOME ?? join(homedir(), ".cache/tab-relay-e2e");
}

function codeServerPrefix(): string {
  return join(e2eHome(), `code-server-${CODE_SERVER_VERSION}`);
}

export function codeServerBin(): string {
  return join(codeServerPrefix(), "node_modules/.bin/code-server");
}

function prerequisitesPresent(): boolean {
  return (
    existsSync(join(codeServerPrefix(), ".install-complete")) &&
    existsSync(codeServerBin()) &&
    existsSync(CHROMIUM_PATH)
  );
}

export type Prerequisites = { ready: true } | { ready: false; reason: string };

/** Runs the setup script when code-server or Chromium is missing (about a minute the first time). */
export function ensurePrerequisites(): Prerequisites {
  if (prerequisitesPresent()) return { ready: true };
  console.log(`[e2e] code-server ${CODE_SERVER_VERSION} or Chromium missing: running ${SETUP_SCRIPT}`);
  const result = spawnSync("bash", [SETUP_SCRIPT], { stdio: ["ignore", "inherit", "inherit"], timeout: 15 * 60_000 });
  if (result.status === 0 && prerequisitesPresent()) return { ready: true };
  const how = result.error ? result.error.message : `exit code ${String(result.status ?? result.signal)}`;
  return { ready: false, reason: `${SETUP_SCRIPT} failed (${how}); see its output above` };
}

/**
 * Resolves with the first capture group of `pattern` in the child's stdout and stderr together (for example
 * the URL it listens on, when started on port 0); rejects if the child exits first or `timeoutMs` passes.
 */
export function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs: number, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = "";
    const finish = (error: Error | undefined, value = "") => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.stderr?.off("data", onData);
      child.off("exit", onExit);
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const value = pattern.exec(output)?.[1];
      if (value !== undefined) finish(undefined, value);
    };
    const onExit = (code: number | null) =>
      finish(new Error(`${what}: the process exited (${String(code)}) first:\n${output}`));
    const timer = setTimeout(
      () => finish(new Error(`timed out after ${timeoutMs} ms waiting for ${what}:\n${output}`)),
      timeoutMs,
    );
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.on("exit", onExit);
  });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a value other than undefined, or throws after `timeoutMs` with `what`. */
export async function waitUntil<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

export interface CodeServerOptions {
  /** The extension to install, packaged. */
  vsix: string;
  /** Files written into the opened workspace folder, by relative path. */
  workspaceFiles: Record<string, string>;
  /** User settings on top of the quiet defaults below. */
  settings?: Record<string, unknown>;
  /** Extra environment for code-server, which its extension host (where the extension runs) inherits. */
  env?: Record<string, string>;
  /** Where screenshots, the code-server log, the browser console and VS Code's logs end up. */
  outDir: string;
}

// Nothing but the inline completion may compete for Tab. Auto-closing brackets and quotes stay at VS Code's defaults,
// as people have them: typing `{` leaves `{|}`, and the ghost text has to come inside the pair.
const QUIET_SETTINGS: Record<string, unknown> = {
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "telemetry.telemetryLevel": "off",
  "security.workspace.trust.enabled": false,
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "extensions.ignoreRecommendations": true,
  "update.mode": "none",
  "git.enabled": false,
  "files.autoSave": "off",
  "editor.inlineSuggest.enabled": true,
  "editor.quickSuggestions": { other: "off", comments: "off", strings: "off" },
  "editor.suggestOnTriggerCharacters": false,
  "editor.wordBasedSuggestions": "off",
  "editor.parameterHints.enabled": false,
  "editor.formatOnType": false,
  "editor.acceptSuggestionOnEnter": "off",
  // Opening a JavaScript file made VS Code's TypeScript extension run `npm install types-registry@latest` and
  // `npm install @types/…` in the background (automatic type acquisition, seen in the next-edit latency window at
  // half a core for seconds, beside its TS server): a download from the registry in the middle of a test, and load
  // on the 2 cores the timed pauses run on. The setting is the extension's own (its package.json as shipped in
  // code-server 4.100.3, extensions/typescript-language-features, tagged usesOnlineServices).
  "typescript.disableAutomaticTypeAcquisition": true,
};

/** Headless Chromium as root in a sandboxed machine: no sandbox, no GPU, nothing phoning home. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

const GHOST_SAME_LINE = ".ghost-text-decoration, .ghost-text-decoration-preview";
const GHOST_LINES_BELOW = ".suggest-preview-text .view-line";

/** One code-server process with a fresh profile, and one headless Chromium page showing its workbench. */
export class VsCodeSession {
  private browser: Browser | undefined;
  private closed = false;
  private folders = 1;
  /**
   * How much of each extension host log file belonged to windows shown before the current one (by path, in
   * characters): an earlier window's activation or output must not count for the current one.
   */
  private readonly logMarks = new Map<string, number>();

  private constructor(
    readonly page: Page,
    private folder: string,
    readonly outDir: string,
    private readonly workDir: string,
    private readonly server: ChildProcess,
    private readonly extensionIds: string[],
    private readonly base: string,
  ) {}

  /** The workspace folder the window shows. */
  get workspaceDir(): string {
    return this.folder;
  }

  static async start(options: CodeServerOptions): Promise<VsCodeSession> {
    const work = mkdtempSync(join(tmpdir(), "tab-relay-e2e-"));
    const dirs = {
      userData: join(work, "user-data"),
      extensions: join(work, "extensions"),
      workspace: join(work, "workspace"),
      xdgConfig: join(work, "xdg-config"),
      xdgData: join(work, "xdg-data"),
      xdgCache: join(work, "xdg-cache"),
      tmp: join(work, "tmp"),
    };
    for (const dir of [...Object.values(dirs), join(dirs.userData, "User"), options.outDir])
      mkdirSync(dir, { recursive: true });
    writeWorkspaceFiles(dirs.workspace, options.workspaceFiles);
    const configFile = join(work, "code-server.yaml");
    writeFileSync(configFile, "auth: none\ncert: false\n");
    writeFileSync(
      join(dirs.userData, "User/settings.json"),
      JSON.stringify({ ...QUIET_SETTINGS, ...options.settings }, null, 2),
    );

    // code-server, VS Code and Chromium otherwise leave config, caches and sockets in ~ and /tmp.
    const isolatedEnv: Record<string, string | undefined> = {
      ...process.env,
      XDG_CONFIG_HOME: dirs.xdgConfig,
      XDG_DATA_HOME: dirs.xdgData,
      XDG_CACHE_HOME: dirs.xdgCache,
      TMPDIR: dirs.tmp,
    };
    const serverEnv = { ...isolatedEnv, ...options.env };
    const profileFlags = [
      "--config",
      configFile,
      "--user-data-dir",
      dirs.userData,
      "--extensions-dir",
      dirs.extensions,
    ];

    const install = spawnSync(codeServerBin(), [...profileFlags, "--install-extension", options.vsix, "--force"], {
      env: serverEnv,
      encoding: "utf8",
      timeout: 60_000,
    });
    if (install.status !== 0) {
      rmSync(work, { recursive: true, force: true });
      throw new Error(`code-server --install-extension ${options.vsix} failed:\n${install.stdout}\n${install.stderr}`);
    }
    const installed = JSON.parse(readFileSync(join(dirs.extensions, "extensions.json"), "utf8")) as {
      identifier: { id: string };
    }[];
    const extensionIds = installed.map((entry) => entry.identifier.id);

    const server = spawn(
      codeServerBin(),
      [
        ...profileFlags,
        "--bind-addr",
        "127.0.0.1:0",
        "--auth",
        "none",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--disable-getting-started-override",
        "--ignore-last-opened",
        dirs.workspace,
      ],
      // Its own process group, so that close() also ends the forked server and the extension hosts.
      { env: serverEnv, detached: true, stdio: ["ignore", "pipe", "pipe"] },
    );
    const serverLog = createWriteStream(join(options.outDir, "code-server.log"));
    server.stdout?.pipe(serverLog);
    server.stderr?.pipe(serverLog);

    let session: VsCodeSession | undefined;
    try {
      const base = await waitForOutput(
        server,
        /HTTP server listening on (http:\/\/[\d.:]+)/,
        60_000,
        "code-server to listen",
      );
      // The route table is complete a moment after that line.
      await waitUntil(
        "code-server /healthz",
        30_000,
        async () =>
          (await fetch(`${base}/healthz`)
            .then((response) => response.ok)
            .catch(() => false)) || undefined,
      );
      const browser = await chromium.launch({
        executablePath: CHROMIUM_PATH,
        headless: true,
        env: isolatedEnv,
        args: CHROMIUM_ARGS,
      });
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const consoleLog = createWriteStream(join(options.outDir, "browser-console.log"));
      page.on("console", (message) => consoleLog.write(`${message.type()}: ${message.text()}\n`));
      page.on("pageerror", (error) => consoleLog.write(`pageerror: ${error.message}\n`));
      session = new VsCodeSession(page, dirs.workspace, options.outDir, work, server, extensionIds, base);
      session.browser = browser;
      await session.showFolder(dirs.workspace, options.workspaceFiles);
      return session;
    } catch (error) {
      if (session) await session.close();
      else killGroup(server);
      throw error;
    }
  }

  /**
   * Shows another folder in the same window, with the same code-server, browser and profile (user settings and
   * extensions): the page loads the workbench again, and a new extension host starts for it. Call
   * waitForActivation next, as after start.
   */
  async openFolder(workspaceFiles: Record<string, string>): Promise<void> {
    const dir = join(this.workDir, `workspace-${++this.folders}`);
    mkdirSync(dir, { recursive: true });
    writeWorkspaceFiles(dir, workspaceFiles);
    // A log file that exists now belongs to an earlier window's extension host: the server gives each connection a
    // new `exthost<N>` folder (VS Code's src/vs/server/node/remoteAgentEnvironmentImpl.ts, `extensionHostLogsPath`). That host can still write to it after the new window opens (a late request's line was
    // seen in CI), so none of it counts for the new window, not even what comes later.
    for (const file of this.extensionHostLogFiles()) this.logMarks.set(file, Number.POSITIVE_INFINITY);
    this.folder = dir;
    await this.showFolder(dir, workspaceFiles);
  }

  private async showFolder(dir: string, workspaceFiles: Record<string, string>): Promise<void> {
    await this.page.goto(`${this.base}/?folder=${encodeURIComponent(dir)}`);
    await this.page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    // The explorer lists the workspace once the remote file system is connected.
    const firstFile = Object.keys(workspaceFiles)[0];
    if (firstFile !== undefined) {
      await this.page
        .locator(".explorer-folders-view .monaco-list-row", { hasText: firstFile.split("/")[0] ?? firstFile })
        .first()
        .waitFor({ timeout: 60_000 });
    }
  }

  /** Waits until the extension host has activated every installed extension; typing earlier requests nothing. */
  async waitForActivation(timeoutMs = 60_000): Promise<void> {
    const ids = this.extensionIds.map((id) => id.toLowerCase());
    await waitUntil(`activation of ${ids.join(", ")}`, timeoutMs, () => {
      const log = this.extensionHostLog().toLowerCase();
      const failed = ids.find((id) => log.includes(`activating extension ${id} failed`));
      if (failed) throw new Error(`extension ${failed} failed to activate; see ${join(this.outDir, "vscode-logs")}`);
      return ids.every((id) => log.includes(`_doactivateextension ${id},`)) || undefined;
    });
  }

  /** The remote extension host's log for the current window: one line per activation, and the error when activate() throws. */
  extensionHostLog(): string {
    return this.currentWindowLog((file) => basename(file) === "remoteexthost.log");
  }

  /**
   * What an extension wrote to its log output channel (`createOutputChannel(name, { log: true })`) in the current
   * window. VS Code writes it, a moment later, to `exthost<N>/<extension id>/<name>.log`.
   */
  outputChannelLog(extensionId: string, channel: string): string {
    const wanted = `/${join(extensionId, `${channel}.log`)}`.toLowerCase();
    return this.currentWindowLog((file) => file.toLowerCase().endsWith(wanted));
  }

  private currentWindowLog(pick: (file: string) => boolean): string {
    let text = "";
    for (const file of this.extensionHostLogFiles().filter(pick))
      text += readFileSync(file, "utf8").slice(this.logMarks.get(file) ?? 0);
    return text;
  }

  /** `user-data/logs/<stamp>/exthost<N>/*.log` and `…/exthost<N>/<extension id>/*.log`. */
  private extensionHostLogFiles(): string[] {
    const root = join(this.workDir, "user-data/logs");
    if (!existsSync(root)) return [];
    const files: string[] = [];
    for (const stamp of readdirSync(root, { withFileTypes: true })) {
      if (!stamp.isDirectory()) continue;
      for (const host of readdirSync(join(root, stamp.name), { withFileTypes: true })) {
        if (!host.isDirectory() || !host.name.startsWith("exthost")) continue;
        const hostDir = join(root, stamp.name, host.name);
        for (const entry of readdirSync(hostDir, { withFileTypes: true })) {
          if (entry.isFile() && entry.name.endsWith(".log")) files.push(join(hostDir, entry.name));
          if (!entry.isDirectory()) continue;
          for (const name of readdirSync(join(hostDir, entry.name)))
            if (name.endsWith(".log")) files.push(join(hostDir, entry.name, name));
        }
      }
    }
    return files;
  }

  /** Opens a workspace file (`src/a.js`) through Quick Open, focuses its editor and puts the cursor at the end. */
  async openFile(name: string): Promise<Locator> {
    const page = this.page;
    const editor = page.locator(`.editor-instance .monaco-editor[data-uri$="/${name}"]`);
    // Quick Open once more if the first did not bring the editor up: from the Settings editor's focused input, the
    // Enter that should open the file was once lost (seen in CI, the Settings editor still in front 30 s later).
    for (let attempt = 1; ; attempt++) {
      await page.keyboard.press("Control+P");
      const quickInput = page.locator(".quick-input-widget");
      await quickInput.locator("input").waitFor({ state: "visible" });
      await page.keyboard.type(name);
      // A row shows the file's name, with its folder as a separate description. Enter opens the focused row, which is
      // the recently opened file until the file search has answered: wait for the file's row to be the focused one.
      await quickInput
        .locator(".monaco-list-row.focused", { hasText: basename(name) })
        .first()
        .waitFor();
      await page.keyboard.press("Enter");
      try {
        await editor.waitFor({ timeout: attempt === 1 ? 15_000 : 30_000 });
        break;
      } catch (error) {
        if (attempt >= 2) throw error;
        await page.keyboard.press("Escape");
      }
    }
    await editor.locator(".view-lines").click();
    await page.keyboard.press("Control+End");
    return editor;
  }

  /**
   * Puts the keyboard focus back into `editor`, leaving its cursor where it is. A click on a notification's button
   * does not give it back: VS Code moves the focus to the next toast still shown, if any, and only otherwise to the
   * editor (NotificationsToasts.removeToast in src/vs/workbench/browser/parts/notifications/notificationsToasts.ts),
   * so the keys typed next would go to that toast.
   */
  async focusEditor(editor: Locator): Promise<void> {
    await editor.locator("textarea.inputarea, .native-edit-context").first().focus();
    await waitUntil(
      "the editor to have the keyboard focus",
      10_000,
      async () => (await editor.getAttribute("class"))?.split(/\s+/).includes("focused") || undefined,
    );
  }

  async screenshot(name: string): Promise<string> {
    const path = join(this.outDir, `${name}.png`);
    await this.page.screenshot({ path });
    return path;
  }

  /** The status bar entries' texts (codicons render as empty glyphs). */
  async statusBarTexts(): Promise<string[]> {
    return (await this.page.locator(".statusbar-item").allInnerTexts())
      .map((text) => text.trim())
      .filter((text) => text !== "");
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.browser?.close().catch(() => undefined);
    killGroup(this.server);
    await waitUntil(
      "code-server to exit",
      5_000,
      () => this.server.exitCode !== null || this.server.signalCode !== null || undefined,
    ).catch(() => undefined);
    try {
      process.kill(-(this.server.pid ?? 0), "SIGKILL");
    } catch {
      // the whole group is gone already
    }
    try {
      cpSync(join(this.workDir, "user-data/logs"), join(this.outDir, "vscode-logs"), { recursive: true });
    } catch {
      // no logs were written
    }
    rmSync(this.workDir, { recursive: true, force: true });
  }
}

function writeWorkspaceFiles(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
}

function killGroup(server: ChildProcess): void {
  if (server.pid === undefined || server.exitCode !== null || server.signalCode !== null) return;
  try {
    process.kill(-server.pid, "SIGTERM");
  } catch {
    // already gone
  }
}

/** Runs a command by its title through the command palette (F1), as a user would. */
export async function runFromPalette(vscode: VsCodeSession, title: string): Promise<void> {
  await vscode.page.keyboard.press("F1");
  const quickInput = vscode.page.locator(".quick-input-widget");
  await quickInput.locator("input").waitFor({ state: "visible" });
  await vscode.page.keyboard.type(title);
  await quickInput.locator(".monaco-list-row", { hasText: title }).first().waitFor();
  await vscode.page.keyboard.press("Enter");
  await quickInput.waitFor({ state: "hidden" });
}

/**
 * The ghost text currently shown in `editor`, or undefined when there is none: the part on the cursor's line,
 * then the lines below it. Those are a view zone whose lines are `.view-line`s of syntax-highlighted spans.
 */
export async function readGhostText(editor: Locator): Promise<string | undefined> {
  const sameLine = await editor.locator(GHOST_SAME_LINE).allTextContents();
  const linesBelow = await editor.locator(GHOST_LINES_BELOW).allTextContents();
  if (sameLine.length === 0 && linesBelow.length === 0) return undefined;
  return [sameLine.join(""), ...linesBelow].join("\n").replace(/\u00a0/g, " ");
}

/**
 * Types `text` and waits until the ghost text satisfies `accept`. If none shows up within a few seconds, the
 * last character is retyped: an edit is what re-triggers VS Code's inline completions (an explicit trigger sent
 * while no provider answered is ignored until the text changes).
 */
export async function typeAndWaitForGhostText(
  page: Page,
  editor: Locator,
  text: string,
  accept: (ghost: string) => boolean,
  timeoutMs = 30_000,
): Promise<string> {
  await page.keyboard.type(text, { delay: 25 });
  const deadline = Date.now() + timeoutMs;
  let lastSeen: string | undefined;
  let lastEdit = Date.now();
  for (;;) {
    const previous = lastSeen;
    lastSeen = await readGhostText(editor);
    // A streamed suggestion may grow after it first shows; only a text that held still for one poll is final.
    if (lastSeen !== undefined && lastSeen === previous && accept(lastSeen)) return lastSeen;
    if (Date.now() > deadline) {
      throw new Error(
        `no matching ghost text after typing ${JSON.stringify(text)}; last seen: ${JSON.stringify(lastSeen ?? null)}`,
      );
    }
    if (lastSeen === undefined && Date.now() - lastEdit > 5_000) {
      await page.keyboard.press("Backspace");
      await page.keyboard.type(text.slice(-1));
      lastEdit = Date.now();
    }
    await sleep(250);
  }
}

/**
 * Times, in the page, each keystroke to the first ghost text shown after it that contains `expected` (the element
 * VS Code draws: same-line decoration or the lines below). A ghost text still shown from an earlier key, typed
 * through, would otherwise count as soon as the editor redraws. Call once per page; `lastKeyToGhostMs` then reads
 * the figure for the last key.
 */
export async function watchKeyToGhost(page: Page, expected = ""): Promise<void> {
  // A string, run in the page: the test's TypeScript has no DOM types.
  await page.evaluate(`(() => {
    const selector = ${JSON.stringify(`${GHOST_SAME_LINE}, ${GHOST_LINES_BELOW}`)};
    const expected = ${JSON.stringify(expected.replace(/ /g, "\u00a0"))};
    const state = { lastKey: 0, ghostAfterLastKey: -1 };
    window.__keyToGhost = state;
    document.addEventListener("keydown", () => {
      state.lastKey = performance.now();
      state.ghostAfterLastKey = -1;
    }, true);
    new MutationObserver(() => {
      if (state.ghostAfterLastKey >= 0 || state.lastKey === 0) return;
      const shown = [...document.querySelectorAll(selector)].map((element) => element.textContent).join("\\n");
      if (shown !== "" && shown.replace(/ /g, "\u00a0").includes(expected))
        state.ghostAfterLastKey = performance.now() - state.lastKey;
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  })()`);
}

/** Milliseconds from the last keydown to the first ghost text after it, or undefined when none showed. */
export async function lastKeyToGhostMs(page: Page): Promise<number | undefined> {
  const ms = (await page.evaluate("window.__keyToGhost?.ghostAfterLastKey")) as number | undefined;
  return ms === undefined || ms < 0 ? undefined : Math.round(ms);
}
