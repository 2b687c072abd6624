// Bundles the relay CLI into dist/cli.js. npm dependencies stay external: the installed package (`npm pack`, see
// docs/operating.md) pulls them from the registry, better-sqlite3 is native, and pg, ioredis and undici are loaded on
// first use. The workspace's own packages ship TypeScript source, so they are bundled.
// It also copies the deploy recipes (docs/deploy) and the licence into dist/, so the package carries them.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { copyAtomically, writeOutputs } from "./atomicWrite.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));

const result = await build({
  // The embedded engine's child process is its own bundle: the relay forks it (src/engine/engine.ts).
  entryPoints: { cli: "src/cli.ts", engineChild: "src/engine/child/main.ts" },
  outdir: "dist",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  packages: "external",
  alias: { "@tab-relay/shared": "../shared/src/index.ts" },
  sourcemap: true,
  logLevel: "warning",
  write: false,
});
await writeOutputs(result);

const recipes = join(here, "..", "docs", "deploy");
await Promise.all([
  ...(await readdir(recipes)).map((name) => copyAtomically(join(recipes, name), join(here, "dist", "deploy", name))),
  copyAtomically(join(here, "..", "LICENSE"), join(here, "dist", "LICENSE")),
]);
