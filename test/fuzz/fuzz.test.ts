import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_SEED, formatFailures, formatSummary, runFuzz, unreachedRoutes } from "./fuzzer";

/**
 * The fuzz suite within `npm test`: the relay as its own process, attacked with the fixed seed for a bounded time
 * (30 s with raised rate limits, 5 s with the defaults; the whole file takes about 45 s). `npm run fuzz -- --seconds N`
 * runs it longer; a failure names the case and how to replay it.
 */
test(
  "a relay under seeded hostile requests answers every one with the error envelope, never a 5xx, and stays up with bounded memory",
  { timeout: 180_000 },
  async () => {
    const seed = DEFAULT_SEED;
    console.log(`fuzz seed ${seed} (replay with npm run fuzz -- --seed ${seed})`);
    const report = await runFuzz({
      seed,
      seconds: 30,
      defaultLimitSeconds: 5,
      concurrency: 6,
      log: (line) => console.log(line),
    });
    console.log(formatSummary(report));

    assert.equal(report.failures.size, 0, `seed ${seed}:${formatFailures(report)}`);
    assert.ok(report.counts.http >= 1_000, `only ${report.counts.http} HTTP requests were sent`);
    assert.ok(report.counts.frames >= 5 && report.counts.handshakes >= 10, "the WebSocket endpoints were attacked");
    assert.ok(report.rss.length >= 1, "the relay's memory was measured after the warm-up and at the end");
    // Mutations must not keep the handlers out of reach: every catalogued route answered 2xx at least once.
    assert.deepEqual(unreachedRoutes(report), [], "routes that never answered 2xx");
  },
);
