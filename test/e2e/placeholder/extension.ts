// Stand-in for the real extension until `npm run package -w tab-relay-vscode` exists: the same settings
// (tabRelay.relayUrl, tabRelay.workspaceSlug, key from TAB_RELAY_API_KEY) and the same status bar wording,
// so that the harness can be proven against it. Bundled and packaged by placeholder/package.ts.
import * as vscode from "vscode";

export function activate(context: vscode.ExtensionContext): void {
  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  status.text = "Tab: ready";
  status.show();
  context.subscriptions.push(status);

  const provider: vscode.InlineCompletionItemProvider = {
    async provideInlineCompletionItems(document, position, _context, token) {
      const config = vscode.workspace.getConfiguration("tabRelay");
      const relayUrl = config.get<string>("relayUrl") ?? "";
      const before = document.getText(new vscode.Range(new vscode.Position(0, 0), position)).slice(-600);
      await new Promise((resolve) => setTimeout(resolve, 120));
      if (token.isCancellationRequested || relayUrl === "") return [];
      const response = await fetch(`${relayUrl.replace(/\/$/, "")}/api/v1/tab/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${process.env.TAB_RELAY_API_KEY ?? ""}` },
        body: JSON.stringify({
          stream: false,
          tab_context: {
            surface: "code",
            workspace_slug: config.get<string>("workspaceSlug") ?? "",
            entity_id: vscode.workspace.asRelativePath(document.uri),
            document_type: "plaintext",
            active_text_before_cursor: before,
          },
        }),
      });
      if (response.status === 401) {
        status.text = "$(error) Tab: unauthorized";
        return [];
      }
      status.text = "Tab: ready";
      const body = (await response.json()) as { choices: { message: { content: string } }[] };
      const text = body.choices[0]?.message.content ?? "";
      return text.trim().length < 2 ? [] : [new vscode.InlineCompletionItem(text, new vscode.Range(position, position))];
    },
  };
  context.subscriptions.push(vscode.languages.registerInlineCompletionItemProvider({ pattern: "**" }, provider));
}

export function deactivate(): void {}
