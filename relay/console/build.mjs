// Bundles the web console into relay/dist/console (app.js + index.html + app.css), which the relay serves at /.
import { stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { copyAtomically, writeOutputs } from "../atomicWrite.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = join(here, "..", "dist", "console");
// The console should load fast on a phone; a budget makes growth a conscious decision. 64 KiB since the People and
// Audit views (about 7.7 KB minified together, most of it their words) joined the 55 KB before them.
const BUDGET_BYTES = 64 * 1024;

const result = await build({
  entryPoints: [join(here, "src", "main.ts")],
  outfile: join(outdir, "app.js"),
  bundle: true,
  platform: "browser",
  target: "es2020",
  format: "iife",
  minify: true,
  sourcemap: true,
  legalComments: "none",
  logLevel: "warning",
  write: false,
});
await writeOutputs(result);
await Promise.all(["index.html", "app.css"].map((file) => copyAtomically(join(here, file), join(outdir, file))));

const { size } = await stat(join(outdir, "app.js"));
if (size > BUDGET_BYTES) {
  console.error(`console: app.js is ${size} bytes, over the ${BUDGET_BYTES}-byte budget`);
  process.exit(1);
}
