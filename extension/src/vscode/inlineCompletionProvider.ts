import { posix } from "node:path";
import * as vscode from "vscode";
import type { CompletionInput, CompletionSession, VisibleEditorText } from "../core";

/** Adapts VS Code's provider calls to the core session: documents become plain data, cancellation an AbortSignal. */
export function createInlineCompletionProvider(session: CompletionSession): vscode.InlineCompletionItemProvider {
  return {
    async provideInlineCompletionItems(document, position, context, token) {
      const controller = new AbortController();
      const subscription = token.onCancellationRequested(() => controller.abort());
      if (token.isCancellationRequested) controller.abort();
      try {
        const suggestion = await session.provide(toInput(document, position, context), controller.signal);
        if (suggestion === undefined || token.isCancellationRequested) return undefined;
        const range = new vscode.Range(document.positionAt(suggestion.start), document.positionAt(suggestion.end));
        return [new vscode.InlineCompletionItem(suggestion.insertText, range)];
      } finally {
        subscription.dispose();
      }
    },
  };
}

function toInput(document: vscode.TextDocument, position: vscode.Position, context: vscode.InlineCompletionContext): CompletionInput {
  const selected = context.selectedCompletionInfo;
  return {
    uri: document.uri.toString(),
    relativePath: relativePath(document.uri),
    scheme: document.uri.scheme,
    languageId: document.languageId,
    title: posix.basename(document.uri.path),
    text: document.getText(),
    offset: document.offsetAt(position),
    selected: selected && {
      start: document.offsetAt(selected.range.start),
      end: document.offsetAt(selected.range.end),
      text: selected.text,
    },
    otherEditors: otherEditors(document),
  };
}

function relativePath(uri: vscode.Uri): string | undefined {
  return vscode.workspace.getWorkspaceFolder(uri) ? vscode.workspace.asRelativePath(uri, false) : undefined;
}

/** What the user can see in the other editors, as extra context. */
function otherEditors(active: vscode.TextDocument): VisibleEditorText[] {
  return vscode.window.visibleTextEditors
    .filter((editor) => editor.document !== active && editor.document.uri.scheme !== "output")
    .map((editor) => ({
      path: relativePath(editor.document.uri) ?? posix.basename(editor.document.uri.path),
      languageId: editor.document.languageId,
      text: editor.visibleRanges.map((range) => editor.document.getText(range)).join("\n"),
    }));
}
