/**
 * The repository replay's projects and what a developer has open while typing one of their files. Pure: the
 * files come in as text, so the rules can be tested on small made-up projects.
 *
 * Neighbours of a typed file, in the order they are opened (the last opened is the most recent):
 * 1. files that import it (at most MAX_IMPORTERS, nearest in the tree first, not an index that re-exports it): the
 *    callers of what is being written;
 * 2. the files it imports (at most MAX_IMPORTS, in the order of its import lines), resolved as the compiler would
 *    (relative paths with `.js` written for `.ts`, folders by their index, the project's own package names), a
 *    barrel that only re-exports followed to the files declaring the names taken through it, as "Go to
 *    Definition" lands there;
 * 3. its test beside it (`x.test.ts` next to `x.ts`, or in a `tests/` folder), or the module beside a test.
 * Files typed earlier in the same project stay open as recently edited files.
 */

export interface ProjectFile {
  readonly path: string;
  readonly text: string;
}

export interface Project {
  readonly name: string;
  readonly files: ReadonlyMap<string, string>;
  /** Package specifiers that name a file of the project itself (`@tab-relay/shared`, `zod/v4`). */
  readonly packages: Readonly<Record<string, string>>;
  /** The files typed, in this order: a fixed list, chosen before any result was seen. */
  readonly typed: readonly string[];
}

export const MAX_IMPORTERS = 2;
export const MAX_IMPORTS = 5;

/** One import or export-from statement: the module, and which of its exports it takes. */
export interface ImportStatement {
  readonly specifier: string;
  readonly kind: "import" | "export";
  /** The module's exports taken, by their names there; "all" for a namespace, a default, a side effect or `export *`. */
  readonly taken: readonly string[] | "all";
  /** For an export: the names it exports them under, pairwise with `taken`; "all" for `export *`. */
  readonly exported: readonly string[] | "all";
}

