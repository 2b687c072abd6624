import * as vscode from "vscode";
import { parseSettings, readSettingValues, type ParsedSettings } from "../core";

export const SECTION = "tabRelay";

/** The two settings setup needs, as "Open settings" shows them. */
export const SETUP_SETTINGS = [`${SECTION}.relayUrl`, `${SECTION}.workspaceSlug`] as const;

/**
 * Reads `tabRelay.*` and validates it in core; core decides which key a renamed setting is read from, with
 * `inspect`, which tells a value a person set (user, workspace, folder) from the manifest's default.
 */
export function readSettings(): ParsedSettings {
  const config = vscode.workspace.getConfiguration(SECTION);
  const { raw, keys } = readSettingValues({ get: (key) => config.get(key), inspect: (key) => config.inspect(key) });
  return parseSettings(raw, keys);
}

export function onSettingsChanged(listener: () => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((event) => {
    if (event.affectsConfiguration(SECTION)) listener();
  });
}

/** Enable/disable is a user setting so it survives restarts. */
export async function setEnabled(enabled: boolean): Promise<void> {
  await vscode.workspace.getConfiguration(SECTION).update("enabled", enabled, vscode.ConfigurationTarget.Global);
}

/**
 * Saves a setting where it takes effect: in the most specific place that already sets it (a workspace folder, the
 * workspace), since a value saved below that would be overridden, else in the user settings. `tabRelay.relayUrl`
 * is application-scoped, so VS Code only takes it from the user settings, which apply to remote windows too.
 */
export async function saveSetting(
  key: "relayUrl" | "workspaceSlug" | "disabledLanguages" | "enabledLanguages",
  value: unknown,
) {
  const config = vscode.workspace.getConfiguration(SECTION);
  const where = config.inspect(key);
  const target =
    where?.workspaceFolderValue !== undefined
      ? vscode.ConfigurationTarget.WorkspaceFolder
      : where?.workspaceValue !== undefined
        ? vscode.ConfigurationTarget.Workspace
        : vscode.ConfigurationTarget.Global;
  await config.update(key, value, target);
  return target === vscode.ConfigurationTarget.Global ? "user settings" : "workspace settings";
}

/**
 * Opens the Settings editor on the two settings setup needs. `@id:` with a comma-separated list shows exactly those
 * settings (VS Code's settings editor query syntax); relayUrl is application-scoped, so the User tab, where the
 * editor opens, shows it in remote windows too.
 */
export async function openSettings(): Promise<void> {
  await vscode.commands.executeCommand("workbench.action.openSettings", `@id:${SETUP_SETTINGS.join(",")}`);
}
