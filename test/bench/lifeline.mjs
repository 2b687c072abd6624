// Preloaded into the relay under test (`node --import`): the benchmark holds the relay's stdin open, so
// when the benchmark dies without stopping it, stdin closes and the relay shuts down as on SIGTERM.
// Worker threads inherit the preload, and a worker's stdin is not the benchmark's: only the main thread listens.
import { isMainThread } from "node:worker_threads";

if (isMainThread) {
  process.stdin.once("close", () => process.kill(process.pid, "SIGTERM"));
  process.stdin.resume();
}
