import * as vscode from "vscode";
import {
  isStale,
  nextEditHint,
  pickNextEdit,
  viewOfNextEdit,
  type CompletionInput,
  type NextEditProposal,
  type NextEditSession,
  type NextEditUsage,
} from "../core";

export const NEXT_EDIT_COMMANDS = {
  accept: "tabRelay.nextEdit.accept",
  dismiss: "tabRelay.nextEdit.dismiss",
  /** Run by VS Code after it inserted a next edit drawn as ghost text (InlineCompletionItem.command). */
  ghostAccepted: "tabRelay.nextEdit.ghostAccepted",
} as const;
/** True while a next edit is drawn, so Tab and Escape mean it only then (package.json keybindings). */
const VISIBLE_KEY = "tabRelay.nextEditVisible";
/** Lines of the document read around the cursor for a request; more than the excerpt the request may carry. */
const LINES_AROUND = 130;

interface Shown {
  readonly proposal: NextEditProposal;
  readonly editor: vscode.TextEditor;
  readonly edit: NextEditProposal["edits"][number];
}

/**
 * Draws the core's next edits in VS Code: an insertion after the cursor on its line as ghost text (through the
 * inline completion provider, `ghostAt`), anything else as decorations with a "Tab to jump" / "Tab to apply" hint.
 * Escape, typing, or another editor takes it away. Every decision about what to ask and what to show is in core.
 */
