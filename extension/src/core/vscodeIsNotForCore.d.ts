// The core's tsconfig maps "vscode" to this file, which is not a module, so importing vscode in the core fails the
// typecheck: the core reaches the editor only through the interfaces the vscode adapter implements.
