import * as vscode from "vscode";
import type { UsageTracker } from "../core";

export const USAGE_COMMANDS = {
  /** Run by VS Code after it inserted a whole suggestion (InlineCompletionItem.command); not in the palette. */
  accepted: "tabRelay.suggestionAccepted",
  /** Bound to Escape while ghost text is visible: records the dismissal, then hides it as VS Code would. */
  dismiss: "tabRelay.dismissSuggestion",
} as const;

/** `telemetry.telemetryLevel`: usage reports are off when it is `off`. */
export function telemetryAllowed(): boolean {
  return vscode.workspace.getConfiguration("telemetry").get<string>("telemetryLevel") !== "off";
}

/** Forwards what the tracker needs: the accept command, Escape, and every document edit. */
export function feedUsage(usage: UsageTracker): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand(USAGE_COMMANDS.accepted, (id: unknown) => {
      if (typeof id === "string") usage.accepted(id);
    }),
    vscode.commands.registerCommand(USAGE_COMMANDS.dismiss, async () => {
      usage.dismissed();
      await vscode.commands.executeCommand("editor.action.inlineSuggest.hide");
    }),
    vscode.workspace.onDidChangeTextDocument((event) => {
      if (event.contentChanges.length > 0) usage.edited(event.document.uri.toString(), event.contentChanges);
    }),
  ];
}
