import * as vscode from "vscode";
import {
  apiKeyFormatProblem,
  checkConnection,
  describeConnection,
  describeWorkspace,
  isLanguageEnabled,
  languageName,
  parseSettings,
  type Clock,
  type Settings,
  type StatusController,
} from "../core";
import type { ApiKeyStore } from "./apiKeySecret";
import { openSettings, readSettings, saveSetting, setEnabled } from "./settings";
import { COMMANDS, type StatusBar } from "./statusBar";

export interface CommandDeps {
  readonly clock: Clock;
  readonly status: StatusController;
  readonly apiKeys: ApiKeyStore;
  readonly log: vscode.LogOutputChannel;
  readonly statusBar: StatusBar;
  readonly getSettings: () => Settings;
}

const SNOOZE_CHOICES = [
  { label: "5 minutes", minutes: 5 },
  { label: "15 minutes", minutes: 15 },
  { label: "1 hour", minutes: 60 },
];

/**
 * Where the key goes, said truthfully: VS Code's secret storage belongs to the VS Code installation the window runs
 * in (for a remote window, the local one), and one key there serves every window and workspace.
 */
const KEY_STORAGE = "Stored in VS Code's secret storage on this computer and used by every window.";

/** The key input box: refuses a value that cannot be a key (prefix, length, checksum) with the reason. */
function askForKey(title: string, keepHint: string | undefined): Thenable<string | undefined> {
  return vscode.window.showInputBox({
    title,
    prompt: `Your tab-relay API key (svc_ws_…). ${KEY_STORAGE}${keepHint ? ` ${keepHint}` : ""}`,
    placeHolder: "svc_ws_…",
    password: true,
    ignoreFocusOut: true,
    // An Error-severity message keeps Enter from accepting the value (VS Code's InputBoxValidationSeverity).
    validateInput: (value) => {
      const problem = apiKeyFormatProblem(value);
      return problem === undefined
        ? undefined
        : { message: problem, severity: vscode.InputBoxValidationSeverity.Error };
    },
  });
}

/** Every command in the manifest; each one forwards to the setting, the secret store or the status model. */
export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  const { clock, status, apiKeys, log, statusBar } = deps;
  const register = (id: string, run: (...args: unknown[]) => unknown) => vscode.commands.registerCommand(id, run);
  return [
    register(COMMANDS.enable, async () => {
      status.dispatch({ type: "resumed" });
      await setEnabled(true);
    }),
    register(COMMANDS.disable, () => setEnabled(false)),
    register(COMMANDS.snooze, async (minutesArg) => {
      const minutes =
        typeof minutesArg === "number" && minutesArg > 0
          ? minutesArg
          : (await vscode.window.showQuickPick(SNOOZE_CHOICES, { title: "Snooze inline completions for…" }))?.minutes;
      if (minutes === undefined) return;
      status.dispatch({ type: "snoozed", until: clock.now() + minutes * 60_000 });
      log.info(`snoozed for ${minutes} min`);
    }),
    register(COMMANDS.resume, () => status.dispatch({ type: "resumed" })),
    register(COMMANDS.setup, () => setUp(deps)),
    register(COMMANDS.setApiKey, async () => {
      const key = await askForKey("Tab Relay: Set API Key", undefined);
      if (key === undefined || key.trim() === "") return;
      await apiKeys.set(key.trim());
      log.info("API key stored in secret storage");
      // Saving a key confirms the connection, as setup does.
      const settings = deps.getSettings();
      const check = await checkConnection(
        { fetch: (url, init) => fetch(url, init), clock },
        { ...settings, apiKey: key.trim(), timeoutMs: settings.requestTimeoutMs },
      );
      const message = `Tab Relay: ${describeConnection(check, settings.relayUrl)}`;
      log.info(message);
      if (check.kind === "connected") void vscode.window.showInformationMessage(message);
      else if (check.kind === "wrongWorkspace") await offerKeyWorkspace(check.owner.workspace, message);
      else void vscode.window.showErrorMessage(message, "Set up…").then(runIf("Set up…", COMMANDS.setup));
    }),
    register(COMMANDS.clearApiKey, async () => {
      await apiKeys.clear();
      log.info(`API key removed from secret storage; ${describeKeySource(await apiKeys.source())}`);
    }),
    register(COMMANDS.useKeyWorkspace, async () => {
      const problem = status.model.problem;
      if (problem?.kind !== "wrongWorkspace") return;
      const where = await saveSetting("workspaceSlug", problem.keyWorkspace.slug);
      log.info(`tabRelay.workspaceSlug set to ${problem.keyWorkspace.slug} in the ${where}`);
    }),
    register(COMMANDS.disableLanguage, () => toggleLanguage(deps, false)),
    register(COMMANDS.enableLanguage, () => toggleLanguage(deps, true)),
    register(COMMANDS.toggleLanguage, () => {
      const languageId = vscode.window.activeTextEditor?.document.languageId;
      if (languageId === undefined) return;
      return toggleLanguage(deps, !isLanguageEnabled(deps.getSettings(), languageId));
    }),
    register(COMMANDS.openSettings, () => openSettings()),
    register(COMMANDS.showLog, () => log.show()),
    register(COMMANDS.retry, () => status.dispatch({ type: "retry" })),
    register(COMMANDS.showMenu, () => statusBar.showMenu()),
  ];
}

