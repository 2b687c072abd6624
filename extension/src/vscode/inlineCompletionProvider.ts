import { posix } from "node:path";
import * as vscode from "vscode";
import type { CompletionInput, CompletionSession, UsageTracker } from "../core";
import { NEXT_EDIT_COMMANDS } from "./nextEditPresenter";
import { USAGE_COMMANDS } from "./usageFeed";

/**
 * How much of the document around the cursor the pipeline reads, each side: more than the relay accepts
 * (16,384 characters), so reading a huge file costs the same as a small one on every keystroke.
 */
const WINDOW_CHARS = 32_768;

/**
 * Adapts VS Code's provider calls to the core session: documents become plain data, cancellation an AbortSignal.
 * A suggestion handed to VS Code is announced to the usage tracker, and carries the command VS Code runs on Tab.
 */
export function createInlineCompletionProvider(
  session: CompletionSession,
  usage?: UsageTracker,
  edits?: EditTimes,
  nextEdits?: { ghostAt(uri: string, version: number, line: number, character: number): string | undefined },
): vscode.InlineCompletionItemProvider {
  return {
    async provideInlineCompletionItems(document, position, context, token) {
      // A next edit that inserts after the cursor on its line is shown as ordinary ghost text.
      const nextEdit = nextEdits?.ghostAt(document.uri.toString(), document.version, position.line, position.character);
      if (nextEdit !== undefined)
        return [
          new vscode.InlineCompletionItem(nextEdit, new vscode.Range(position, position), {
            command: NEXT_EDIT_COMMANDS.ghostAccepted,
            title: "Next edit applied",
          }),
        ];
      const controller = new AbortController();
      const subscription = token.onCancellationRequested(() => controller.abort());
      if (token.isCancellationRequested) controller.abort();
      try {
        const { input, base } = toInput(document, position, context, edits?.editedAt(document.uri.toString()));
        const suggestion = await session.provide(input, controller.signal);
        if (suggestion === undefined || token.isCancellationRequested) return undefined;
        const range = new vscode.Range(
          document.positionAt(base + suggestion.start),
          document.positionAt(base + suggestion.end),
        );
        const id = usage?.shown(suggestion);
        const accepted =
          id === undefined ? undefined : { command: USAGE_COMMANDS.accepted, title: "Accepted", arguments: [id] };
        return [new vscode.InlineCompletionItem(suggestion.insertText, range, accepted)];
      } finally {
        subscription.dispose();
      }
    },
  };
}

/** The pipeline's input, with offsets into a window of the document that starts at `base`. */
function toInput(
  document: vscode.TextDocument,
  position: vscode.Position,
  context: vscode.InlineCompletionContext,
  editedAt: number | undefined,
): { input: CompletionInput; base: number } {
  const cursor = document.offsetAt(position);
  const start = document.positionAt(Math.max(0, cursor - WINDOW_CHARS));
  const base = document.offsetAt(start);
  const selected = context.selectedCompletionInfo;
  const input: CompletionInput = {
    uri: document.uri.toString(),
    relativePath: relativePath(document.uri),
    scheme: document.uri.scheme,
    languageId: document.languageId,
    title: posix.basename(document.uri.path),
    text: document.getText(new vscode.Range(start, document.positionAt(cursor + WINDOW_CHARS))),
    offset: cursor - base,
    documentOffset: base,
    cursorLine: position.line,
    selected: selected && {
      start: document.offsetAt(selected.range.start) - base,
      end: document.offsetAt(selected.range.end) - base,
      text: selected.text,
    },
    editedAt,
  };
  return { input, base };
}

function relativePath(uri: vscode.Uri): string | undefined {
  return vscode.workspace.getWorkspaceFolder(uri) ? vscode.workspace.asRelativePath(uri, false) : undefined;
}

export interface EditTimes extends vscode.Disposable {
  /** When the document was last edited, on `now`'s clock; undefined before its first edit. */
  editedAt(uri: string): number | undefined;
}

/**
 * The time of each document's last edit, as the extension host hears of it: the keystroke the debounce counts from.
 * VS Code itself waits before it asks inline completion providers, so the provider's call comes later than the key.
 */
export function trackEditTimes(now: () => number): EditTimes {
  const times = new Map<string, number>();
  const subscriptions = [
    vscode.workspace.onDidChangeTextDocument((event) => {
      if (event.contentChanges.length > 0) times.set(event.document.uri.toString(), now());
    }),
    vscode.workspace.onDidCloseTextDocument((document) => times.delete(document.uri.toString())),
  ];
  return {
    editedAt: (uri) => times.get(uri),
    dispose: () => {
      for (const subscription of subscriptions) subscription.dispose();
    },
  };
}
