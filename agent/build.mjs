// Builds the publishable @tab-relay/agent: dist/index.js (ESM) and dist/index.cjs (CommonJS) bundled by esbuild, and
// their types bundled into one declaration file by dts-bundle-generator. The workspace's shared protocol code
// (shared/src, TypeScript source never published) is bundled into both, so the package depends on nothing.
import { spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { copyAtomically, writeAtomically, writeOutputs } from "../relay/atomicWrite.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const dist = join(here, "dist");

const common = {
  entryPoints: [join(here, "src", "index.ts")],
  bundle: true,
  // Neither Node nor browser: only the globals every WebCrypto runtime has (crypto, fetch, TextEncoder, URL).
  platform: "neutral",
  mainFields: ["module", "main"],
  target: "es2022",
  legalComments: "none",
  logLevel: "warning",
  write: false,
};
const results = await Promise.all([
  build({ ...common, format: "esm", outfile: join(dist, "index.js") }),
  build({ ...common, format: "cjs", outfile: join(dist, "index.cjs") }),
]);
await Promise.all(results.map(writeOutputs));

// One declaration file for both formats: the package exports names only (no default export), which read the same
// as ESM and CommonJS.
const types = join(dist, "index.d.ts");
const generated = spawnSync(
  process.execPath,
  [
    join(here, "..", "node_modules", "dts-bundle-generator", "dist", "bin", "dts-bundle-generator.js"),
    "--silent",
    "--no-banner",
    "--export-referenced-types=false",
    "--project",
    join(here, "tsconfig.build.json"),
    "-o",
    types,
    join(here, "src", "index.ts"),
  ],
  { stdio: "inherit" },
);
if (generated.status !== 0) process.exit(generated.status ?? 1);
await Promise.all([
  writeAtomically(join(dist, "index.d.cts"), await readFile(types, "utf8")),
  copyAtomically(join(here, "..", "LICENSE"), join(dist, "LICENSE")),
]);
