import assert from "node:assert/strict";
import { test } from "node:test";
import {
  companionOf,
  declaresExport,
  importSpecifiers,
  importStatements,
  importersOf,
  importsOf,
  isBarrel,
  neighboursOf,
  resolveImport,
  typedRange,
  type Project,
} from "./typingRepo";

const project = (
  files: Record<string, string>,
  typed: string[] = [],
  packages: Record<string, string> = {},
): Project => ({
  name: "p",
  files: new Map(Object.entries(files)),
  packages,
  typed,
});

test("import specifiers come from import and export-from statements, multi-line ones too, and not from comments or strings", () => {
  const text = [
    'import { a } from "./a.js";',
    "import type { B } from './b';",
    'import "./side-effect.js";',
    "import {",
    "  c,",
    "  d,",
    '} from "../c.js";',
    'export * from "./e.js";',
    'export { f } from "./f.js";',
    '// import { old } from "./old.js";',
    '/* import { older } from "./older.js"; */',
    'const text = "not an import from here";',
    'const g = await import("./dynamic.js");',
  ].join("\n");
  assert.deepEqual(importSpecifiers(text), ["./a.js", "./b", "./side-effect.js", "../c.js", "./e.js", "./f.js"]);
});

test("each statement says which exports it takes, under which names a re-export passes them on", () => {
  const text = [
    'import { a, b as c, type D } from "./one.js";',
    'import * as z from "./two.js";',
    'import fallback from "./three.js";',
    'export * from "./four.js";',
    'export * as ns from "./five.js";',
    'export { e as f, type G } from "./six.js";',
  ].join("\n");
  assert.deepEqual(
    importStatements(text).map(({ specifier, taken, exported }) => ({ specifier, taken, exported })),
    [
      { specifier: "./one.js", taken: ["a", "b", "D"], exported: [] },
      { specifier: "./two.js", taken: "all", exported: [] },
      { specifier: "./three.js", taken: "all", exported: [] },
      { specifier: "./four.js", taken: "all", exported: "all" },
      { specifier: "./five.js", taken: "all", exported: ["ns"] },
      { specifier: "./six.js", taken: ["e", "G"], exported: ["f", "G"] },
    ],
  );
});

test("a module declares an export by a declaration or a local export list, names with $ included", () => {
  const text =
    "export class RelayError extends Error {}\nexport const $ZodType = 1;\nconst local = 2;\nexport { local as renamed, local };\n";
  assert.equal(declaresExport(text, "RelayError"), true);
  assert.equal(declaresExport(text, "$ZodType"), true);
  assert.equal(declaresExport(text, "ZodType"), false);
  assert.equal(declaresExport(text, "local"), true);
  assert.equal(declaresExport(text, "Relay"), false);
});

test("imports resolve as the compiler would: .js written for .ts, a folder by its index, the project's own package names", () => {
  const p = project({ "src/a.ts": "", "src/lib/index.ts": "", "src/b.tsx": "", "shared/src/index.ts": "" }, [], {
    "@x/shared": "shared/src/index.ts",
    "@x/gone": "gone.ts",
  });
  assert.equal(resolveImport(p, "src/main.ts", "./a.js"), "src/a.ts");
  assert.equal(resolveImport(p, "src/main.ts", "./a"), "src/a.ts");
  assert.equal(resolveImport(p, "src/deep/x.ts", "../lib"), "src/lib/index.ts");
  assert.equal(resolveImport(p, "src/main.ts", "./b.js"), "src/b.tsx");
  assert.equal(resolveImport(p, "src/main.ts", "@x/shared"), "shared/src/index.ts");
  assert.equal(resolveImport(p, "src/main.ts", "@x/gone"), undefined, "a package name for a file not in the project");
  assert.equal(resolveImport(p, "src/main.ts", "node:fs"), undefined);
  assert.equal(resolveImport(p, "src/main.ts", "./missing.js"), undefined);
});

test("a barrel only imports and re-exports; a file that declares anything is not one", () => {
  assert.equal(isBarrel('export * from "./a.js";\nexport { b, type C } from "./b.js";\n'), true);
  assert.equal(
    isBarrel(
      'import * as z from "./external.js";\n\nexport * from "./external.js";\n// why\nexport { z, z as default };\n',
    ),
    true,
  );
  assert.equal(isBarrel('export * from "./a.js";\nexport const version = 4;\n'), false);
  assert.equal(isBarrel('import { a } from "./a.js";\nconsole.log(a);\n'), false);
  assert.equal(isBarrel(""), false);
  assert.equal(isBarrel('import { a } from "./a.js";\n'), false, "a file that only imports re-exports nothing");
});

