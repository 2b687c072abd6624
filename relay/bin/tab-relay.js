#!/usr/bin/env node
import { existsSync } from "node:fs";

const cli = new URL("../dist/cli.js", import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write("tab-relay is not built yet: run `npm run build` at the repository root.\n");
  process.exit(1);
}
await import(cli.href);
