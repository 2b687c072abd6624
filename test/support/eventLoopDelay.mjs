// Preloaded into a relay process (NODE_OPTIONS="--import …") by test/fuzz/upstreamFaults.test.ts. On each SIGUSR2
// it writes the process's own event-loop delay since the previous signal to stderr and starts counting afresh, so a
// fault's figure is the relay's alone, not the measuring process's (which also serves the faulty model server).
import { monitorEventLoopDelay } from "node:perf_hooks";
import process from "node:process";

const histogram = monitorEventLoopDelay({ resolution: 2 });
histogram.enable();
let reports = 0;
process.on("SIGUSR2", () => {
  const ms = (ns) => (ns / 1e6).toFixed(1);
  process.stderr.write(
    `event-loop-delay n=${++reports} p99_ms=${ms(histogram.percentile(99))} max_ms=${ms(histogram.max)}\n`,
  );
  histogram.reset();
});
