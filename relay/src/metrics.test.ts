import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createMetrics } from "./metrics";

describe("createMetrics", () => {
  test("renders counters and histograms in the text exposition format, label values escaped", () => {
    const metrics = createMetrics();
    metrics.httpRequests.inc({ route: "/api/v1/me", method: "GET", status: "200" });
    metrics.httpRequests.inc({ route: "/api/v1/me", method: "GET", status: "200" }, 2);
    metrics.httpRequests.inc({ route: 'odd"\\\nroute', method: "GET", status: "404" });
    metrics.httpDuration.observe({ route: "/api/v1/me", method: "GET", status: "200" }, 0.003);
    metrics.httpDuration.observe({ route: "/api/v1/me", method: "GET", status: "200" }, 7);
    const text = metrics.render();
    const lines = text.split("\n");
    assert.ok(lines.includes('tab_relay_http_requests_total{route="/api/v1/me",method="GET",status="200"} 3'), text);
    assert.ok(lines.includes('tab_relay_http_requests_total{route="odd\\"\\\\\\nroute",method="GET",status="404"} 1'), text);
    const histogram = lines.filter((line) => line.startsWith("tab_relay_http_request_duration_seconds"));
    assert.deepEqual(histogram, [
      ...[0.001, 0.0025].map((le) => `tab_relay_http_request_duration_seconds_bucket{route="/api/v1/me",method="GET",status="200",le="${le}"} 0`),
      ...[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5].map((le) => `tab_relay_http_request_duration_seconds_bucket{route="/api/v1/me",method="GET",status="200",le="${le}"} 1`),
      'tab_relay_http_request_duration_seconds_bucket{route="/api/v1/me",method="GET",status="200",le="10"} 2',
      'tab_relay_http_request_duration_seconds_bucket{route="/api/v1/me",method="GET",status="200",le="+Inf"} 2',
      'tab_relay_http_request_duration_seconds_sum{route="/api/v1/me",method="GET",status="200"} 7.003',
      'tab_relay_http_request_duration_seconds_count{route="/api/v1/me",method="GET",status="200"} 2',
    ]);
    assert.deepEqual(lines.filter((line) => line.includes("tab_relay_completion_cache_total")), [
      "# HELP tab_relay_completion_cache_total Completion cache lookups by result (hit or miss).",
      "# TYPE tab_relay_completion_cache_total counter",
    ]);
    assert.ok(text.endsWith("\n"));
  });

  test("a later render shows the counts as they are then", () => {
    const metrics = createMetrics();
    metrics.cache.inc({ result: "hit" });
    assert.match(metrics.render(), /tab_relay_completion_cache_total\{result="hit"\} 1\n/);
    metrics.cache.inc({ result: "hit" });
    metrics.upstreamDuration.observe({ provider: "local" }, 0.2);
    const text = metrics.render();
    assert.match(text, /tab_relay_completion_cache_total\{result="hit"\} 2\n/);
    assert.match(text, /tab_relay_upstream_duration_seconds_bucket\{provider="local",le="0\.25"\} 1\n/);
  });
});
