// The README's "Repository layout" block is a map of the tree: a folder added, moved or removed without the map
// changing fails here, and so does a folder the map names that is not there.
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Folders that are not the project's: installed, built, generated or scratch. */
const NOT_OURS = new Set(["node_modules", "dist", "data", "test-output"]);

/** The layout block's entries: each top-level folder and the text written beside it (continuation lines included). */
function layoutEntries(): Map<string, string> {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const block = /## Repository layout\n+```\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, "README.md has a Repository layout code block");
  const entries = new Map<string, string>();
  let current: string | undefined;
  for (const line of block.split("\n")) {
    const head = /^([\w.-]+)\/\s+(.*)$/.exec(line);
    if (head?.[1] !== undefined) entries.set((current = head[1]), head[2] ?? "");
    else if (current !== undefined && line.trim()) entries.set(current, `${entries.get(current)} ${line.trim()}`);
  }
  return entries;
}

function folders(dir: string): string[] {
  return readdirSync(dir).filter(
    (name) => !name.startsWith(".") && !NOT_OURS.has(name) && statSync(join(dir, name)).isDirectory(),
  );
}

/** The folder paths an entry names: `name/`, `src/core`, and `providers/{local,upstream}` as it and its two folders. */
function namedPaths(text: string): string[] {
  const paths: string[] = [];
  for (const [, path, braces, extension] of text.matchAll(/([\w-]+(?:\/[\w-]+)*)\/(?:\{([\w,-]+)\}(\.\w+)?)?/g)) {
    paths.push(path as string);
    if (braces && !extension) for (const inner of braces.split(",")) paths.push(`${path}/${inner}`);
  }
  for (const [, path] of text.matchAll(/\b(src\/[\w-]+)\b(?![/{])/g)) paths.push(path as string);
  return paths;
}

/** The files an entry names as `dir/{a,b}.ts`. */
function namedFiles(text: string): string[] {
  return [...text.matchAll(/([\w-]+(?:\/[\w-]+)*)\/\{([\w,-]+)\}(\.\w+)/g)].flatMap(([, path, names, extension]) =>
    (names as string).split(",").map((name) => `${path}/${name}${extension}`),
  );
}

/** Whether `path` is a folder somewhere below `dir` (a map may name a nested folder without its parents). */
function foundBelow(dir: string, path: string): boolean {
  if (existsSync(join(dir, path)) && statSync(join(dir, path)).isDirectory()) return true;
  return folders(dir).some((name) => foundBelow(join(dir, name), path));
}

test("the map names every top-level folder, and only those", () => {
  assert.deepEqual([...layoutEntries().keys()].sort(), folders(ROOT).sort());
});

test("every folder the map names is there", () => {
  const missing: string[] = [];
  for (const [top, text] of layoutEntries()) {
    for (const path of namedPaths(text)) if (!foundBelow(join(ROOT, top), path)) missing.push(`${top}/ … ${path}/`);
    for (const file of namedFiles(text)) if (!existsSync(join(ROOT, top, file))) missing.push(`${top}/${file}`);
  }
  assert.deepEqual(missing, []);
});

test("the folders of the packages' code, the docs and the tests are all on the map", () => {
  const entries = layoutEntries();
  const unnamed: string[] = [];
  for (const [top, below] of [
    ["shared", "src"],
    ["relay", "src"],
    ["extension", "src"],
    ["docs", ""],
    ["test", ""],
    ["examples", ""],
  ] as const) {
    const named = new Set(namedPaths(entries.get(top) ?? "").flatMap((path) => [path, path.replace(/^src\//, "")]));
    for (const name of folders(join(ROOT, top, below)))
      if (!named.has(name)) unnamed.push(`${join(top, below, name)}/`);
  }
  assert.deepEqual(unnamed, []);
});
