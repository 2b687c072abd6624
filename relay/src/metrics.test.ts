import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createMetrics } from "./metrics";

describe("createMetrics", () => {
  test("renders counters and histograms in the text exposition format, label values escaped", async () => {
    const metrics = createMetrics();
    metrics.httpRequests.inc({ route: "/api/v1/me", method: "GET", status: "200" });
    metrics.httpRequests.inc({ route: "/api/v1/me", method: "GET", status: "200" }, 2);
    metrics.httpRequests.inc({ route: 'odd"\\\nroute', method: "GET", status: "404" });
    metrics.httpDuration.observe({ route: "/api/v1/me", method: "GET", status: "200" }, 0.003);
    metrics.httpDuration.observe({ route: "/api/v1/me", method: "GET", status: "200" }, 7);
    const text = await metrics.render();
    const lines = text.split("\n");
    assert.ok(lines.includes('tab_relay_http_requests_total{route="/api/v1/me",method="GET",status="200"} 3'), text);
    assert.ok(
      lines.includes('tab_relay_http_requests_total{route="odd\\"\\\\\\nroute",method="GET",status="404"} 1'),
      text,
    );
    const histogram = lines.filter((line) => line.startsWith("tab_relay_http_request_duration_seconds"));
    assert.deepEqual(histogram, [
      ...[0.001, 0.0025].map(
        (le) =>
          `tab_relay_http_request_duration_seconds_bucket{route="/api/v1/me",method="GET",status="200",le="${le}"} 0`,
      ),
      ...[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5].map(
        (le) =>
          `tab_relay_http_request_duration_seconds_bucket{route="/api/v1/me",method="GET",status="200",le="${le}"} 1`,
      ),
      'tab_relay_http_request_duration_seconds_bucket{route="/api/v1/me",method="GET",status="200",le="10"} 2',
      'tab_relay_http_request_duration_seconds_bucket{route="/api/v1/me",method="GET",status="200",le="+Inf"} 2',
      'tab_relay_http_request_duration_seconds_sum{route="/api/v1/me",method="GET",status="200"} 7.003',
      'tab_relay_http_request_duration_seconds_count{route="/api/v1/me",method="GET",status="200"} 2',
    ]);
    assert.deepEqual(
      lines.filter((line) => line.includes("tab_relay_completion_cache_total")),
      [
        "# HELP tab_relay_completion_cache_total Completion cache lookups by result (hit or miss).",
        "# TYPE tab_relay_completion_cache_total counter",
      ],
    );
    assert.ok(text.endsWith("\n"));
  });

  test("a later render shows the counts as they are then", async () => {
    const metrics = createMetrics();
    metrics.cache.inc({ result: "hit" });
    assert.match(await metrics.render(), /tab_relay_completion_cache_total\{result="hit"\} 1\n/);
    metrics.cache.inc({ result: "hit" });
    metrics.upstreamDuration.observe({ provider: "local" }, 0.2);
    const text = await metrics.render();
    assert.match(text, /tab_relay_completion_cache_total\{result="hit"\} 2\n/);
    assert.match(text, /tab_relay_upstream_duration_seconds_bucket\{provider="local",le="0\.25"\} 1\n/);
  });

  test("gauges read their source at each scrape, both outbox series from one read; an outbox that cannot be read is NaN, the rest answers", async () => {
    const metrics = createMetrics();
    let reads = 0;
    let outbox: () => Promise<{ pending: number; oldestCreatedAt: string | undefined }> = async () => ({
      pending: 3,
      oldestCreatedAt: "2026-01-01T00:00:00.000Z",
    });
    metrics.observe({
      sockets: () => ({ console: 2, socket_mode: 1, sse: 4 }),
      outbox: () => {
        reads++;
        return outbox();
      },
      now: () => Date.parse("2026-01-01T00:01:30.000Z"),
    });
    const text = await metrics.render();
    const lines = text.split("\n");
    for (const line of [
      'tab_relay_open_sockets{kind="console"} 2',
      'tab_relay_open_sockets{kind="socket_mode"} 1',
      'tab_relay_open_sockets{kind="sse"} 4',
    ])
      assert.ok(lines.includes(line), text);
    assert.ok(lines.includes("tab_relay_outbox_pending_events 3"), text);
    assert.ok(lines.includes("tab_relay_outbox_oldest_pending_age_seconds 90"), text);
    assert.equal(reads, 1);

    // prom-client writes NaN as `Nan`, which Prometheus parses (case-insensitively) as NaN.
    outbox = () => Promise.reject(new Error("database away"));
    const without = await metrics.render();
    assert.match(without, /^tab_relay_outbox_pending_events nan$/im);
    assert.match(without, /^tab_relay_outbox_oldest_pending_age_seconds nan$/im);
    assert.match(without, /^process_resident_memory_bytes \d+/m);
    assert.match(without, /^tab_relay_open_sockets\{kind="sse"\} 4$/m);
  });
});