export class NextEditPresenter implements vscode.Disposable {
  private shown: Shown | undefined;
  private ghost: { uri: string; version: number; line: number; character: number; text: string } | undefined;
  private applying = false;
  private readonly removed = vscode.window.createTextEditorDecorationType({
    textDecoration: "line-through",
    backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
  });
  private readonly preview = vscode.window.createTextEditorDecorationType({
    after: {
      color: new vscode.ThemeColor("editorGhostText.foreground"),
      backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
      margin: "0 0 0 2em",
    },
  });
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly session: NextEditSession,
    private readonly log: vscode.LogOutputChannel,
    private readonly usage?: NextEditUsage,
  ) {
    this.subscriptions = [
      vscode.commands.registerCommand(NEXT_EDIT_COMMANDS.accept, () => this.accept()),
      vscode.commands.registerCommand(NEXT_EDIT_COMMANDS.dismiss, () => this.clear("dismissed")),
      vscode.commands.registerCommand(NEXT_EDIT_COMMANDS.ghostAccepted, () => this.usage?.accepted()),
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (event.contentChanges.length === 0) return;
        this.session.cancel();
        // Typing goes on as if nothing were shown: the next edit simply goes away.
        if (this.applying) return;
        if (this.shown?.editor.document === event.document || this.ghost?.uri === event.document.uri.toString())
          this.clear("typed_over");
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.clear("dismissed")),
    ];
  }

  /** The completion session's pause hook: asks the core, then draws what comes back if it still fits. */
  onPause(input: CompletionInput, signal: AbortSignal, debouncedAt: number): void {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined || editor.document.uri.toString() !== input.uri || input.relativePath === undefined)
      return;
    const { document } = editor;
    const cursor = editor.selection.active;
    const firstLine = Math.max(0, cursor.line - LINES_AROUND);
    const lastLine = Math.min(document.lineCount - 1, cursor.line + LINES_AROUND);
    const lines: string[] = [];
    for (let line = firstLine; line <= lastLine; line++) lines.push(document.lineAt(line).text);
    this.session
      .onPause(
        {
          uri: input.uri,
          path: input.relativePath,
          languageId: document.languageId,
          version: document.version,
          lines,
          firstLine,
          cursor: { line: cursor.line, character: cursor.character },
        },
        signal,
        debouncedAt,
      )
      .then((proposal) => proposal && this.show(proposal))
      .catch((error: unknown) => this.log.warn(`next edit: ${error instanceof Error ? error.message : String(error)}`));
  }

  /** A ghost-text next edit for this place, for the inline completion provider. */
  ghostAt(uri: string, version: number, line: number, character: number): string | undefined {
    const ghost = this.ghost;
    if (ghost === undefined || ghost.uri !== uri || isStale(ghost.version, version)) return undefined;
    return ghost.line === line && ghost.character === character ? ghost.text : undefined;
  }

  private show(proposal: NextEditProposal): void {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined || editor.document.uri.toString() !== proposal.uri) return;
    // The person typed on while the relay answered: the edits are against text that is gone.
    if (isStale(proposal.version, editor.document.version)) return;
    const cursor = editor.selection.active;
    const edit = pickNextEdit(proposal.edits, cursor);
    if (edit === undefined) return;
    this.clear("dismissed");
    const view = viewOfNextEdit(edit, cursor, (line) =>
      line < editor.document.lineCount ? editor.document.lineAt(line).text : "",
    );
    this.usage?.shown({
      id: proposal.id,
      pausedAt: proposal.pausedAt,
      languageId: editor.document.languageId,
      text: edit.text,
    });
    if (view.kind === "ghost") {
      this.ghost = { uri: proposal.uri, version: proposal.version, ...cursor, text: view.text };
      void vscode.commands.executeCommand("editor.action.inlineSuggest.trigger");
      return;
    }
    this.shown = { proposal, editor, edit };
    this.draw();
    void vscode.commands.executeCommand("setContext", VISIBLE_KEY, true);
    // The wall-clock end of the pause, so the time to the screen can be measured where the screen is (the e2e).
    this.log.info(`next edit ${proposal.id} drawn; its pause ended at ${proposal.pausedAt}`);
  }

  private draw(): void {
    const shown = this.shown;
    if (shown === undefined) return;
    const { editor, edit } = shown;
    const view = viewOfNextEdit(edit, editor.selection.active, (line) => editor.document.lineAt(line).text);
    if (view.kind !== "decoration") return;
    const range = toRange(view.removed);
    editor.setDecorations(this.removed, range.isEmpty ? [] : [range]);
    const lineEnd = editor.document.lineAt(view.line).range.end;
    editor.setDecorations(this.preview, [
      {
        range: new vscode.Range(lineEnd, lineEnd),
        // The hint first, so a narrow editor still shows what Tab will do.
        renderOptions: { after: { contentText: `${nextEditHint(edit, editor.selection.active)}: ${view.preview}` } },
      },
    ]);
  }

  /** Tab: jump to the edit, or apply it when the cursor is already there. */
  private async accept(): Promise<void> {
    const shown = this.shown;
    if (shown === undefined) return;
    const { editor, edit, proposal } = shown;
    const start = new vscode.Position(edit.range.start.line, edit.range.start.character);
    if (editor.selection.active.line !== start.line) {
      editor.selection = new vscode.Selection(start, start);
      editor.revealRange(new vscode.Range(start, start), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      this.draw();
      return;
    }
    if (isStale(proposal.version, editor.document.version)) return this.clear("dismissed");
    this.applying = true;
    try {
      const applied = await editor.edit((builder) => builder.replace(toRange(edit.range), edit.text));
      if (applied) {
        this.usage?.accepted();
        const end = editor.document.positionAt(editor.document.offsetAt(start) + edit.text.length);
        editor.selection = new vscode.Selection(end, end);
      }
    } finally {
      this.applying = false;
      this.clear("dismissed");
    }
  }

  /** Takes the next edit away; `how` is what became of it unless it was applied first. */
  private clear(how: "dismissed" | "typed_over"): void {
    if (this.ghost !== undefined || this.shown !== undefined) this.usage?.ended(how);
    this.ghost = undefined;
    if (this.shown === undefined) return;
    this.shown.editor.setDecorations(this.removed, []);
    this.shown.editor.setDecorations(this.preview, []);
    this.shown = undefined;
    void vscode.commands.executeCommand("setContext", VISIBLE_KEY, false);
  }

  dispose(): void {
    this.clear("dismissed");
    this.removed.dispose();
    this.preview.dispose();
    for (const subscription of this.subscriptions) subscription.dispose();
  }
}

function toRange(range: {
  start: { line: number; character: number };
  end: { line: number; character: number };
}): vscode.Range {
  return new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}
