import { posix } from "node:path";
import * as vscode from "vscode";
import {
  actionLabel,
  activeEditorInfo,
  describeNotice,
  describeStatus,
  type ActiveEditorInfo,
  type Notice,
  type Settings,
  type StatusActionId,
  type StatusController,
} from "../core";

/** Command ids behind the status actions (contributed in package.json). */
export const COMMANDS: Readonly<Record<StatusActionId | "showMenu" | "toggleLanguage", string>> = {
  enable: "tabRelay.enable",
  disable: "tabRelay.disable",
  snooze: "tabRelay.snooze",
  resume: "tabRelay.resume",
  setup: "tabRelay.setup",
  setApiKey: "tabRelay.setApiKey",
  clearApiKey: "tabRelay.clearApiKey",
  openSettings: "tabRelay.openSettings",
  showLog: "tabRelay.showLog",
  retry: "tabRelay.retry",
  useKeyWorkspace: "tabRelay.useKeyWorkspace",
  disableLanguage: "tabRelay.disableLanguage",
  enableLanguage: "tabRelay.enableLanguage",
  toggleLanguage: "tabRelay.toggleLanguage",
  showMenu: "tabRelay.showMenu",
};

const formatTime = (at: number) => new Date(at).toLocaleTimeString();

/** The active editor's file as the core's status describes it, or undefined without a text editor. */
function activeEditor(settings: Settings): ActiveEditorInfo | undefined {
  const document = vscode.window.activeTextEditor?.document;
  if (document === undefined) return undefined;
  const inWorkspace = vscode.workspace.getWorkspaceFolder(document.uri) !== undefined;
  return activeEditorInfo(
    {
      relativePath: inWorkspace ? vscode.workspace.asRelativePath(document.uri, false) : undefined,
      title: posix.basename(document.uri.path),
      languageId: document.languageId,
    },
    settings,
  );
}

/**
 * The status bar item: renders the core's status view for the active editor, offers its actions when clicked, and
 * keeps the context keys the command palette's `when` clauses read (`tabRelay.snoozed`, `tabRelay.problem`).
 */
export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("tabRelay.status", vscode.StatusBarAlignment.Right, 100);
  private readonly unsubscribe: () => void;
  private readonly subscriptions: vscode.Disposable[];
  private context = { snoozed: false, problem: "" };

  constructor(
    private readonly status: StatusController,
    private readonly now: () => number,
    private readonly getSettings: () => Settings,
  ) {
    this.item.name = "Tab Relay";
    this.item.command = COMMANDS.showMenu;
    this.unsubscribe = status.onChange(() => this.render());
    this.subscriptions = [vscode.window.onDidChangeActiveTextEditor(() => this.render())];
    this.render();
    this.item.show();
  }

  render(): void {
    const view = this.view();
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor =
      view.severity === "normal"
        ? undefined
        : new vscode.ThemeColor(
            view.severity === "error" ? "statusBarItem.errorBackground" : "statusBarItem.warningBackground",
          );
    const context = { snoozed: this.status.kind === "snoozed", problem: this.status.model.problem?.kind ?? "" };
    if (context.snoozed !== this.context.snoozed)
      void vscode.commands.executeCommand("setContext", "tabRelay.snoozed", context.snoozed);
    if (context.problem !== this.context.problem)
      void vscode.commands.executeCommand("setContext", "tabRelay.problem", context.problem);
    this.context = context;
  }

  async showMenu(): Promise<void> {
    const editor = activeEditor(this.getSettings());
    const view = this.view(editor);
    const picked = await vscode.window.showQuickPick(
      view.actions.map((id) => ({ label: actionLabel(id, editor), id })),
      { placeHolder: view.tooltip, title: "Tab Relay" },
    );
    if (picked) await vscode.commands.executeCommand(COMMANDS[picked.id]);
  }

  private view(editor = activeEditor(this.getSettings())) {
    return describeStatus(this.status.kind, this.status.model, this.now(), formatTime, editor);
  }

  dispose(): void {
    this.unsubscribe();
    for (const subscription of this.subscriptions) subscription.dispose();
    this.item.dispose();
  }
}

/** Shows a new problem once, with its actions as buttons. */
export async function showNotice(notice: Notice, relayUrl: string): Promise<void> {
  const view = describeNotice(notice.kind, notice.message, relayUrl, notice.keyWorkspace, notice.configured);
  const labels = view.actions.map((id) => actionLabel(id));
  const show = notice.kind === "unreachable" ? vscode.window.showWarningMessage : vscode.window.showErrorMessage;
  const choice = await show(view.message, ...labels);
  const action = view.actions.find((id) => actionLabel(id) === choice);
  if (action) await vscode.commands.executeCommand(COMMANDS[action]);
}