const runIf = (label: string, command: string) => (choice: string | undefined) =>
  choice === label ? vscode.commands.executeCommand(command) : undefined;

/** For the log: where the key comes from now, never the key. */
export function describeKeySource(source: "secret storage" | "TAB_RELAY_API_KEY" | "nowhere"): string {
  if (source === "nowhere") return "no API key yet (run Tab Relay: Set Up)";
  return `API key from ${source === "secret storage" ? "VS Code's secret storage" : "the TAB_RELAY_API_KEY environment variable"}`;
}

async function offerKeyWorkspace(workspace: { slug: string; name: string }, message: string): Promise<void> {
  const use = `Use ${workspace.slug}`;
  const choice = await vscode.window.showWarningMessage(message, use, "Set up…");
  if (choice === use) await saveSetting("workspaceSlug", workspace.slug);
  else if (choice === "Set up…") await vscode.commands.executeCommand(COMMANDS.setup);
}

async function toggleLanguage(deps: CommandDeps, enable: boolean): Promise<void> {
  const languageId = vscode.window.activeTextEditor?.document.languageId;
  if (languageId === undefined) return;
  const settings = deps.getSettings();
  const disabled = settings.disabledLanguages.filter((id) => id !== languageId);
  if (enable) {
    await saveSetting("disabledLanguages", disabled);
    const enabled = readSettings().settings.enabledLanguages;
    if (!enabled.includes("*") && !enabled.includes(languageId))
      await saveSetting("enabledLanguages", [...enabled, languageId]);
  } else await saveSetting("disabledLanguages", [...disabled, languageId]);
  deps.log.info(`inline completions ${enable ? "enabled" : "disabled"} for ${languageName(languageId)}`);
}

/**
 * One command for everything setup needs: the relay's URL, the API key and the workspace, checked against the relay
 * (`GET /api/v1/me`) before anything is saved, and each saved where it takes effect.
 */
async function setUp(deps: CommandDeps): Promise<void> {
  const { apiKeys, log, clock } = deps;
  const current = deps.getSettings();
  const title = (step: number) => `Tab Relay: Set Up (${step}/3)`;
  const relayUrl = await vscode.window.showInputBox({
    title: title(1),
    prompt: "The URL of your tab-relay server (your team's admin has it).",
    value: current.relayUrl,
    ignoreFocusOut: true,
    validateInput: (value) => {
      const parsed = parseSettings({ relayUrl: value });
      return parsed.problems.length === 0 && value.trim() !== ""
        ? undefined
        : { message: "Enter an http:// or https:// URL", severity: vscode.InputBoxValidationSeverity.Error };
    },
  });
  if (relayUrl === undefined) return;
  const url = parseSettings({ relayUrl }).settings.relayUrl;

  const existing = await apiKeys.get();
  const typed = await askForKey(title(2), existing === undefined ? undefined : "Leave empty to keep the key in use.");
  if (typed === undefined) return;
  const apiKey = typed.trim() === "" ? existing : typed.trim();
  if (apiKey === undefined) return;

  const first = await checkConnection(
    { fetch: (u, init) => fetch(u, init), clock },
    {
      relayUrl: url,
      apiKey,
      workspaceSlug: current.workspaceSlug,
      timeoutMs: current.requestTimeoutMs,
    },
  );
  if (first.kind !== "connected" && first.kind !== "wrongWorkspace") {
    const message = `Tab Relay: ${describeConnection(first, url)} Nothing was saved.`;
    log.warn(message);
    void vscode.window.showErrorMessage(message, "Try again").then(runIf("Try again", COMMANDS.setup));
    return;
  }
  const keyWorkspace = first.owner.workspace;
  const workspaceSlug = await vscode.window.showInputBox({
    title: title(3),
    prompt: `The workspace to complete in. This key belongs to ${describeWorkspace(keyWorkspace)}.`,
    value: keyWorkspace.slug,
    ignoreFocusOut: true,
    validateInput: (value) =>
      value.trim() === keyWorkspace.slug
        ? undefined
        : {
            message: `This key belongs to ${keyWorkspace.slug}; the relay refuses it for any other workspace.`,
            severity: vscode.InputBoxValidationSeverity.Error,
          },
  });
  if (workspaceSlug === undefined) return;

  if (typed.trim() !== "") await apiKeys.set(apiKey);
  const urlWhere = await saveSetting("relayUrl", url);
  const slugWhere = await saveSetting("workspaceSlug", workspaceSlug.trim());
  deps.status.dispatch({ type: "credentialsChanged" });
  const message = `Tab Relay: ${describeConnection({ kind: "connected", owner: first.owner }, url)}`;
  log.info(
    `${message} Relay URL saved in the ${urlWhere}, workspace in the ${slugWhere}${
      typed.trim() !== "" ? ", API key in VS Code's secret storage" : ""
    }.`,
  );
  void vscode.window.showInformationMessage(message);
}
