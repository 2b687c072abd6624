import assert from "node:assert/strict";
import { test } from "node:test";
import { PathMatcher, globToRegExp } from "./globs";
import { DEFAULT_EXCLUDE_GLOBS } from "./settings";

const secrets = new PathMatcher(DEFAULT_EXCLUDE_GLOBS, { matchNames: true });

test("the default exclusions cover env files, keys and certificates anywhere in the workspace", () => {
  for (const path of [
    ".env",
    ".env.local",
    "config/.env.production",
    "certs/server.pem",
    "tls/private.key",
    "id_rsa",
    "home/.ssh/id_ed25519.pub",
    "deploy\\keys\\site.KEY",
  ]) {
    assert.notEqual(secrets.match(path), undefined, path);
  }
  for (const path of ["src/env.ts", "src/environment.ts", "docs/keys.md", "src/pem.ts", "src/ids.ts", "src/app.ts"]) {
    assert.equal(secrets.match(path), undefined, path);
  }
  assert.equal(secrets.match("certs/server.pem"), "*.pem");
});

test("a pattern that covers a folder covers everything in it", () => {
  const matcher = new PathMatcher(["secrets", "**/node_modules", "build/**"], { matchNames: false });
  assert.equal(matcher.match("secrets/db.json"), "secrets");
  assert.equal(matcher.match("packages/a/node_modules/x/index.js"), "**/node_modules");
  assert.equal(matcher.match("build/out/app.js"), "build/**");
  assert.equal(
    matcher.match("src/secrets/db.json"),
    undefined,
    "without name matching, a bare name is anchored at the root",
  );
  assert.equal(matcher.match("src/build.ts"), undefined);
});

test("name matching applies to patterns without a slash only", () => {
  const matcher = new PathMatcher(["*.log", "logs/*.txt"], { matchNames: true });
  assert.notEqual(matcher.match("a/b/debug.log"), undefined);
  assert.notEqual(matcher.match("logs/today.txt"), undefined);
  assert.equal(matcher.match("old/logs/today.txt"), undefined);
});

test("glob syntax: stars, double stars, ?, classes, negated classes and braces", () => {
  const cases: [string, string, boolean][] = [
    ["*.ts", "a.ts", true],
    ["*.ts", "src/a.ts", false],
    ["**/*.ts", "a.ts", true],
    ["**/*.ts", "src/deep/a.ts", true],
    ["src/**/test/*.ts", "src/test/a.ts", true],
    ["src/**/test/*.ts", "src/x/y/test/a.ts", true],
    ["src/**/test/*.ts", "lib/test/a.ts", false],
    ["file?.txt", "file1.txt", true],
    ["file?.txt", "file12.txt", false],
    ["[abc].md", "b.md", true],
    ["[!abc].md", "b.md", false],
    ["[!abc].md", "d.md", true],
    ["[a-c]x", "cx", true],
    ["*.{js,ts}", "a.ts", true],
    ["*.{js,ts}", "a.rs", false],
    ["a+b(1).txt", "a+b(1).txt", true],
    ["a.b", "axb", false],
    ["README", "readme", true],
    ["{unclosed", "{unclosed", false],
  ];
  for (const [glob, path, expected] of cases)
    assert.equal(globToRegExp(glob).test(path), expected, `${glob} on ${path}`);
});

test("leading ./ and /, trailing / and empty patterns are tolerated", () => {
  const matcher = new PathMatcher(["./dist/", "/out", "  ", ""], { matchNames: false });
  assert.equal(matcher.match("dist/a.js"), "./dist/");
  assert.equal(matcher.match("out/b.js"), "/out");
  assert.equal(matcher.match("src/c.js"), undefined);
  assert.equal(new PathMatcher([], { matchNames: true }).match(".env"), undefined);
});
