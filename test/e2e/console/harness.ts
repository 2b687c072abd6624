// What the console's browser test needs around the browser: Chromium from setup.sh, the built console, one
// browser context per person with its problems recorded, and a look inside the PNG files it writes.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { CHROMIUM_ARGS, CHROMIUM_PATH, REPO_ROOT, SETUP_SCRIPT } from "../codeServer";

export type Prerequisites = { ready: true } | { ready: false; reason: string };

/** Runs the e2e setup script (idempotent, locked against the VS Code test running it too) when Chromium is missing. */
export function ensureChromium(): Prerequisites {
  if (existsSync(CHROMIUM_PATH)) return { ready: true };
  console.log(`[console-e2e] ${CHROMIUM_PATH} missing: running ${SETUP_SCRIPT}`);
  const result = spawnSync("bash", [SETUP_SCRIPT], { stdio: ["ignore", "inherit", "inherit"], timeout: 15 * 60_000 });
  if (existsSync(CHROMIUM_PATH)) return { ready: true };
  const how = result.error ? result.error.message : `exit code ${String(result.status ?? result.signal)}`;
  return { ready: false, reason: `${SETUP_SCRIPT} failed (${how}); see its output above` };
}

/** The viewports the browser tests take their screenshots at. */
export const LAPTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/**
 * Chromium for a browser test file, and why the file skips (or false) when it could not be installed: never under
 * CI, where a missing browser must fail the run; said loudly, with the file's tag, so a skip is never taken for a pass.
 */
export function chromiumFor(tag: string): { prerequisites: Prerequisites; skip: string | false } {
  const prerequisites = ensureChromium();
  const skip = !prerequisites.ready && !process.env.CI ? `SKIPPED, NOT TESTED: ${prerequisites.reason}` : false;
  if (skip) console.error(`\n${"!".repeat(100)}\n[${tag}] ${skip}\n${"!".repeat(100)}\n`);
  return { prerequisites, skip };
}

/** Runs a test's step; when it fails, the page it failed on is kept as failure-<name>.png in `output`. */
export async function keepFailedPage(
  output: string,
  name: string,
  person: PersonPage | undefined,
  body: () => Promise<void>,
): Promise<void> {
  try {
    await body();
  } catch (error) {
    await person?.page.screenshot({ path: join(output, `failure-${name}.png`), fullPage: true }).catch(() => undefined);
    throw error;
  }
}

const CONSOLE_SOURCES = join(REPO_ROOT, "relay/console");
const CONSOLE_BUNDLE = join(REPO_ROOT, "relay/dist/console/app.js");

function newestChange(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newestChange(join(path, name))));
}

/**
 * The relay serves the console from relay/dist/console, which a fresh checkout lacks and an edit of
 * relay/console leaves stale; either way the relay's build runs (under a second). A current build is left
 * alone, so a test running the relay's CLI from relay/dist at the same time is not disturbed.
 */
export function ensureConsoleBuilt(): void {
  if (existsSync(CONSOLE_BUNDLE) && statSync(CONSOLE_BUNDLE).mtimeMs >= newestChange(CONSOLE_SOURCES)) return;
  const build = spawnSync("npm", ["run", "build", "-w", "relay"], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    timeout: 120_000,
  });
  if (build.status !== 0)
    throw new Error(`building the relay and its console failed:\n${build.stdout}\n${build.stderr}`);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}

/** A person's own browser context (own cookies), with what went wrong in it written down. */
export interface PersonPage {
  page: Page;
  /** Uncaught exceptions in the page. */
  scriptErrors: string[];
  /** Every console message, failed request and HTTP error, for the log file. */
  log: string[];
}

export async function openPersonPage(
  browser: Browser,
  name: string,
  viewport: { width: number; height: number },
): Promise<PersonPage> {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, reducedMotion: "reduce" });
  // Quick failures: every step waits for something the console shows within a second or two.
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const person: PersonPage = { page, scriptErrors: [], log: [] };
  const note = (line: string) => person.log.push(`[${name}] ${line}`);
  page.on("console", (message) => note(`console.${message.type()}: ${message.text()}`));
  page.on("pageerror", (error) => {
    person.scriptErrors.push(`${error.name}: ${error.message}`);
    note(`pageerror: ${error.stack ?? error.message}`);
  });
  page.on("requestfailed", (request) =>
    note(`request failed: ${request.method()} ${request.url()} ${request.failure()?.errorText ?? ""}`),
  );
  page.on("response", (response) => {
    if (response.status() >= 400) note(`HTTP ${response.status()} ${response.request().method()} ${response.url()}`);
  });
  return person;
}

export function byTestId(id: string): string {
  return `[data-testid="${id}"]`;
}

/** Signs in through the form, the way a person pastes their key, and waits for the live connection. */
export async function signIn(page: Page, baseUrl: string, apiKey: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  const key = page.locator(byTestId("signin-key"));
  await key.fill(apiKey);
  await key.press("Enter");
  await page.locator(`${byTestId("live-status")}[data-state="connected"]`).waitFor();
}

/** Resolves when the locator shows text, whatever it is (an error slot is in the page, empty, before any error). */
export async function waitForText(locator: Locator): Promise<string> {
  await locator.filter({ hasText: /\S/ }).first().waitFor();
  return ((await locator.filter({ hasText: /\S/ }).first().textContent()) ?? "").trim();
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Width and height from a PNG's IHDR chunk, which must come right after the signature. */
export function pngSize(file: string): { width: number; height: number } {
  const bytes = readFileSync(file);
  if (bytes.length < 24 || !bytes.subarray(0, 8).equals(PNG_SIGNATURE)) throw new Error(`${file} is not a PNG`);
  if (bytes.toString("latin1", 12, 16) !== "IHDR") throw new Error(`${file} has no IHDR chunk first`);
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** A port nobody listens on right now, for a server that must be named (its URL given out) before it starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
