/**
 * The engine child's scheduling priority: its nice value raised by TAB_RELAY_ENGINE_NICE above the relay's, so that
 * the relay's short wake-ups (an IPC message to pass on, an HTTP write) are not left waiting behind a token's decode
 * on a machine with few cores. On the shared 2-core machine the relay's share of a keystroke's first token (the
 * client's time less the child's own) was 0.4–1.0 ms lower at the median with the child at nice 5, 10 or 19 than at
 * 0 in 12 of 13 paired runs (0.1 ms in the other); timestamps put the gain in the rounds where the relay or the
 * client waited to be woken while the child decoded (docs/benchmarks.md, "The engine child's priority").
 *
 * On Linux the nice value belongs to each thread, not to the process (setpriority(2), BUGS; sched(7), "The nice
 * value"), and `os.setPriority(pid)` sets only the thread whose id is `pid`: every thread already running (the main
 * thread, V8's and libuv's workers, llama.cpp's) is set here by its id from /proc/self/task; threads started later
 * inherit the nice value of the thread that starts them. Elsewhere `os.setPriority(0, …)` applies to the process
 * (Node's os.setPriority; on Windows a priority class, https://nodejs.org/api/os.html#ossetprioritypid-priority).
 *
 * Raising one's own nice value needs no privilege, but a sandbox may refuse it: the problem is reported and the
 * child runs on at the priority it has. Under group scheduling (sched(7), "The autogroup feature", and cgroups) a
 * nice value counts only against threads of the same group, which the relay and its child are: the child then
 * gives way to the relay alone, not to every other program on the machine.
 */
export interface PriorityDeps {
  platform: NodeJS.Platform;
  getPriority(pid: number): number;
  setPriority(pid: number, priority: number): void;
  /** The ids of this process's threads (Linux only). */
  threadIds(): number[];
}

/** The highest nice value (the lowest priority) Linux and macOS accept. */
const LOWEST = 19;

/** Lowers this process's priority by `by` nice steps; returns the nice value it has after, or why it could not. */
export function lowerPriority(by: number, deps: PriorityDeps): { nice: number } | { problem: string } {
  try {
    if (by > 0) {
      const nice = Math.min(LOWEST, deps.getPriority(0) + by);
      if (deps.platform !== "linux") deps.setPriority(0, nice);
      else
        for (const tid of deps.threadIds()) {
          try {
            deps.setPriority(tid, nice);
          } catch (error) {
            // A thread that ended after the listing has nothing left to set (Node's SystemError carries the errno's
            // name in `info.code`; its own `code` is ERR_SYSTEM_ERROR).
            if ((error as { info?: { code?: string } }).info?.code !== "ESRCH") throw error;
          }
        }
    }
    return { nice: deps.getPriority(0) };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}
