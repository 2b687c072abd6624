import * as vscode from "vscode";
import {
  ACTION_LABELS,
  describeNotice,
  describeStatus,
  type Notice,
  type StatusActionId,
  type StatusController,
} from "../core";

/** Command ids behind the status actions (contributed in package.json). */
export const COMMANDS: Readonly<Record<StatusActionId | "showMenu", string>> = {
  enable: "tabRelay.enable",
  disable: "tabRelay.disable",
  snooze: "tabRelay.snooze",
  resume: "tabRelay.resume",
  setApiKey: "tabRelay.setApiKey",
  clearApiKey: "tabRelay.clearApiKey",
  openSettings: "tabRelay.openSettings",
  showLog: "tabRelay.showLog",
  retry: "tabRelay.retry",
  showMenu: "tabRelay.showMenu",
};

const formatTime = (at: number) => new Date(at).toLocaleTimeString();

/** The status bar item: renders the core's status view, and offers its actions when clicked. */
export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("tabRelay.status", vscode.StatusBarAlignment.Right, 100);
  private readonly unsubscribe: () => void;

  constructor(
    private readonly status: StatusController,
    private readonly now: () => number,
  ) {
    this.item.name = "Tab";
    this.item.command = COMMANDS.showMenu;
    this.unsubscribe = status.onChange(() => this.render());
    this.render();
    this.item.show();
  }

  render(): void {
    const view = describeStatus(this.status.kind, this.status.model, this.now(), formatTime);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor =
      view.severity === "normal"
        ? undefined
        : new vscode.ThemeColor(
            view.severity === "error" ? "statusBarItem.errorBackground" : "statusBarItem.warningBackground",
          );
  }

  async showMenu(): Promise<void> {
    const view = describeStatus(this.status.kind, this.status.model, this.now(), formatTime);
    const picked = await vscode.window.showQuickPick(
      view.actions.map((id) => ({ label: ACTION_LABELS[id], id })),
      { placeHolder: view.tooltip, title: "Tab" },
    );
    if (picked) await vscode.commands.executeCommand(COMMANDS[picked.id]);
  }

  dispose(): void {
    this.unsubscribe();
    this.item.dispose();
  }
}

/** Shows a new problem once, with its actions as buttons. */
export async function showNotice(notice: Notice, relayUrl: string): Promise<void> {
  const view = describeNotice(notice.kind, notice.message, relayUrl);
  const labels = view.actions.map((id) => ACTION_LABELS[id]);
  const show = notice.kind === "unreachable" ? vscode.window.showWarningMessage : vscode.window.showErrorMessage;
  const choice = await show(view.message, ...labels);
  const action = view.actions.find((id) => ACTION_LABELS[id] === choice);
  if (action) await vscode.commands.executeCommand(COMMANDS[action]);
}
