/**
 * relay/bin/tab-relay.js turns V8's optimizing compiler off and keeps its young generation from growing while the relay
 * loads, so that loading does not leave TurboFan's code and a grown young generation resident in an idle relay
 * (docs/benchmarks.md, issue 23). Once it has started, the relay turns the optimizing compiler back on and lets the
 * young generation grow under load up to a cap (the bin's `capYoungGeneration`); a relay started some other way (the
 * tests, an embedding) finds nothing to resume.
 */
const RESUME = Symbol.for("tab-relay.resumeOptimizer");

export function resumeOptimizer(): void {
  const holder = globalThis as { [RESUME]?: unknown };
  const resume = holder[RESUME];
  if (typeof resume !== "function") return;
  delete holder[RESUME];
  (resume as () => void)();
}
