// Bundles placeholder/extension.ts and packages it as a .vsix, the way the real extension will be packaged.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { REPO_ROOT } from "../codeServer";

export async function packagePlaceholderExtension(dir: string): Promise<string> {
  mkdirSync(join(dir, "dist"), { recursive: true });
  await build({
    entryPoints: [fileURLToPath(new URL("./extension.ts", import.meta.url))],
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
    outfile: join(dir, "dist/extension.js"),
    logLevel: "error",
  });
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({
      name: "tab-relay-placeholder",
      publisher: "tab-relay-e2e",
      version: "0.0.1",
      license: "MIT",
      engines: { vscode: "^1.100.0" },
      activationEvents: ["onStartupFinished"],
      main: "./dist/extension.js",
      files: ["dist"],
    }),
  );
  const vsix = join(dir, "tab-relay-placeholder.vsix");
  const result = spawnSync(
    join(REPO_ROOT, "node_modules/.bin/vsce"),
    ["package", "--no-dependencies", "--allow-missing-repository", "--skip-license", "-o", vsix],
    { cwd: dir, encoding: "utf8" },
  );
  if (result.status !== 0) throw new Error(`vsce package failed:\n${result.stdout}\n${result.stderr}`);
  return vsix;
}
