// Preloaded into the relay under test (`node --import`): the benchmark holds the relay's stdin open, so
// when the benchmark dies without stopping it, stdin closes and the relay shuts down as on SIGTERM.
process.stdin.once("close", () => process.kill(process.pid, "SIGTERM"));
process.stdin.resume();
