// Bundles the relay CLI into dist/cli.js (and its token-counting worker into dist/tokenWorker.js); dependencies stay in node_modules (better-sqlite3 is native).
import { build } from "esbuild";

await build({
  // The token counter's worker is its own entry point: a worker thread loads a file, not a function.
  entryPoints: { cli: "src/cli.ts", tokenWorker: "src/completion/tokenWorker.ts" },
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
});