test("a file's imports follow barrels to the files they re-export, in import order, each once", () => {
  const p = project(
    {
      "test.ts": 'import * as z from "pkg";\nimport { helper } from "./helper.js";\n',
      "index.ts": 'export * from "./api/index.js";\n',
      "api/index.ts": 'export * from "./schemas.js";\nexport * from "./checks.js";\nexport * from "../helper.js";\n',
      "api/schemas.ts": "export const string = 1;\n",
      "api/checks.ts": "export const min = 1;\n",
      "helper.ts": "export const helper = 1;\n",
    },
    [],
    { pkg: "index.ts" },
  );
  assert.deepEqual(importsOf(p, "test.ts"), ["api/schemas.ts", "api/checks.ts", "helper.ts"]);
});

test("a named import through a barrel leads to the file that declares the name, not every file the barrel re-exports", () => {
  const p = project(
    {
      "route.ts": 'import { RelayError } from "@x/shared";\nimport { z } from "zod";\n',
      "shared/index.ts":
        'export * from "./limits.js";\nexport { RelayError as RelayError, codes } from "./errors.js";\nexport * as sse from "./sse.js";\n',
      "shared/limits.ts": "export const LIMITS = {};\n",
      "shared/errors.ts": "export class RelayError extends Error {}\nexport const codes = [];\n",
      "shared/sse.ts": "export function encode() {}\n",
    },
    [],
    { "@x/shared": "shared/index.ts" },
  );
  assert.deepEqual(importsOf(p, "route.ts"), ["shared/errors.ts"]);
  const namespace = {
    ...p,
    files: new Map([...p.files, ["route.ts", 'import { sse } from "@x/shared";\nimport * as all from "@x/shared";\n']]),
  };
  assert.deepEqual(importsOf(namespace, "route.ts"), ["shared/sse.ts", "shared/limits.ts", "shared/errors.ts"]);
});

test("importers are the files importing it directly, the nearest in the tree first", () => {
  const p = project({
    "src/core/a.ts": "export const a = 1;\n",
    "src/core/b.ts": 'import { a } from "./a.js";\n',
    "src/app/c.ts": 'import { a } from "../core/a.js";\n',
    "src/core/deep/d.ts": 'import { a } from "../a.js";\n',
    "src/core/e.ts": 'import { b } from "./b.js";\n',
    "src/core/index.ts": 'export * from "./a.js";\n',
  });
  assert.deepEqual(importersOf(p, "src/core/a.ts"), ["src/core/b.ts", "src/core/deep/d.ts", "src/app/c.ts"]);
});

test("a test's companion is its module beside it or one folder up from tests/; a module's is its test", () => {
  const files = new Map(
    ["src/a.ts", "src/a.test.ts", "lib/b.ts", "lib/tests/b.test.ts", "lib/c.ts"].map((path) => [path, ""]),
  );
  assert.equal(companionOf(files, "src/a.test.ts"), "src/a.ts");
  assert.equal(companionOf(files, "src/a.ts"), "src/a.test.ts");
  assert.equal(companionOf(files, "lib/tests/b.test.ts"), "lib/b.ts");
  assert.equal(companionOf(files, "lib/b.ts"), "lib/tests/b.test.ts");
  assert.equal(companionOf(files, "lib/c.ts"), undefined);
});

test("neighbours open importers first, then imports, then the companion last, each once and within the bounds", () => {
  const p = project({
    "m.ts": [
      'import { x } from "./x.js";',
      'import { y } from "./y.js";',
      'import { z } from "./z.js";',
      'import { u } from "./u.js";',
      'import { v } from "./v.js";',
      'import { w } from "./w.js";',
    ].join("\n"),
    "m.test.ts": 'import { m } from "./m.js";\n',
    "caller1.ts": 'import { m } from "./m.js";\n',
    "caller2.ts": 'import { m } from "./m.js";\n',
    "caller3.ts": 'import { m } from "./m.js";\n',
    ...Object.fromEntries(["x", "y", "z", "u", "v", "w"].map((name) => [`${name}.ts`, `export const ${name} = 1;\n`])),
  });
  assert.deepEqual(neighboursOf(p, "m.ts"), [
    "caller1.ts",
    "caller2.ts",
    "x.ts",
    "y.ts",
    "z.ts",
    "u.ts",
    "v.ts",
    "m.test.ts",
  ]);
});

test("the typed part starts at a line start halfway in and ends at a line end within the limit, or at the file's end", () => {
  const text = "line one\nline two\nline three\nline four\n";
  const { start, end } = typedRange(text, 0.5, 5);
  assert.equal(text.slice(0, start), "line one\nline two\n");
  assert.equal(text.slice(start, end), "line three\n");
  assert.deepEqual(typedRange(text, 0.5, 1_000), { start, end: text.length });
  assert.deepEqual(typedRange("no newline at all", 0.5, 3), { start: 0, end: "no newline at all".length });
});
