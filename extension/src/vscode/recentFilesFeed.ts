import * as vscode from "vscode";
import {
  contextLanguageAllowed,
  type FileDescriptor,
  type LanguageContribution,
  type RecentFiles,
  type Settings,
} from "../core";

export interface RecentFilesFeed extends vscode.Disposable {
  /** Re-reads `tabRelay.excludeGlobs` (from the settings just parsed) and every folder's `files.exclude`. */
  excludesChanged(): void;
  /** Lets go of every held file whose language the settings just parsed switch off. */
  languagesChanged(): void;
}

/** Every language the installed extensions contribute, with the file names that select it. */
function contributedLanguages(): LanguageContribution[] {
  return vscode.extensions.all.flatMap((extension) =>
    (
      (extension.packageJSON as { contributes?: { languages?: LanguageContribution[] } }).contributes?.languages ?? []
    ).filter((language) => typeof language.id === "string"),
  );
}

/**
 * Tells the core's RecentFiles what the user works in: the open tabs (at start and as they open), the editor
 * that gets focus, every edit with its ranges, renames and deletions, and the exclusion settings. Which files are
 * held, and how much of them, is decided in core; this only reads files and forwards events.
 */
export function feedRecentFiles(
  files: RecentFiles,
  getSettings: () => Settings,
  log: vscode.LogOutputChannel,
): RecentFilesFeed {
  const decoder = new TextDecoder("utf-8");
  // Reads run one after another, so files become recent in the order the user met them.
  let queue = Promise.resolve();
  const enqueue = (work: () => Promise<void> | void) => {
    queue = queue
      .then(work)
      .catch((error: unknown) => log.debug(`recent files: ${error instanceof Error ? error.message : String(error)}`));
  };

  const describe = (uri: vscode.Uri): FileDescriptor => {
    const folder = vscode.workspace.getWorkspaceFolder(uri);
    return {
      uri: uri.toString(),
      path: folder ? vscode.workspace.asRelativePath(uri, false) : undefined,
      scheme: uri.scheme,
      folder: folder?.uri.toString(),
    };
  };
  const loaded = (uri: vscode.Uri) =>
    vscode.workspace.textDocuments.find((document) => document.uri.toString() === uri.toString());
  const languages = contributedLanguages();
  /** The language VS Code gave each held document, when it was loaded; a tab read from disk has none. */
  const languageOf = new Map<string, string | undefined>();
  /** Text of a switched-off language is never held, so it never goes out as context. */
  const allowed = (file: FileDescriptor, languageId: string | undefined) => {
    languageOf.set(file.uri, languageId);
    if (contextLanguageAllowed(file.path ?? file.uri, languageId, getSettings(), languages)) return true;
    files.remove(file.uri);
    log.debug(`recent files: not holding ${file.path ?? file.uri} (language switched off)`);
    return false;
  };
  const report = (file: FileDescriptor, rejection: string | undefined) => {
    if (rejection !== undefined) log.debug(`recent files: not holding ${file.path ?? file.uri} (${rejection})`);
  };

  const openDocument = (document: vscode.TextDocument) => {
    const file = describe(document.uri);
    if (allowed(file, document.languageId)) report(file, files.open(file, document.getText()));
  };

  /** A tab whose document VS Code has not loaded yet is read from disk, unless its name or size rules it out. */
  const openUri = async (uri: vscode.Uri) => {
    const document = loaded(uri);
    if (document) return openDocument(document);
    const file = describe(uri);
    if (!allowed(file, undefined)) return;
    const named = files.check(file);
    if (named !== undefined) return report(file, named);
    const { size } = await vscode.workspace.fs.stat(uri);
    const sized = files.check(file, size);
    if (sized !== undefined) return report(file, sized);
    const bytes = await vscode.workspace.fs.readFile(uri);
    // The document may have been opened while the file was read; its text is the newer one.
    const now = loaded(uri);
    report(file, files.open(file, now ? now.getText() : decoder.decode(bytes)));
  };

  const tabUri = (tab: vscode.Tab) => (tab.input instanceof vscode.TabInputText ? tab.input.uri : undefined);

  const excludesChanged = () =>
    files.setExcludes({
      excludeGlobs: getSettings().excludeGlobs,
      filesExclude: Object.fromEntries(
        (vscode.workspace.workspaceFolders ?? []).map((folder) => [
          folder.uri.toString(),
          vscode.workspace.getConfiguration("files", folder.uri).get<Record<string, unknown>>("exclude") ?? {},
        ]),
      ),
    });

  excludesChanged();
  // At start: background tabs first, then each group's active tab, then the focused editor, the most recent.
  const groups = vscode.window.tabGroups.all;
  const startup = [
    ...groups.flatMap((group) => group.tabs.filter((tab) => !tab.isActive)),
    ...groups.filter((group) => !group.isActive).flatMap((group) => group.tabs.filter((tab) => tab.isActive)),
    ...(vscode.window.tabGroups.activeTabGroup.activeTab ? [vscode.window.tabGroups.activeTabGroup.activeTab] : []),
  ];
  for (const tab of startup) {
    const uri = tabUri(tab);
    if (uri) enqueue(() => openUri(uri));
  }
  const active = vscode.window.activeTextEditor?.document;
  if (active) enqueue(() => openDocument(active));

  const subscriptions = [
    vscode.window.tabGroups.onDidChangeTabs((event) => {
      for (const tab of event.opened) {
        const uri = tabUri(tab);
        if (uri) enqueue(() => openUri(uri));
      }
    }),
    vscode.window.onDidChangeActiveTextEditor((editor) => {
      // At once, not behind the queue: the person types into it next, and an edit made before the file is held is
      // lost to the edit history (its text from before the edit is gone). In the real-VS-Code e2e the queue waited
      // on another tab's disk read, and a rename typed right after focusing was recorded from its half-typed line.
      if (editor) openDocument(editor.document);
    }),
    vscode.workspace.onDidChangeTextDocument((event) => {
      // VS Code's ranges and positions have the shape core expects; an event without changes is a dirty-flag update.
      if (event.contentChanges.length === 0) return;
      if (!allowed(describe(event.document.uri), event.document.languageId)) return;
      files.edit(event.document.uri.toString(), event.contentChanges, () => event.document.getText());
    }),
    vscode.workspace.onDidRenameFiles((event) => {
      for (const { oldUri, newUri } of event.files) {
        files.forgetFolder(oldUri.toString());
        files.rename(oldUri.toString(), describe(newUri));
      }
    }),
    vscode.workspace.onDidDeleteFiles((event) => {
      for (const uri of event.files) {
        files.remove(uri.toString());
        files.forgetFolder(uri.toString());
      }
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("files.exclude")) excludesChanged();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => excludesChanged()),
  ];
  const languagesChanged = () => {
    for (const [uri, languageId] of languageOf) {
      const path = vscode.workspace.asRelativePath(vscode.Uri.parse(uri), false);
      if (!contextLanguageAllowed(path, languageId, getSettings(), languages)) files.remove(uri);
    }
  };
  return {
    excludesChanged,
    languagesChanged,
    dispose: () => {
      for (const subscription of subscriptions) subscription.dispose();
    },
  };
}
