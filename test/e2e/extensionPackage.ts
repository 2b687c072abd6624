// Packages the extension exactly as a release would (`npm run package -w tab-relay-vscode`).
import { spawnSync } from "node:child_process";
import { copyFileSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, isAbsolute, join } from "node:path";
import { REPO_ROOT } from "./codeServer";

const MANIFEST = JSON.parse(readFileSync(join(REPO_ROOT, "extension/package.json"), "utf8")) as {
  publisher: string;
  name: string;
  displayName: string;
};
/** The extension's id, as VS Code names its folders and logs. */
export const EXTENSION_ID = `${MANIFEST.publisher}.${MANIFEST.name}`;
/** The extension's name as people see it: its commands' category and its notifications' prefix. */
export const EXTENSION_DISPLAY_NAME = MANIFEST.displayName;
/** The extension's log output channel goes by its display name. */
export const LOG_CHANNEL = MANIFEST.displayName;

/** Builds and packages the extension, and copies the .vsix into `destDir` (so later packaging cannot change it). */
export function packageTabRelayExtension(destDir: string): string {
  const startedAt = Date.now();
  const result = spawnSync("npm", ["run", "package", "-w", "tab-relay-vscode"], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    timeout: 180_000,
  });
  if (result.status !== 0)
    throw new Error(`npm run package -w tab-relay-vscode failed:\n${result.stdout}\n${result.stderr}`);
  // vsce reports "Packaged: <path> (N files, size)"; if its wording changes, take the .vsix it just wrote.
  const reported = /Packaged: (\S+\.vsix)/.exec(result.stdout + result.stderr)?.[1];
  const extensionDir = join(REPO_ROOT, "extension");
  const vsix =
    reported !== undefined
      ? isAbsolute(reported)
        ? reported
        : join(extensionDir, reported)
      : readdirSync(extensionDir)
          .filter((name) => name.endsWith(".vsix"))
          .map((name) => join(extensionDir, name))
          .filter((path) => statSync(path).mtimeMs >= startedAt - 1_000)
          .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  if (vsix === undefined) throw new Error(`npm run package -w tab-relay-vscode wrote no .vsix:\n${result.stdout}`);
  const copy = join(destDir, basename(vsix));
  copyFileSync(vsix, copy);
  return copy;
}
