#!/usr/bin/env node
import { existsSync } from "node:fs";
import { setTimeout } from "node:timers";
import { setFlagsFromString } from "node:v8";

const cli = new URL("../dist/cli.js", import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write("tab-relay is not built yet: run `npm run build` at the repository root.\n");
  process.exit(1);
}

// Until the relay has started (startRelay calls the hook below through src/startupCompiler.ts), V8 runs with two
// settings that keep what loading it leaves resident small; each goes back to V8's default once it serves.
const restore = [];

// The young generation stays at its initial size (two 1 MB semi-spaces) while the relay loads, instead of doubling
// up to two 16 MB ones: loading grew it to that at once, and the pages stayed resident until V8's memory reducer
// returned them some 20 s later, so an idle relay held about 15 MB more than it used (docs/benchmarks.md, issue 23).
// Once it serves, the young generation may grow again: kept at 1 MB under load, the relay spent about a third more
// CPU per streamed completion (584 against 430 µs at 50 in flight, same run), collecting the young generation far
// more often. `--max-semi-space-size` would say so directly, but V8 reads it once, when it sets up the heap, before
// this file runs. The growth factor it reads on every growth: SemiSpaceNewSpace::Grow in V8 11.3
// (src/heap/new-spaces.cc) asks for `std::min(MaximumCapacity(), v8_flags.semi_space_growth_factor * TotalCapacity())`.
// V8 raises a factor below 2 to 2 in Heap::ConfigureHeap, also before this line; at 1 a growth asks for the capacity
// the space already has and adds no page; 2 is V8's default (`node --v8-options`). An operator who sets either flag
// on node's command line or in NODE_OPTIONS keeps what they set.
const ownYoungGeneration = /--(max[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor)\b/;
const ownOptimizer = /--(no-)?(opt|turbofan|jitless)\b/;
const operatorFlags = [...process.execArgv, process.env.NODE_OPTIONS ?? ""];
if (!operatorFlags.some((arg) => ownYoungGeneration.test(arg))) {
  setFlagsFromString("--semi-space-growth-factor=1");
  restore.push("--semi-space-growth-factor=2");
}

// V8's optimizing compiler (TurboFan) is off while the relay loads: loading some 500 module files makes Node's
// module loader hot, and optimizing it touched about 6 MB of TurboFan's own code and memory that an idle relay then
// kept resident, for functions it never calls again (docs/benchmarks.md, issue 23). V8 asks whether to optimize each
// time a function gets hot (Isolate::use_optimizer reads v8_flags.turbofan), so the flag can be turned back on.
if (!operatorFlags.some((arg) => ownOptimizer.test(arg))) {
  setFlagsFromString("--no-opt");
  restore.push("--opt");
}

if (restore.length > 0) {
  let resumed = false;
  const resume = () => {
    if (resumed) return;
    resumed = true;
    for (const flag of restore) setFlagsFromString(flag);
  };
  globalThis[Symbol.for("tab-relay.resumeOptimizer")] = resume;
  // Commands that never start a relay get V8's defaults back after 10 s.
  setTimeout(resume, 10_000).unref();
}

await import(cli.href);
