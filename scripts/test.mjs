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

// The end-to-end files each drive a real VS Code or Chromium (one also the embedded engine) for minutes. Sorted
// together under --test-concurrency=2 they ran two at a time on 2 cores, beside each other's browsers; in CI a
// status that comes within a second there then waited past its 20 s bound. They run after the rest, one at a time;
// the rest keeps two files at once.
const isBrowserE2e = (file) => /^test[\\/]e2e[\\/].*\.e2e\.test\.ts$/.test(file);
const phases = [
  { label: "tests", files: files.filter((file) => !isBrowserE2e(file)), concurrency: 2 },
  {
    label: "end-to-end tests in a real VS Code or Chromium, one at a time",
    files: files.filter(isBrowserE2e),
    concurrency: 1,
  },
].filter((phase) => phase.files.length > 0);

let failed = false;
for (const phase of phases) {
  if (phases.length > 1) console.log(`\n== ${phase.label}: ${phase.files.length} files\n`);
  const result = spawnSync(
    process.execPath,
    ["--import", "tsx", "--test", `--test-concurrency=${phase.concurrency}`, "--test-reporter=spec", ...phase.files],
    { cwd: root, stdio: "inherit" },
  );
  // Every phase runs even after one failed, so a run reports all it found.
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
