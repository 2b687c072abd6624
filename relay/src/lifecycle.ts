/**
 * Tracks work in flight (completion streams) so shutdown can stop taking new work, wait for the streams
 * to finish, and abort whatever is left when the deadline passes.
 */
export interface Lifecycle {
  readonly draining: boolean;
  /** Registers work (a streamed answer is a `stream`); returns the function that marks it finished. */
  begin(abort: () => void, kind?: "stream" | "answer"): () => void;
  /** Work of that kind in flight now. */
  count(kind: "stream" | "answer"): number;
  /** Stops new work, waits up to `graceMs` for the current work, then aborts the rest. Resolves with what was aborted. */
  drain(graceMs: number): Promise<{ finished: number; aborted: number }>;
}

export function createLifecycle(): Lifecycle {
  const active = new Set<() => void>();
  const inFlight = { stream: 0, answer: 0 };
  let draining = false;
  let idle: (() => void) | undefined;
  return {
    get draining() {
      return draining;
    },
    begin(abort, kind = "answer") {
      active.add(abort);
      inFlight[kind]++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        inFlight[kind]--;
        active.delete(abort);
        if (active.size === 0) idle?.();
      };
    },
    count(kind) {
      return inFlight[kind];
    },
    async drain(graceMs) {
      draining = true;
      const initial = active.size;
      if (initial > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, graceMs);
          idle = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      const aborted = active.size;
      for (const abort of [...active]) abort();
      return { finished: initial - aborted, aborted };
    },
  };
}
