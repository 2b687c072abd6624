/**
 * The repository replay's projects and what a developer has open while typing one of their files. Pure: the
 * files come in as text, so the rules can be tested on small made-up projects.
 *
 * Neighbours of a typed file, in the order they are opened (the last opened is the most recent):
 * 1. files that import it (at most MAX_IMPORTERS, nearest in the tree first): the callers of what is being written;
 * 2. the files it imports (at most MAX_IMPORTS, in the order of its import lines), resolved as the compiler would
 *    (relative paths with `.js` written for `.ts`, folders by their index, the project's own package names), a
 *    barrel that only re-exports followed to the files it re-exports, as "Go to Definition" lands there;
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

const IMPORT = /(?:^|[\n;])[ \t]*(?:import|export)\b[^;'"]*?\bfrom[ \t]*["']([^"'\n]+)["']|(?:^|[\n;])[ \t]*import[ \t]*["']([^"'\n]+)["']/g;

/** The module specifiers of a file's static import and export-from statements, in order. */
export function importSpecifiers(text: string): string[] {
  const code = stripComments(text);
  const out: string[] = [];
  IMPORT.lastIndex = 0;
  for (let match = IMPORT.exec(code); match !== null; match = IMPORT.exec(code)) {
    const specifier = match[1] ?? match[2];
    if (specifier !== undefined) out.push(specifier);
  }
  return out;
}

/** The project file a specifier names from `from`, or undefined (a package from outside, or a missing file). */
export function resolveImport(project: Pick<Project, "files" | "packages">, from: string, specifier: string): string | undefined {
  const own = project.packages[specifier];
  if (own !== undefined) return project.files.has(own) ? own : undefined;
  if (!specifier.startsWith(".")) return undefined;
  const base = joinPath(dirname(from), specifier);
  const stem = base.replace(/\.[cm]?js$/, "");
  for (const candidate of [base, `${stem}.ts`, `${stem}.tsx`, `${stem}/index.ts`]) if (project.files.has(candidate)) return candidate;
  return undefined;
}

/** A file that only imports and re-exports (an index): every statement imports, or exports without declaring. */
export function isBarrel(text: string): boolean {
  const statements = stripComments(text)
    .split(/;|\n(?=\s*(?:import|export)\b)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement !== "");
  return statements.length > 0 && statements.every((statement) => /^import\b/.test(statement) || /^export\s+(?:type\s+)?(?:\*|\{)/.test(statement));
}

/** The files `path` imports, barrels followed to what they re-export, in import order without repeats. */
export function importsOf(project: Pick<Project, "files" | "packages">, path: string): string[] {
  const out: string[] = [];
  const seen = new Set([path]);
  const visit = (from: string) => {
    for (const specifier of importSpecifiers(project.files.get(from) ?? "")) {
      const target = resolveImport(project, from, specifier);
      if (target === undefined || seen.has(target)) continue;
      seen.add(target);
      if (isBarrel(project.files.get(target) ?? "")) visit(target);
      else out.push(target);
    }
  };
  visit(path);
  return out;
}

/** Files of the project that import `path` directly, nearest in the tree first, then by path. */
export function importersOf(project: Pick<Project, "files" | "packages">, path: string): string[] {
  const importers: string[] = [];
  for (const [other, text] of project.files) {
    if (other === path) continue;
    if (importSpecifiers(text).some((specifier) => resolveImport(project, other, specifier) === path)) importers.push(other);
  }
  return importers.sort((a, b) => treeDistance(path, a) - treeDistance(path, b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** `x.test.ts` beside `x.ts` (same folder or a `tests/` folder below it), or the module beside a test. */
export function companionOf(files: ReadonlyMap<string, string>, path: string): string | undefined {
  const test = /^(.*?)([^/]+)\.test\.(tsx?|[cm]?js)$/.exec(path);
  if (test) {
    const [, folder = "", name = "", ext = ""] = test;
    const up = folder.replace(/(^|\/)(?:tests?|__tests__)\/$/, "$1");
    return [`${folder}${name}.${ext}`, `${up}${name}.${ext}`].find((candidate) => candidate !== path && files.has(candidate));
  }
  const module = /^(.*?)([^/]+)\.(tsx?|[cm]?js)$/.exec(path);
  if (!module) return undefined;
  const [, folder = "", name = "", ext = ""] = module;
  return [`${folder}${name}.test.${ext}`, `${folder}tests/${name}.test.${ext}`, `${folder}__tests__/${name}.test.${ext}`].find((candidate) => files.has(candidate));
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
  return text.replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, " ")).replace(/(^|[^:"'`\\])\/\/[^\n]*/g, "$1");
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
