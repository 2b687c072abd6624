// Bundles the extension into one CommonJS file for VS Code's extension host; `vscode` is provided at run time.
import { build } from "esbuild";

await build({
  entryPoints: ["src/vscode/extension.ts"],
  outfile: "dist/extension.js",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  external: ["vscode"],
  alias: { "@tab-relay/shared": "../shared/src/index.ts" },
  sourcemap: true,
  minify: process.argv.includes("--minify"),
  logLevel: "warning",
});
