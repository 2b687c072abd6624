/**
 * A small glob matcher for the files whose content must never be sent (`tabRelay.excludeGlobs`) and those the user
 * hid (`files.exclude`). It lives in core rather than in the adapter because VS Code offers no glob test for an
 * arbitrary path (only `languages.match` on an open document), and because which files may leave the machine is
 * a decision that has to be unit-tested.
 *
 * Syntax, as in VS Code's settings: `*` (any characters but `/`), `**` (any number of folders), `?` (one
 * character but `/`), `[abc]` / `[a-z]` / `[!abc]`, `{a,b}`. Paths use `/`. Matching ignores case, so `.ENV`
 * is excluded on a case-insensitive file system too: excluding too much only costs context.
 */

export interface PathMatcherOptions {
  /**
   * Also test patterns without a `/` against every name in the path (`*.pem` then excludes `certs/a.pem`, as
   * in .gitignore). Without it a pattern is matched against the path from the workspace folder only.
   */
  readonly matchNames: boolean;
}

interface Compiled {
  readonly pattern: string;
  readonly regex: RegExp;
  readonly hasSlash: boolean;
}

/** Compiles a list of globs once; `match` then names the first pattern that covers a path or any of its folders. */
export class PathMatcher {
  private readonly compiled: readonly Compiled[];

  constructor(
    patterns: readonly string[],
    private readonly options: PathMatcherOptions,
  ) {
    this.compiled = patterns.flatMap((pattern) => {
      const normalized = normalizeGlob(pattern);
      return normalized === ""
        ? []
        : [{ pattern, regex: globToRegExp(normalized), hasSlash: normalized.includes("/") }];
    });
  }

  get empty(): boolean {
    return this.compiled.length === 0;
  }

  /**
   * The pattern that excludes `path` (workspace-relative, `/` or `\` separated), or undefined. A pattern that
   * matches a folder excludes everything inside it, as `files.exclude` hides a folder's contents.
   */
  match(path: string): string | undefined {
    if (this.compiled.length === 0) return undefined;
    const names = path
      .replace(/\\/g, "/")
      .split("/")
      .filter((name) => name !== "" && name !== ".");
    let prefix = "";
    for (const name of names) {
      prefix = prefix === "" ? name : `${prefix}/${name}`;
      for (const glob of this.compiled) {
        if (glob.regex.test(prefix)) return glob.pattern;
        if (!glob.hasSlash && this.options.matchNames && glob.regex.test(name)) return glob.pattern;
      }
    }
    return undefined;
  }
}

/** Drops what does not change the meaning: surrounding space, a leading `./` or `/`, a trailing `/`. */
function normalizeGlob(pattern: string): string {
  return pattern
    .trim()
    .replace(/\\/g, "/")
    .replace(/^(\.\/)+/, "")
    .replace(/^\/+/, "")
    .replace(/\/+$/, "");
}

/** The regular expression for one glob, anchored at both ends. */
export function globToRegExp(glob: string): RegExp {
  let out = "";
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const ch = glob.charAt(i);
    if (ch === "*") {
      let stars = 1;
      while (glob.charAt(i + 1) === "*") {
        stars++;
        i++;
      }
      if (stars === 1) out += "[^/]*";
      else if (glob.charAt(i + 1) === "/" && (i - stars < 0 || glob.charAt(i - stars) === "/")) {
        // `**/` is any number of whole folders, none included.
        out += "(?:[^/]*/)*";
        i++;
      } else out += ".*";
    } else if (ch === "?") out += "[^/]";
    else if (ch === "[") {
      const close = glob.indexOf("]", i + 2);
      if (close === -1) out += "\\[";
      else {
        let body = glob.slice(i + 1, close);
        const negated = body.startsWith("!") || body.startsWith("^");
        if (negated) body = body.slice(1);
        out += `[${negated ? "^/" : ""}${body.replace(/[\\\]^]/g, "\\$&")}]`;
        i = close;
      }
    } else if (ch === "{") {
      braces++;
      out += "(?:";
    } else if (ch === "}" && braces > 0) {
      braces--;
      out += ")";
    } else if (ch === "," && braces > 0) out += "|";
    else out += ch.replace(/[.+^${}()|\\/]/g, "\\$&");
  }
  // An unclosed `{` would leave the expression unbalanced; such a pattern matches nothing rather than throwing.
  if (braces > 0) return /$^/;
  return new RegExp(`^${out}$`, "i");
}
