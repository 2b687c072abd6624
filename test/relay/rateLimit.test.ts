import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { completionBody, fakeClock, startTestRelay, type TestRelay } from "../support/relayHarness";

// 20 s into a window, so a burst of requests never straddles a boundary.
const WINDOW_START = Date.UTC(2026, 10, 21, 12, 0, 0);
const NOW = WINDOW_START + 20_000;

describe("rate limits", () => {
  let relay: TestRelay;
  const clock = fakeClock(NOW);
  before(async () => {
    relay = await startTestRelay({ clock, env: { TAB_RELAY_RATE_LIMITS: "reads=5,writes=3" } });
  });
  after(() => relay.close());

  test("every main-API response carries the X-RateLimit headers, with the reset as Unix seconds", async () => {
    clock.set(NOW + 60_000);
    for (const response of [
      await relay.request("/api/v1/me"),
      await relay.request("/api/v1/me", { key: null }),
      await relay.request("/api/v1/nope"),
    ]) {
      assert.equal(response.headers.get("x-ratelimit-limit"), "5");
      assert.ok(Number(response.headers.get("x-ratelimit-remaining")) >= 0);
      assert.equal(response.headers.get("x-ratelimit-reset"), String((WINDOW_START + 120_000) / 1000));
    }
  });

  test("reads over the limit get 429 with Retry-After pointing at the reset", async () => {
    clock.set(NOW + 120_000);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await relay.request("/api/v1/me")).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    const limited = await relay.request("/api/v1/me");
    assert.equal(limited.status, 429);
    const body = (await limited.json()) as { error: { code: string } };
    assert.equal(body.error.code, "RATE_LIMIT_EXCEEDED");
    assert.equal(limited.headers.get("x-ratelimit-remaining"), "0");
    const reset = Number(limited.headers.get("x-ratelimit-reset"));
    assert.equal(reset, (WINDOW_START + 180_000) / 1000);
    assert.equal(Number(limited.headers.get("retry-after")), reset - Math.floor((NOW + 120_000) / 1000));
  });

  test("the window resets after 60 seconds", async () => {
    clock.set(NOW + 180_000);
    for (let i = 0; i < 5; i++) await relay.request("/api/v1/me");
    assert.equal((await relay.request("/api/v1/me")).status, 429);
    clock.set(WINDOW_START + 240_000);
    assert.equal((await relay.request("/api/v1/me")).status, 200);
  });

  test("writes have their own, smaller budget", async () => {
    clock.set(NOW + 300_000);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const response = await relay.request("/api/v1/api-keys", {
        method: "POST",
        json: { name: `k${i}`, scopes: ["tab.complete"] },
      });
      statuses.push(response.status);
      assert.equal(response.headers.get("x-ratelimit-limit"), "3");
    }
    assert.deepEqual(statuses, [201, 201, 201, 429]);
    assert.equal((await relay.request("/api/v1/me")).status, 200, "reads are not spent by writes");
  });

  test("a completion request counts as a read, not a write", async () => {
    clock.set(NOW + 360_000);
    const response = await relay.request("/api/v1/tab/chat/completions", { method: "POST", json: completionBody() });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-ratelimit-limit"), "5");
    assert.equal(response.headers.get("x-ratelimit-remaining"), "4");
    await response.text();
  });

  test("the completion path counts as a read however it is spelled", async () => {
    clock.set(NOW + 390_000);
    for (const path of ["/api/v1/tab/chat/completions/", "/API/V1/Tab/Chat/Completions"]) {
      const response = await relay.request(path, { method: "POST", json: completionBody() });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("x-ratelimit-limit"), "5");
      await response.arrayBuffer();
    }
  });

  test("each key has its own counters", async () => {
    clock.set(NOW + 420_000);
    const created = (await (
      await relay.request("/api/v1/api-keys", { method: "POST", json: { name: "second", scopes: ["tab.complete"] } })
    ).json()) as { data: { secret: string } };
    for (let i = 0; i < 5; i++) await relay.request("/api/v1/me");
    assert.equal((await relay.request("/api/v1/me")).status, 429);
    assert.equal((await relay.request("/api/v1/me", { key: created.data.secret })).status, 200);
  });

  test("a 429 is counted in /metrics", async () => {
    const text = await (await fetch(`${relay.url}/metrics`)).text();
    assert.match(text, /tab_relay_rate_limited_total\{class="read"\} [1-9]/);
  });
});

describe("default rate limits", () => {
  test("are the documented ones: 300 reads and 60 writes per minute", async () => {
    const relay = await startTestRelay();
    try {
      const read = await relay.request("/api/v1/me");
      assert.equal(read.headers.get("x-ratelimit-limit"), "300");
      const write = await relay.request("/api/v1/api-keys", {
        method: "POST",
        json: { name: "w", scopes: ["tab.complete"] },
      });
      assert.equal(write.headers.get("x-ratelimit-limit"), "60");
    } finally {
      await relay.close();
    }
  });
});
