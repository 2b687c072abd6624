import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError, DEFAULT_RATE_LIMITS, loadConfig } from "./config";

describe("loadConfig", () => {
  test("applies the documented defaults", () => {
    const config = loadConfig({ TAB_RELAY_DATA: "/tmp/x" });
    assert.equal(config.host, "127.0.0.1");
    assert.equal(config.port, 8787);
    assert.equal(config.provider, "local");
    assert.deepEqual(config.rateLimits, DEFAULT_RATE_LIMITS);
    assert.ok(Object.isFrozen(config));
  });

  test("flags win over environment variables, and empty values count as unset", () => {
    const config = loadConfig({ TAB_RELAY_DATA: "/env", TAB_RELAY_PORT: "9000", TAB_RELAY_HOST: "" }, { dataDir: "/flag" });
    assert.equal(config.dataDir, "/flag");
    assert.equal(config.port, 9000);
    assert.equal(config.host, "127.0.0.1");
  });

  test("reports every problem at once, naming the variable and flag", () => {
    assert.throws(
      () => loadConfig({ TAB_RELAY_PORT: "99999", TAB_RELAY_LOG_LEVEL: "loud", TAB_RELAY_RATE_LIMITS: "reads=0,bogus=3" }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        const text = error.problems.join("\n");
        assert.match(text, /TAB_RELAY_DATA \(--data\)/);
        assert.match(text, /TAB_RELAY_PORT \(--port\)/);
        assert.match(text, /TAB_RELAY_LOG_LEVEL/);
        assert.match(text, /reads must be between/);
        assert.match(text, /unknown limit "bogus"/);
        assert.equal(error.problems.length, 5);
        return true;
      },
    );
  });

  test("an upstream URL selects the openai provider, which then needs a model", () => {
    assert.throws(() => loadConfig({ TAB_RELAY_DATA: "d", TAB_RELAY_UPSTREAM_URL: "http://127.0.0.1:11434/v1" }), /TAB_RELAY_UPSTREAM_MODEL/);
    const config = loadConfig({ TAB_RELAY_DATA: "d", TAB_RELAY_UPSTREAM_URL: "http://127.0.0.1:11434/v1", TAB_RELAY_UPSTREAM_MODEL: "qwen", TAB_RELAY_UPSTREAM_API: "completions" });
    assert.equal(config.provider, "openai");
    assert.deepEqual(config.upstream, { url: "http://127.0.0.1:11434/v1", model: "qwen", apiKey: undefined, api: "completions", timeoutMs: 10_000 });
  });

  test("rate limits can be changed one at a time", () => {
    const config = loadConfig({ TAB_RELAY_DATA: "d", TAB_RELAY_RATE_LIMITS: "reads=1000000, writes=5" });
    assert.equal(config.rateLimits.reads, 1_000_000);
    assert.equal(config.rateLimits.writes, 5);
    assert.equal(config.rateLimits.agent_posts, 60);
  });

  test("rejects a non-http upstream URL", () => {
    assert.throws(() => loadConfig({ TAB_RELAY_DATA: "d", TAB_RELAY_UPSTREAM_URL: "ftp://x", TAB_RELAY_UPSTREAM_MODEL: "m" }), /TAB_RELAY_UPSTREAM_URL/);
  });
});
