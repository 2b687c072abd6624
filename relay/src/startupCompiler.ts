/**
 * relay/bin/tab-relay.js turns V8's optimizing compiler off while the relay loads, so that optimizing Node's module
 * loader (hot for the few hundred files loaded once) does not leave TurboFan's code and memory resident in an idle
 * relay (docs/benchmarks.md, issue 23). The relay turns it back on once it has started; a relay started some other way
 * (the tests, an embedding) finds nothing to resume.
 */
const RESUME = Symbol.for("tab-relay.resumeOptimizer");

export function resumeOptimizer(): void {
  const holder = globalThis as { [RESUME]?: unknown };
  const resume = holder[RESUME];
  if (typeof resume !== "function") return;
  delete holder[RESUME];
  (resume as () => void)();
}
