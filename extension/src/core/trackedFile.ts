import type { TokenSet } from "./tokens";

/**
 * The shapes shared by the modules that hold the user's files (recentFiles), cut them into windows (windows),
 * remember where they were edited (editedRanges, editHistory) and pick context from them (relatedContext). Only
 * types live here, so each of those modules can read this one and none of them needs another's internals.
 */

export interface FileDescriptor {
  /** Identity: the document's URI. */
  readonly uri: string;
  /** Workspace-relative path, shown in the snippet header; undefined for a file outside every workspace folder. */
  readonly path: string | undefined;
  /** URI scheme; an `untitled` buffer is never held. */
  readonly scheme: string;
  /** Key of the workspace folder, for its own `files.exclude`. */
  readonly folder?: string | undefined;
}

export interface Position {
  readonly line: number;
  readonly character: number;
}

/** One change as VS Code reports it: the range it replaced, in the document as it was before this change. */
export interface TextChange {
  readonly range: { readonly start: Position; readonly end: Position };
  readonly text: string;
}

export interface Window {
  readonly start: number;
  readonly end: number;
  readonly tokens: TokenSet;
  /** Blank lines at its start and at its end, which are not sent. */
  readonly lead: number;
  readonly trail: number;
  /** Characters of its text without those blank lines (0 when it is all blank). */
  readonly chars: number;
}

/** What the selection reads from a held file. */
export interface TrackedFile {
  readonly uri: string;
  readonly path: string;
  readonly family: string;
  /** What the snippet header line costs, from snippetCost. */
  readonly headerChars: number;
  /** Larger is more recent. */
  readonly recency: number;
  readonly lines: readonly string[];
  readonly lineTokens: readonly (readonly number[])[];
  readonly windows: readonly Window[];
}

/** Lines `[start, end]` of a file, edited last at `at`; they move with their lines as lines above come or go. */
export interface EditedRange {
  readonly file: TrackedFile;
  start: number;
  end: number;
  at: number;
}
