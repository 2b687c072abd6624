#!/usr/bin/env node
// Node 20's test runner finds only .js files by itself, so the .ts test files are listed here and run
// through tsx. Usage: node scripts/test.mjs [--unit] [package ...]
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const args = process.argv.slice(2);
const unitOnly = args.includes("--unit");
const packages = args.filter((arg) => !arg.startsWith("--"));
const roots = packages.length > 0 ? packages : ["shared", "agent", "relay", "extension", "examples", "test"];

function find(dir, out) {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) find(path, out);
    else if (name.endsWith(".test.ts")) out.push(relative(root, path));
  }
  return out;
}

const files = roots
  .flatMap((dir) => find(join(root, dir), []))
  .filter((file) => !unitOnly || !file.startsWith("test/"))
  .sort();
if (files.length === 0) {
  console.error("no test files found");
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", "--test-concurrency=2", "--test-reporter=spec", ...files],
  { cwd: root, stdio: "inherit" },
);
process.exit(result.status ?? 1);
