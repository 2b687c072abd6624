// Bundles the extension into one CommonJS file for VS Code's extension host; `vscode` is provided at run time.
import { build } from "esbuild";

// zod re-exports every translation of its error messages as `z.locales`, which no code here reads; English comes
// in through its own import. Leaving the rest out halves the bundle (about 260 KB minified).
const dropZodLocales = {
  name: "drop-zod-locales",
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^\.\.\/(\.\.\/)?locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]/.test(args.importer) ? { path: "zod-locales", namespace: "empty" } : undefined,
    );
    pluginBuild.onLoad({ filter: /.*/, namespace: "empty" }, () => ({ contents: "export {};", loader: "js" }));
  },
};

await build({
  entryPoints: ["src/vscode/extension.ts"],
  outfile: "dist/extension.js",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  external: ["vscode"],
  alias: { "@tab-relay/shared": "../shared/src/index.ts" },
  plugins: [dropZodLocales],
  sourcemap: true,
  minify: process.argv.includes("--minify"),
  logLevel: "warning",
});
