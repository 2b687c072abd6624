#!/usr/bin/env node
import { existsSync } from "node:fs";
import { PerformanceObserver, performance } from "node:perf_hooks";
import { setTimeout } from "node:timers";
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";

const cli = new URL("../dist/cli.js", import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write("tab-relay is not built yet: run `npm run build` at the repository root.\n");
  process.exit(1);
}

// Until the relay has started (startRelay calls the hook below through src/startupCompiler.ts), V8 runs with two
// settings that keep what loading it leaves resident small; once it serves, the optimizing compiler goes back to
// V8's default and the young generation may grow under load, to a bounded size.

// The young generation stays at its initial size (two 1 MB semi-spaces) while the relay loads, instead of doubling
// up to two 16 MB ones: loading grew it to that at once, and the pages stayed resident until V8's memory reducer
// returned them some 20 s later, so an idle relay held about 15 MB more than it used (docs/benchmarks.md, issue 23).
// Once it serves, the young generation may grow under load, up to two 8 MB semi-spaces (`capYoungGeneration`
// below): kept at 1 MB under load, the relay spent about a third more CPU per streamed completion (584 against
// 430 µs at 50 in flight, same run), collecting the young generation far more often, and at 4 MB still about 15 %
// more than at 8 (docs/benchmarks.md, issue 23); left to V8's default it grew to two 16 MB semi-spaces, all of it
// resident, and the relay held 122.5 MB after 10,000 completions against a goal of 120.
// `--max-semi-space-size` would say so directly, but V8 reads it once, when it sets up the heap, before this file
// runs. The growth factor it reads on every growth: SemiSpaceNewSpace::Grow in V8 11.3 (src/heap/new-spaces.cc) asks
// for `std::min(MaximumCapacity(), v8_flags.semi_space_growth_factor * TotalCapacity())`. V8 raises a factor below
// 2 to 2 in Heap::ConfigureHeap, also before this line; at 1 a growth asks for the capacity the space already has
// and adds no page; 2 is V8's default (`node --v8-options`). An operator who sets either flag on node's command line
// or in NODE_OPTIONS keeps what they set.
// Semi-spaces of at most 8 MB: after 10,000 completions the relay held about 100 MB with 4 MB ones and 120 to 122 with
// V8's 16 MB; at 50 streams in flight 4 MB ones cost the relay some 15 % more CPU per stream than 8 MB ones
// (docs/benchmarks.md, issue 23).
const YOUNG_CAP_BYTES = 8 * 1024 * 1024;
const ownYoungGeneration = /--(max[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor)\b/;
const ownOptimizer = /--(no-)?(opt|turbofan|jitless)\b/;
const operatorFlags = [...process.execArgv, process.env.NODE_OPTIONS ?? ""];
const resumers = [];
if (!operatorFlags.some((arg) => ownYoungGeneration.test(arg))) {
  setFlagsFromString("--semi-space-growth-factor=1");
  resumers.push(capYoungGeneration);
}

// V8's optimizing compiler (TurboFan) is off while the relay loads: loading some 500 module files makes Node's
// module loader hot, and optimizing it touched about 6 MB of TurboFan's own code and memory that an idle relay then
// kept resident, for functions it never calls again (docs/benchmarks.md, issue 23). V8 asks whether to optimize each
// time a function gets hot (Isolate::use_optimizer reads v8_flags.turbofan), so the flag can be turned back on.
if (!operatorFlags.some((arg) => ownOptimizer.test(arg))) {
  setFlagsFromString("--no-opt");
  resumers.push(() => setFlagsFromString("--opt"));
}

if (resumers.length > 0) {
  let resumed = false;
  const resume = () => {
    if (resumed) return;
    resumed = true;
    for (const resumer of resumers) resumer();
  };
  globalThis[Symbol.for("tab-relay.resumeOptimizer")] = resume;
  // Commands that never start a relay get the same after 10 s: the optimizing compiler, and the capped growth.
  setTimeout(resume, 10_000).unref();
}

/** Collections this close together mean the relay is under load: only then may the young generation grow. */
const PRESSURE_COLLECTIONS = 5;
const PRESSURE_WINDOW_MS = 1_000;

/**
 * Lets the young generation double, as V8 does by default, while the relay is under load (PRESSURE_COLLECTIONS
 * collections within PRESSURE_WINDOW_MS) and a doubling keeps one semi-space within YOUNG_CAP_BYTES, and stops it
 * there. Under load a small young generation costs CPU (more scavenges); at rest its growth only costs memory: a few
 * collections just after start-up (the warm-ups) grew it to two 2 MB semi-spaces in an idle relay now and then, seen
 * in CI as a flaky "grown during start-up". Node tells a `gc` PerformanceObserver about every collection (its GC
 * epilogue callback queues the entry on the event loop, MarkGarbageCollectionEnd in src/node_perf.cc); after each
 * one the growth factor is set to 2 or to 1 (no growth). V8 grows the space at most once per scavenge, and only once
 * more than its capacity has survived scavenges since the last growth (Heap::CheckNewSpaceExpansionCriteria,
 * src/heap/heap.cc), so the check after one collection comes before the next growth. A semi-space's capacity is what
 * getHeapSpaceStatistics reports as used plus available (SemiSpaceNewSpace::Available is Capacity() - Size()), not
 * `space_size`, which counts the from-space only while it is committed. When V8's memory reducer shrinks the space
 * in an idle relay, the next burst lets it grow again.
 */
function capYoungGeneration() {
  let factor = 1;
  /** When the last PRESSURE_COLLECTIONS collections started, oldest first (performance.now() milliseconds). */
  const recent = [];
  const check = (list) => {
    for (const entry of list?.getEntries() ?? []) {
      recent.push(entry.startTime);
      if (recent.length > PRESSURE_COLLECTIONS) recent.shift();
    }
    const young = getHeapSpaceStatistics().find((space) => space.space_name === "new_space");
    if (young === undefined) return;
    const underLoad = recent.length === PRESSURE_COLLECTIONS && performance.now() - recent[0] <= PRESSURE_WINDOW_MS;
    const roomLeft = 2 * (young.space_used_size + young.space_available_size) <= YOUNG_CAP_BYTES;
    const wanted = underLoad && roomLeft ? 2 : 1;
    if (wanted === factor) return;
    factor = wanted;
    setFlagsFromString(`--semi-space-growth-factor=${wanted}`);
  };
  check();
  new PerformanceObserver(check).observe({ entryTypes: ["gc"] });
}

await import(cli.href);
