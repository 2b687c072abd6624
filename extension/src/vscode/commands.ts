import * as vscode from "vscode";
import { apiKeyFormatWarning, type Clock, type StatusController } from "../core";
import type { ApiKeyStore } from "./apiKeySecret";
import { openSettings, setEnabled } from "./settings";
import { COMMANDS, type StatusBar } from "./statusBar";

export interface CommandDeps {
  readonly clock: Clock;
  readonly status: StatusController;
  readonly apiKeys: ApiKeyStore;
  readonly log: vscode.LogOutputChannel;
  readonly statusBar: StatusBar;
}

const SNOOZE_CHOICES = [
  { label: "5 minutes", minutes: 5 },
  { label: "15 minutes", minutes: 15 },
  { label: "1 hour", minutes: 60 },
];

/** Every command in the manifest; each one forwards to the setting, the secret store or the status model. */
export function registerCommands({ clock, status, apiKeys, log, statusBar }: CommandDeps): vscode.Disposable[] {
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
    register(COMMANDS.setApiKey, async () => {
      const key = await vscode.window.showInputBox({
        title: "Tab: Set API Key",
        prompt: "The tab-relay API key for this workspace (stored in VS Code's secret storage)",
        placeHolder: "svc_ws_…",
        password: true,
        ignoreFocusOut: true,
        validateInput: (value) => {
          const warning = apiKeyFormatWarning(value);
          return warning === undefined
            ? undefined
            : { message: warning, severity: vscode.InputBoxValidationSeverity.Warning };
        },
      });
      if (key === undefined || key.trim() === "") return;
      await apiKeys.set(key.trim());
      log.info("API key stored in secret storage");
    }),
    register(COMMANDS.clearApiKey, async () => {
      await apiKeys.clear();
      log.info(`API key removed from secret storage; key now comes from ${await apiKeys.source()}`);
    }),
    register(COMMANDS.openSettings, () => openSettings()),
    register(COMMANDS.showLog, () => log.show()),
    register(COMMANDS.retry, () => status.dispatch({ type: "retry" })),
    register(COMMANDS.showMenu, () => statusBar.showMenu()),
  ];
}
