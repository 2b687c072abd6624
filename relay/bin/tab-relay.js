#!/usr/bin/env node
import { existsSync } from "node:fs";
import { setTimeout } from "node:timers";
import { setFlagsFromString } from "node:v8";

const cli = new URL("../dist/cli.js", import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write("tab-relay is not built yet: run `npm run build` at the repository root.\n");
  process.exit(1);
}

// Keeps V8's young generation at its initial size (two 1 MB semi-spaces) instead of letting it double up to two
// 16 MB ones: loading the relay grows it to that at once, and the pages stay resident until V8's memory reducer
// returns them some 20 s later (and grow again with every burst of requests), so a relay held about 15 MB more
// than it used at rest and about 30 MB more after 10,000 completions (docs/benchmarks.md, issue 23).
// `--max-semi-space-size` would say so directly, but V8 reads it once, when it sets up the heap, before this file
// runs. The growth factor it reads on every growth: SemiSpaceNewSpace::Grow in V8 11.3 (src/heap/new-spaces.cc)
// asks for `std::min(MaximumCapacity(), v8_flags.semi_space_growth_factor * TotalCapacity())`. V8 raises a factor
// below 2 to 2 in Heap::ConfigureHeap, also before this line; at 1 a growth asks for the capacity the space
// already has and adds no page. Set before the CLI and its packages load. An operator who sets either flag on
// node's command line or in NODE_OPTIONS keeps what they set.
const ownYoungGeneration = /--(max[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor)\b/;
if (![...process.execArgv, process.env.NODE_OPTIONS ?? ""].some((arg) => ownYoungGeneration.test(arg))) {
  setFlagsFromString("--semi-space-growth-factor=1");
}

// V8's optimizing compiler (TurboFan) is off while the relay loads and on again once it has started
// (resumeOptimizer in src/startupCompiler.ts, called by startRelay): loading some 500 module files makes Node's
// module loader hot, and optimizing it touched about 6 MB of TurboFan's own code and memory that an idle relay then
// kept resident, for functions it never calls again (docs/benchmarks.md, issue 23). V8 asks whether to optimize each
// time a function gets hot (Isolate::use_optimizer reads v8_flags.turbofan), so the flag can be turned back on.
// Commands that never start a relay get it back after 10 s. An operator who sets the flag keeps what they set.
const ownOptimizer = /--(no-)?(opt|turbofan|jitless)\b/;
if (![...process.execArgv, process.env.NODE_OPTIONS ?? ""].some((arg) => ownOptimizer.test(arg))) {
  setFlagsFromString("--no-opt");
  let resumed = false;
  const resume = () => {
    if (resumed) return;
    resumed = true;
    setFlagsFromString("--opt");
  };
  globalThis[Symbol.for("tab-relay.resumeOptimizer")] = resume;
  setTimeout(resume, 10_000).unref();
}

await import(cli.href);
