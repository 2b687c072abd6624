import { PathMatcher } from "./globs";
import { DEFAULT_EXCLUDE_GLOBS } from "./settings";

/** Why a file is not held, for the log and tests. */
export type Rejection =
  "untitled" | "outside the workspace" | "tabRelay.excludeGlobs" | "files.exclude" | "over 1 MB" | "binary";

export interface ExcludeSettings {
  /** `tabRelay.excludeGlobs`: never sent, matched against the path and every name in it. */
  readonly excludeGlobs: readonly string[];
  /** `files.exclude` per workspace folder key: a pattern set to `true`, or to a `when` condition, hides files. */
  readonly filesExclude?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

/** The two exclusion rules a file's path is checked against before anything of it is held or sent. */
export class Exclusions {
  private excludeGlobs = new PathMatcher(DEFAULT_EXCLUDE_GLOBS, { matchNames: true });
  private filesExclude = new Map<string, PathMatcher>();

  set(settings: ExcludeSettings): void {
    this.excludeGlobs = new PathMatcher(settings.excludeGlobs, { matchNames: true });
    this.filesExclude = new Map(
      Object.entries(settings.filesExclude ?? {}).map(([folder, patterns]) => [
        folder,
        new PathMatcher(hidingPatterns(patterns), { matchNames: false }),
      ]),
    );
  }

  /** Which rule excludes `path` in workspace folder `folder`, or undefined. */
  excludedBy(path: string, folder: string | undefined): Rejection | undefined {
    if (this.excludeGlobs.match(path) !== undefined) return "tabRelay.excludeGlobs";
    if (this.filesExclude.get(folder ?? "")?.match(path) !== undefined) return "files.exclude";
    return undefined;
  }
}

/**
 * The patterns of one `files.exclude` object that hide files. A pattern with a `when` condition (hide `x.js` when
 * `x.ts` exists) counts as hiding whatever the condition says: checking it would take a file system call per file,
 * and leaving such a file out costs only context.
 */
function hidingPatterns(patterns: Readonly<Record<string, unknown>>): string[] {
  return Object.entries(patterns)
    .filter(
      ([, value]) =>
        value === true ||
        (typeof value === "object" && value !== null && typeof (value as { when?: unknown }).when === "string"),
    )
    .map(([pattern]) => pattern);
}
