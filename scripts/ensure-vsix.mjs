#!/usr/bin/env node
// `npm start`'s last build step: the VS Code extension's package, which the relay serves at
// /downloads/tab-relay.vsix so a team member installs it without building anything. It is packaged only when missing
// or older than the extension's sources, so a later start stays fast; a failure warns and the relay starts anyway.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const extension = fileURLToPath(new URL("../extension", import.meta.url));
const vsix = join(extension, "dist", "tab-relay-vscode.vsix");

function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

const sources = ["src", "package.json", "build.mjs", "../shared/src"].map((path) => join(extension, path));
const built = existsSync(vsix) ? statSync(vsix).mtimeMs : -1;
if (built < Math.max(...sources.filter((path) => existsSync(path)).map(newest))) {
  process.stderr.write(
    "Packaging the VS Code extension for /downloads/tab-relay.vsix (when its sources change; ~20 s)…\n",
  );
  const started = Date.now();
  const run = spawnSync("npm", ["run", "package", "--silent", "-w", "extension"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  if (run.status === 0) process.stderr.write(`Packaged ${vsix} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  else
    process.stderr.write(
      `tab-relay: warning: packaging the extension failed, so /downloads/tab-relay.vsix answers 404 (try \`npm run package\`):\n${run.stderr}\n`,
    );
}
