// Bundles the web console into relay/dist/console (app.js + index.html + app.css), which the relay serves at /, and
// the Insights view with its charting library (insights.js), which the console loads only when Insights is opened.
import { readFile, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { copyAtomically, writeAtomically, writeOutputs } from "../atomicWrite.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = join(here, "..", "dist", "console");
// The console should load fast on a phone; a budget makes growth a conscious decision. 64 KiB since the People and
// Audit views (about 7.7 KB minified together, most of it their words) joined the 55 KB before them; 66 KiB since the
// extension's install line (home, People) and the playground's "Answered by" joined them (about 1.8 KB together).
const BUDGET_BYTES = 66 * 1024;
// uPlot is about 50 KB minified; the view around it about 5 KB.
const INSIGHTS_BUDGET_BYTES = 64 * 1024;

const common = {
  bundle: true,
  platform: "browser",
  target: "es2020",
  format: "iife",
  minify: true,
  sourcemap: true,
  legalComments: "none",
  logLevel: "warning",
  write: false,
};
const results = await Promise.all([
  build({ ...common, entryPoints: [join(here, "src", "main.ts")], outfile: join(outdir, "app.js") }),
  build({
    ...common,
    entryPoints: [join(here, "src", "views", "insights", "entry.ts")],
    outfile: join(outdir, "insights.js"),
  }),
]);
await Promise.all(results.map(writeOutputs));
// uPlot's own rules go into the one stylesheet, so its charts need no style element (the CSP allows none).
const uplot = join(here, "..", "..", "node_modules", "uplot");
const UPLOT_VERSION = JSON.parse(await readFile(join(uplot, "package.json"), "utf8")).version;
const uplotCss = await readFile(join(uplot, "dist", "uPlot.min.css"), "utf8");
const appCss = await readFile(join(here, "app.css"), "utf8");
await Promise.all([
  copyAtomically(join(here, "index.html"), join(outdir, "index.html")),
  writeAtomically(join(outdir, "app.css"), `${appCss}\n/* uPlot ${UPLOT_VERSION} (MIT) */\n${uplotCss}\n`),
]);

for (const [file, budget] of [
  ["app.js", BUDGET_BYTES],
  ["insights.js", INSIGHTS_BUDGET_BYTES],
]) {
  const { size } = await stat(join(outdir, file));
  if (size > budget) {
    console.error(`console: ${file} is ${size} bytes, over the ${budget}-byte budget`);
    process.exit(1);
  }
}
