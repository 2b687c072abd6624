// The pipeline's public surface, for the VS Code adapters, benchmarks and tests.
export * from "./types";
export * from "./settings";
export * from "./debounce";
export * from "./prefilter";
export * from "./context";
export * from "./tokens";
export * from "./globs";
export * from "./languageFamily";
export * from "./recentFiles";
export * from "./relatedContext";
export * from "./cache";
export * from "./request";
export * from "./postprocess";
export * from "./status";
export * from "./statusView";
export * from "./completionSession";
