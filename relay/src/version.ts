import { readFileSync } from "node:fs";

let version: string | undefined;

/**
 * The version of the package this runs from: package.json sits one folder up from both dist/cli.js and src/*.ts, in
 * the repository and in an installed package alike, so `--version` and the OpenAPI document's `info.version` can never
 * disagree with what npm installed.
 */
export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string })
    .version;
  return version;
}
