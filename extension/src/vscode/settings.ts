import * as vscode from "vscode";
import { DEFAULT_SETTINGS, parseSettings, type ParsedSettings, type Settings } from "../core";

export const SECTION = "tabRelay";

// Every field of Settings is a `tabRelay.*` setting of the same name.
const KEYS = Object.keys(DEFAULT_SETTINGS) as (keyof Settings)[];

/** Reads `tabRelay.*` and validates it in core. */
export function readSettings(): ParsedSettings {
  const config = vscode.workspace.getConfiguration(SECTION);
  const raw: Record<string, unknown> = {};
  for (const key of KEYS) raw[key] = config.get(key);
  return parseSettings(raw);
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

export async function openSettings(): Promise<void> {
  await vscode.commands.executeCommand("workbench.action.openSettings", `@ext:tab-relay.tab-relay-vscode ${SECTION}`);
}
