import assert from "node:assert/strict";
import { test } from "node:test";
import { type PriorityDeps, lowerPriority } from "./priority";

/** A process whose threads each have a nice value, as Linux keeps them; thread 0 is the caller's. */
function fakeProcess(
  platform: NodeJS.Platform,
  threads: Record<number, number>,
  refuse?: (tid: number) => Error | undefined,
) {
  const set: [number, number][] = [];
  const deps: PriorityDeps = {
    platform,
    getPriority: (pid) => threads[pid === 0 ? 1 : pid]!,
    setPriority(pid, priority) {
      const error = refuse?.(pid);
      if (error) throw error;
      set.push([pid, priority]);
      threads[pid === 0 ? 1 : pid] = priority;
    },
    threadIds: () => Object.keys(threads).map(Number),
  };
  return { deps, set, threads };
}

function systemError(code: string): Error {
  return Object.assign(new Error(`A system error occurred: uv_os_setpriority returned ${code}`), {
    code: "ERR_SYSTEM_ERROR",
    info: { code },
  });
}

test("on Linux every thread is set, by its own id, to the process's nice value plus the step", () => {
  const { deps, set, threads } = fakeProcess("linux", { 1: 2, 7: 2, 9: 2 });
  assert.deepEqual(lowerPriority(5, deps), { nice: 7 });
  assert.deepEqual(set, [
    [1, 7],
    [7, 7],
    [9, 7],
  ]);
  assert.deepEqual(threads, { 1: 7, 7: 7, 9: 7 });
});

test("elsewhere the process is set as a whole; the nice value stops at 19", () => {
  const { deps, set } = fakeProcess("darwin", { 1: 16 });
  assert.deepEqual(lowerPriority(5, deps), { nice: 19 });
  assert.deepEqual(set, [[0, 19]]);
});

test("a step of 0 leaves the priority as it is", () => {
  const { deps, set } = fakeProcess("linux", { 1: 0, 7: 0 });
  assert.deepEqual(lowerPriority(0, deps), { nice: 0 });
  assert.deepEqual(set, []);
});

test("a thread that ended after the listing is skipped; a refusal is reported, never thrown", () => {
  const gone = fakeProcess("linux", { 1: 0, 7: 0, 9: 0 }, (tid) => (tid === 7 ? systemError("ESRCH") : undefined));
  assert.deepEqual(lowerPriority(5, gone.deps), { nice: 5 });
  assert.deepEqual(gone.set, [
    [1, 5],
    [9, 5],
  ]);
  const refused = fakeProcess("linux", { 1: 0 }, () => systemError("EACCES"));
  const result = lowerPriority(5, refused.deps);
  assert.ok("problem" in result);
  assert.match(result.problem, /EACCES/);
});
