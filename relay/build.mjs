// Bundles the relay CLI into dist/cli.js. npm dependencies stay external: the installed package (`npm pack`, see
// docs/operating.md) pulls them from the registry, better-sqlite3 is native, and pg, ioredis and undici are loaded on
// first use. The workspace's own packages ship TypeScript source, so they are bundled.
// It also copies the deploy recipes (docs/deploy) and the licence into dist/, so the package carries them, and writes
// the o200k token table (dist/o200k.bin, src/completion/o200k.ts) from gpt-tokenizer's ranks.
import { readdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { copyAtomically, writeAtomically, writeOutputs } from "./atomicWrite.mjs";

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

// The table is built by the relay's own code, so the format has one home; that code is bundled into a script run once.
const tableScript = join(here, "dist", `.o200k-table.${process.pid}.mjs`);
await build({
  stdin: {
    contents:
      'import ranks from "gpt-tokenizer/bpeRanks/o200k_base"; import { buildO200kTable } from "./src/completion/o200k.ts"; export const table = buildO200kTable(ranks);',
    resolveDir: here,
    loader: "ts",
  },
  outfile: tableScript,
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  logLevel: "warning",
});
try {
  const { table } = await import(pathToFileURL(tableScript).href);
  await writeAtomically(join(here, "dist", "o200k.bin"), table);
} finally {
  await unlink(tableScript);
}

const recipes = join(here, "..", "docs", "deploy");
await Promise.all([
  ...(await readdir(recipes)).map((name) => copyAtomically(join(recipes, name), join(here, "dist", "deploy", name))),
  copyAtomically(join(here, "..", "LICENSE"), join(here, "dist", "LICENSE")),
]);
