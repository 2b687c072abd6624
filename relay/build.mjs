// Bundles the relay CLI into dist/cli.js; dependencies stay in node_modules (better-sqlite3 is native).
import { build } from "esbuild";
import { writeOutputs } from "./atomicWrite.mjs";

const result = await build({
  entryPoints: { cli: "src/cli.ts" },
  outdir: "dist",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  packages: "external",
  // Workspace packages ship TypeScript source, so they are bundled rather than imported at run time.
  alias: { "@tab-relay/shared": "../shared/src/index.ts" },
  sourcemap: true,
  logLevel: "warning",
  write: false,
});
await writeOutputs(result);
