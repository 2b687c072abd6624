// The parts of the `vscode` module the recent-files feed uses, as plain objects a test drives, so the adapter's wiring
// runs under node:test. Importing this module first makes `require("vscode")` (the adapters' `import * as vscode`,
// compiled to CommonJS) return the stand-in; the real module exists only inside VS Code's extension host.
import Module from "node:module";

type Listener<T> = (event: T) => void;

/** vscode.EventEmitter's shape: `event` subscribes and returns a disposable; `fire` calls every listener. */
export class StandInEmitter<T> {
  private readonly listeners = new Set<Listener<T>>();
  readonly event = (listener: Listener<T>) => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };
  fire(event: T): void {
    for (const listener of [...this.listeners]) listener(event);
  }
}

/** vscode.Uri for `file:` URIs: toString() is the identity the adapters key files by. */
export class StandInUri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  static file(path: string): StandInUri {
    return new StandInUri("file", path);
  }
  static parse(text: string): StandInUri {
    const url = new URL(text);
    return new StandInUri(url.protocol.slice(0, -1), decodeURIComponent(url.pathname));
  }
  toString(): string {
    return `${this.scheme}://${encodeURI(this.path)}`;
  }
}

export class StandInTabInputText {
  constructor(readonly uri: StandInUri) {}
}

export interface StandInDocument {
  readonly uri: StandInUri;
  readonly languageId: string;
  getText(): string;
}

interface Tab {
  readonly input: unknown;
  readonly isActive: boolean;
}

/** One workspace folder at `root`, with the documents and files a test puts in it. */
export class VscodeStandIn {
  readonly textDocuments: StandInDocument[] = [];
  /** Files on disk by path, for tabs whose document VS Code has not loaded. */
  readonly disk = new Map<string, string>();
  readonly didChangeTextDocument = new StandInEmitter<{
    document: StandInDocument;
    contentChanges: readonly {
      range: { start: { line: number; character: number }; end: { line: number; character: number } };
      text: string;
    }[];
  }>();
  readonly didChangeTabs = new StandInEmitter<{ opened: readonly Tab[] }>();
  readonly didChangeActiveTextEditor = new StandInEmitter<{ document: StandInDocument } | undefined>();
  activeTextEditor: { document: StandInDocument } | undefined;
  /** Reads from disk wait for this, so a test can hold them as a slow disk or a busy window would. */
  diskReads: Promise<void> = Promise.resolve();
  /** Languages the installed extensions contribute, as their package.json files declare them. */
  languages: { id: string; extensions?: string[]; filenames?: string[] }[] = [];

  constructor(readonly root: string) {}

  get folder() {
    return { uri: StandInUri.file(this.root), name: "project", index: 0 };
  }

  /** A document VS Code has loaded, with the language it gave it. */
  document(path: string, languageId: string, text: string): StandInDocument {
    let current = text;
    const document = { uri: StandInUri.file(`${this.root}/${path}`), languageId, getText: () => current };
    this.textDocuments.push(document);
    this.disk.set(path, text);
    // Appends at the end, as typing there would, and tells listeners with VS Code's change shape.
    (document as StandInDocument & { append(text: string): void }).append = (added: string) => {
      const lines = current.split("\n");
      const end = { line: lines.length - 1, character: (lines.at(-1) ?? "").length };
      current += added;
      this.didChangeTextDocument.fire({ document, contentChanges: [{ range: { start: end, end }, text: added }] });
    };
    return document;
  }

  /** Opens `document` in a tab and focuses its editor, as VS Code reports both. */
  show(document: StandInDocument): void {
    this.didChangeTabs.fire({ opened: [{ input: new StandInTabInputText(document.uri), isActive: true }] });
    this.activeTextEditor = { document };
    this.didChangeActiveTextEditor.fire(this.activeTextEditor);
  }

  /** The module object `require("vscode")` returns. */
  module(): unknown {
    const relative = (uri: StandInUri) => uri.path.slice(this.root.length + 1);
    const inFolder = (uri: StandInUri) => uri.path.startsWith(`${this.root}/`);
    const none = () => ({ dispose: () => undefined });
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the getters below read the stand-in's fields as they are now
    const self = this;
    return {
      Uri: StandInUri,
      TabInputText: StandInTabInputText,
      extensions: {
        get all() {
          return [{ packageJSON: { contributes: { languages: self.languages } } }];
        },
      },
      window: {
        tabGroups: {
          all: [],
          activeTabGroup: { activeTab: undefined },
          onDidChangeTabs: this.didChangeTabs.event,
        },
        get activeTextEditor() {
          return self.activeTextEditor;
        },
        onDidChangeActiveTextEditor: this.didChangeActiveTextEditor.event,
      },
      workspace: {
        get workspaceFolders() {
          return [self.folder];
        },
        get textDocuments() {
          return self.textDocuments;
        },
        getWorkspaceFolder: (uri: StandInUri) => (inFolder(uri) ? this.folder : undefined),
        asRelativePath: (uri: StandInUri) => (inFolder(uri) ? relative(uri) : uri.path),
        getConfiguration: () => ({ get: () => ({}) }),
        fs: {
          stat: async (uri: StandInUri) => {
            await self.diskReads;
            return { size: (this.disk.get(relative(uri)) ?? "").length };
          },
          readFile: (uri: StandInUri) => Promise.resolve(new TextEncoder().encode(this.disk.get(relative(uri)) ?? "")),
        },
        onDidChangeTextDocument: this.didChangeTextDocument.event,
        onDidRenameFiles: none,
        onDidDeleteFiles: none,
        onDidChangeConfiguration: none,
        onDidChangeWorkspaceFolders: none,
      },
    };
  }
}

let current: VscodeStandIn | undefined;
function standIn(): VscodeStandIn {
  if (current === undefined) throw new Error("no VscodeStandIn installed");
  return current;
}

/** Makes `standIn` the `vscode` module from now on (the module object is built once, its getters read `current`). */
export function installVscodeStandIn(standInNow: VscodeStandIn): void {
  current = standInNow;
}

const internals = Module as unknown as {
  _load(request: string, parent: unknown, isMain: boolean): unknown;
};
const load = internals._load.bind(Module);
let moduleObject: unknown;
internals._load = (request, parent, isMain) => {
  if (request !== "vscode") return load(request, parent, isMain);
  moduleObject ??= {
    // Every member forwards to the stand-in installed at the time of the call.
    get Uri() {
      return StandInUri;
    },
    get TabInputText() {
      return StandInTabInputText;
    },
    get extensions() {
      return (standIn().module() as { extensions: unknown }).extensions;
    },
    get window() {
      return (standIn().module() as { window: unknown }).window;
    },
    get workspace() {
      return (standIn().module() as { workspace: unknown }).workspace;
    },
  };
  return moduleObject;
};