const STATEMENT =
  /(?:^|[\n;])[ \t]*(import|export)\b([^;'"]*?)\bfrom[ \t]*["']([^"'\n]+)["']|(?:^|[\n;])[ \t]*import[ \t]*["']([^"'\n]+)["']/g;

/** A file's static import and export-from statements, in order (not dynamic imports, nor those in comments). */
export function importStatements(text: string): ImportStatement[] {
  const code = stripComments(text);
  const out: ImportStatement[] = [];
  STATEMENT.lastIndex = 0;
  for (let match = STATEMENT.exec(code); match !== null; match = STATEMENT.exec(code)) {
    const [, keyword, clause = "", from, sideEffect] = match;
    if (sideEffect !== undefined) {
      out.push({ specifier: sideEffect, kind: "import", taken: "all", exported: [] });
      continue;
    }
    const kind = keyword === "export" ? "export" : "import";
    const braces = /\{([^}]*)\}/.exec(clause);
    // Anything besides a list in braces (a default import, `* as ns`, `*`) takes the module whole.
    const whole =
      braces === null ||
      clause
        .replace(braces[0], "")
        .replace(/\btype\b|,/g, "")
        .trim() !== "";
    const pairs = (braces?.[1] ?? "")
      .split(",")
      .map((part) => part.trim().replace(/^type\s+/, ""))
      .filter((part) => part !== "")
      .map((part) => part.split(/\s+as\s+/));
    const starExport = kind === "export" && /^\s*(?:type\s+)?\*\s*$/.test(clause);
    out.push({
      specifier: from ?? "",
      kind,
      taken: whole ? "all" : pairs.map(([name = ""]) => name),
      exported:
        kind === "import"
          ? []
          : starExport
            ? "all"
            : whole
              ? [clause.replace(/^\s*(?:type\s+)?\*\s*as\s+/, "").trim()]
              : pairs.map(([name = "", alias]) => alias ?? name),
    });
  }
  return out;
}

/** The module specifiers of a file's static import and export-from statements, in order. */
export function importSpecifiers(text: string): string[] {
  return importStatements(text).map((statement) => statement.specifier);
}

/** The project file a specifier names from `from`, or undefined (a package from outside, or a missing file). */
export function resolveImport(
  project: Pick<Project, "files" | "packages">,
  from: string,
  specifier: string,
): string | undefined {
  const own = project.packages[specifier];
  if (own !== undefined) return project.files.has(own) ? own : undefined;
  if (!specifier.startsWith(".")) return undefined;
  const base = joinPath(dirname(from), specifier);
  const stem = base.replace(/\.[cm]?js$/, "");
  for (const candidate of [base, `${stem}.ts`, `${stem}.tsx`, `${stem}/index.ts`])
    if (project.files.has(candidate)) return candidate;
  return undefined;
}

/** A file that only re-exports (an index): it exports something, and every statement imports or exports without declaring. */
export function isBarrel(text: string): boolean {
  const statements = stripComments(text)
    .split(/;|\n(?=\s*(?:import|export)\b)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement !== "");
  const reexport = (statement: string) => /^export\s+(?:type\s+)?(?:\*|\{)/.test(statement);
  return (
    statements.some(reexport) && statements.every((statement) => /^import\b/.test(statement) || reexport(statement))
  );
}

/**
 * The files `path` imports, in import order without repeats. A barrel is followed to the files that declare the
 * names taken through it (all of them for a namespace import), as "Go to Definition" would land there.
 */
export function importsOf(project: Pick<Project, "files" | "packages">, path: string): string[] {
  const out: string[] = [];
  const visited = new Set<string>();
  const visit = (from: string, wanted: readonly string[] | "all", direct: boolean) => {
    for (const statement of importStatements(project.files.get(from) ?? "")) {
      const taken = direct ? statement.taken : passedOn(statement, wanted);
      if (taken === undefined) continue;
      const target = resolveImport(project, from, statement.specifier);
      if (target === undefined || target === path || out.includes(target)) continue;
      const text = project.files.get(target) ?? "";
      if (isBarrel(text)) {
        const key = `${target}\u0000${taken === "all" ? "*" : taken.join(",")}`;
        if (!visited.has(key)) {
          visited.add(key);
          visit(target, taken, false);
        }
      } else if (direct || taken === "all" || taken.some((name) => declaresExport(text, name))) out.push(target);
    }
  };
  visit(path, "all", true);
  return out;
}

/** What a barrel's statement passes on of the names wanted from the barrel, by their names in its module. */
function passedOn(
  statement: ImportStatement,
  wanted: readonly string[] | "all",
): readonly string[] | "all" | undefined {
  if (statement.kind === "import") return wanted === "all" ? statement.taken : undefined;
  if (statement.exported === "all") return wanted;
  if (wanted === "all") return statement.taken;
  if (statement.taken === "all") return statement.exported.some((name) => wanted.includes(name)) ? "all" : undefined;
  const taken = statement.taken;
  const names = statement.exported.flatMap((name, i) => (wanted.includes(name) ? [taken[i] ?? name] : []));
  return names.length > 0 ? names : undefined;
}

/** Whether a module declares an export of this name (a declaration, or a local export list). */
export function declaresExport(text: string, name: string): boolean {
  const escaped = name.replace(/[$]/g, "\\$");
  const declared = new RegExp(
    `\\bexport\\s+(?:declare\\s+)?(?:default\\s+)?(?:async\\s+)?(?:abstract\\s+)?(?:function\\*?|class|const|let|var|type|interface|enum|namespace)\\s+${escaped}(?![\\w$])`,
  );
  const listed = new RegExp(`\\bexport\\s*(?:type\\s*)?\\{[^}]*(?<![\\w$])${escaped}(?![\\w$])[^}]*\\}`);
  return declared.test(text) || listed.test(text);
}

/** Files of the project that import `path` directly, nearest in the tree first, then by path. */
export function importersOf(project: Pick<Project, "files" | "packages">, path: string): string[] {
  const importers: string[] = [];
  for (const [other, text] of project.files) {
    if (other === path) continue;
    // An index that re-exports it is not a caller.
    if (
      importSpecifiers(text).some((specifier) => resolveImport(project, other, specifier) === path) &&
      !isBarrel(text)
    )
      importers.push(other);
  }
  return importers.sort((a, b) => treeDistance(path, a) - treeDistance(path, b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** `x.test.ts` beside `x.ts` (same folder or a `tests/` folder below it), or the module beside a test. */
export function companionOf(files: ReadonlyMap<string, string>, path: string): string | undefined {
  const test = /^(.*?)([^/]+)\.test\.(tsx?|[cm]?js)$/.exec(path);
  if (test) {
    const [, folder = "", name = "", ext = ""] = test;
    const up = folder.replace(/(^|\/)(?:tests?|__tests__)\/$/, "$1");
    return [`${folder}${name}.${ext}`, `${up}${name}.${ext}`].find(
      (candidate) => candidate !== path && files.has(candidate),
    );
  }
  const module = /^(.*?)([^/]+)\.(tsx?|[cm]?js)$/.exec(path);
  if (!module) return undefined;
  const [, folder = "", name = "", ext = ""] = module;
  return [
    `${folder}${name}.test.${ext}`,
    `${folder}tests/${name}.test.${ext}`,
    `${folder}__tests__/${name}.test.${ext}`,
  ].find((candidate) => files.has(candidate));
}

/** The neighbours of a typed file, oldest opened first (see the top of this file). */
export function neighboursOf(project: Project, path: string): string[] {
  const companion = companionOf(project.files, path);
  const importers = importersOf(project, path)
    .filter((file) => file !== companion)
    .slice(0, MAX_IMPORTERS);
  const imports = importsOf(project, path)
    .filter((file) => file !== companion && !importers.includes(file))
    .slice(0, MAX_IMPORTS);
  return [...importers, ...imports, ...(companion === undefined ? [] : [companion])];
}

/**
 * The part of a file the typist writes: from the line where `from` of it begins, at most `maxChars` characters,
 * ending at a line end. The document starts as everything before it, as when extending a file.
 */
export function typedRange(text: string, from: number, maxChars: number): { start: number; end: number } {
  const at = Math.floor(text.length * from);
  const newline = text.lastIndexOf("\n", at - 1);
  const start = newline === -1 ? 0 : newline + 1;
  const lineEnd = text.indexOf("\n", start + maxChars);
  return { start, end: lineEnd === -1 ? text.length : lineEnd + 1 };
}

export function languageOf(path: string): string {
  if (/\.tsx?$/.test(path)) return "typescript";
  if (/\.[cm]?js$/.test(path)) return "javascript";
  if (path.endsWith(".md")) return "markdown";
  return "plaintext";
}

/** Comments blanked out (line breaks kept), so commented-out imports do not count; strings are left alone. */
function stripComments(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, " "))
    .replace(/(^|[^:"'`\\])\/\/[^\n]*/g, "$1");
}

function dirname(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash === -1 ? "" : path.slice(0, slash);
}

function joinPath(folder: string, relative: string): string {
  const parts = folder === "" ? [] : folder.split("/");
  for (const part of relative.split("/")) {
    if (part === "..") parts.pop();
    else if (part !== "." && part !== "") parts.push(part);
  }
  return parts.join("/");
}

/** Folders between two files: 0 in the same folder, more the further apart they are in the tree. */
function treeDistance(a: string, b: string): number {
  const left = dirname(a).split("/");
  const right = dirname(b).split("/");
  let common = 0;
  while (common < left.length && common < right.length && left[common] === right[common]) common++;
  return left.length - common + (right.length - common);
}
