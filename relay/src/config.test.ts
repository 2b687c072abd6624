import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  ConfigError,
  DEFAULT_RATE_LIMITS,
  isLoopbackHost,
  loadConfig,
  loadDoctorConfig,
  plainHttpWarning,
  secretFlagWarnings,
} from "./config";

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
    const config = loadConfig(
      { TAB_RELAY_DATA: "/env", TAB_RELAY_PORT: "9000", TAB_RELAY_HOST: "" },
      { dataDir: "/flag" },
    );
    assert.equal(config.dataDir, "/flag");
    assert.equal(config.port, 9000);
    assert.equal(config.host, "127.0.0.1");
  });

  test("reports every problem at once, naming the variable and flag", () => {
    assert.throws(
      () =>
        loadConfig({ TAB_RELAY_PORT: "99999", TAB_RELAY_LOG_LEVEL: "loud", TAB_RELAY_RATE_LIMITS: "reads=0,bogus=3" }),
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
    assert.throws(
      () => loadConfig({ TAB_RELAY_DATA: "d", TAB_RELAY_UPSTREAM_URL: "http://127.0.0.1:11434/v1" }),
      /TAB_RELAY_UPSTREAM_MODEL/,
    );
    const config = loadConfig({
      TAB_RELAY_DATA: "d",
      TAB_RELAY_UPSTREAM_URL: "http://127.0.0.1:11434/v1",
      TAB_RELAY_UPSTREAM_MODEL: "qwen",
      TAB_RELAY_UPSTREAM_API: "suffix",
    });
    assert.equal(config.provider, "openai");
    assert.deepEqual(config.upstream, {
      url: "http://127.0.0.1:11434/v1",
      model: "qwen",
      apiKey: undefined,
      api: "suffix",
      apiAlias: undefined,
      fimTemplate: undefined,
      infillMaxPredictMs: 500,
      timeoutMs: 10_000,
      limits: { deadlineMs: 60_000, maxBodyBytes: 2_097_152, maxEventChars: 262_144, maxStreamBytes: 8_388_608 },
    });
  });

  test("the model server's limits are parsed once, each named in its problem (issue 19)", () => {
    const env = { TAB_RELAY_DATA: "d", TAB_RELAY_UPSTREAM_URL: "http://h:1/v1", TAB_RELAY_UPSTREAM_MODEL: "m" };
    const config = loadConfig({
      ...env,
      TAB_RELAY_UPSTREAM_DEADLINE_MS: "30000",
      TAB_RELAY_UPSTREAM_MAX_BODY_BYTES: "65536",
      TAB_RELAY_UPSTREAM_MAX_EVENT_CHARS: "4096",
      TAB_RELAY_UPSTREAM_MAX_STREAM_BYTES: "1048576",
    });
    assert.deepEqual(config.upstream?.limits, {
      deadlineMs: 30_000,
      maxBodyBytes: 65_536,
      maxEventChars: 4096,
      maxStreamBytes: 1_048_576,
    });
    assert.ok(Object.isFrozen(config.upstream?.limits));
    assert.throws(
      () => loadConfig({ ...env, TAB_RELAY_UPSTREAM_DEADLINE_MS: "5", TAB_RELAY_UPSTREAM_MAX_STREAM_BYTES: "lots" }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((p) => p.startsWith("TAB_RELAY_UPSTREAM_DEADLINE_MS (--upstream-deadline-ms)")) &&
        error.problems.some((p) => p.startsWith("TAB_RELAY_UPSTREAM_MAX_STREAM_BYTES (--upstream-max-stream-bytes)")),
    );
  });

  describe("upstream modes", () => {
    const upstream = (settings: Record<string, string>) =>
      loadConfig({
        TAB_RELAY_DATA: "d",
        TAB_RELAY_UPSTREAM_URL: "http://127.0.0.1:8000/v1",
        TAB_RELAY_UPSTREAM_MODEL: "Qwen/Qwen2.5-Coder-7B",
        ...settings,
      }).upstream;
    const problems = (settings: Record<string, string>, overrides = {}) => {
      try {
        loadConfig(
          {
            TAB_RELAY_DATA: "d",
            TAB_RELAY_UPSTREAM_URL: "http://127.0.0.1:8000/v1",
            TAB_RELAY_UPSTREAM_MODEL: "Qwen/Qwen2.5-Coder-7B",
            ...settings,
          },
          overrides,
        );
      } catch (error) {
        if (error instanceof ConfigError) return error.problems;
        throw error;
      }
      assert.fail("expected a ConfigError");
    };

    test("each mode is accepted by its name, flag or variable", () => {
      for (const api of ["chat", "suffix", "fim", "infill", "mistral-fim"])
        assert.equal(upstream({ TAB_RELAY_UPSTREAM_API: api })?.api, api);
      assert.equal(
        loadConfig(
          { TAB_RELAY_DATA: "d", TAB_RELAY_UPSTREAM_URL: "http://h/v1", TAB_RELAY_UPSTREAM_MODEL: "m" },
          { upstreamApi: "infill" },
        ).upstream?.api,
        "infill",
      );
    });

    test("completions is suffix under its former name, remembered for the warning at start", () => {
      const config = upstream({ TAB_RELAY_UPSTREAM_API: "completions" });
      assert.equal(config?.api, "suffix");
      assert.equal(config?.apiAlias, "completions");
    });

    test("an unknown mode names the valid ones", () => {
      const [problem] = problems({ TAB_RELAY_UPSTREAM_API: "openai" });
      assert.match(
        problem ?? "",
        /^TAB_RELAY_UPSTREAM_API \(--upstream-api\): .*"chat".*"suffix".*"fim".*"infill".*"mistral-fim"/,
      );
    });

    test("fim picks the template from the model name, or takes the family or custom string given", () => {
      assert.equal(upstream({ TAB_RELAY_UPSTREAM_API: "fim" })?.fimTemplate, "qwen-coder");
      assert.equal(
        upstream({ TAB_RELAY_UPSTREAM_API: "fim", TAB_RELAY_FIM_TEMPLATE: "starcoder2" })?.fimTemplate,
        "starcoder2",
      );
      const custom = "<fim_prefix>{context}{prefix}<fim_suffix>{suffix}<fim_middle>";
      assert.equal(
        upstream({
          TAB_RELAY_UPSTREAM_API: "fim",
          TAB_RELAY_UPSTREAM_MODEL: "my-own-model",
          TAB_RELAY_FIM_TEMPLATE: custom,
        })?.fimTemplate,
        custom,
      );
    });

    test("fim with a model no family matches and no template fails at start, listing the families", () => {
      const [problem, ...rest] = problems({
        TAB_RELAY_UPSTREAM_API: "fim",
        TAB_RELAY_UPSTREAM_MODEL: "llama-3.1-8b-instruct",
      });
      assert.deepEqual(rest, []);
      assert.match(
        problem ?? "",
        /^TAB_RELAY_FIM_TEMPLATE \(--fim-template\): TAB_RELAY_UPSTREAM_API=fim needs the model's FIM template, and the model name "llama-3.1-8b-instruct" matches no family/,
      );
      assert.match(problem ?? "", /qwen-coder, starcoder2, codellama, deepseek-coder, codestral, codegemma/);
    });

    test("a custom template must hold {prefix}, and unknown placeholders are reported, all at once", () => {
      const found = problems({
        TAB_RELAY_UPSTREAM_API: "fim",
        TAB_RELAY_FIM_TEMPLATE: "<PRE>{before}<SUF>{suffix}{cursor}<MID>",
        TAB_RELAY_PORT: "x",
      });
      assert.equal(found.length, 3, found.join("\n"));
      assert.ok(
        found.includes("TAB_RELAY_FIM_TEMPLATE (--fim-template): a custom template must contain {prefix}"),
        found.join("\n"),
      );
      assert.ok(
        found.includes(
          "TAB_RELAY_FIM_TEMPLATE (--fim-template): unknown placeholders {before}, {cursor} (known: {prefix}, {suffix}, {context})",
        ),
        found.join("\n"),
      );
    });

    test("an unknown family name is reported with the families", () => {
      const [problem] = problems({ TAB_RELAY_UPSTREAM_API: "fim", TAB_RELAY_FIM_TEMPLATE: "qwen" });
      assert.match(
        problem ?? "",
        /^TAB_RELAY_FIM_TEMPLATE \(--fim-template\): unknown family "qwen" \(families: qwen-coder, starcoder2/,
      );
    });

    test("settings of another mode are reported rather than silently ignored", () => {
      assert.deepEqual(problems({ TAB_RELAY_UPSTREAM_API: "infill", TAB_RELAY_FIM_TEMPLATE: "qwen-coder" }), [
        "TAB_RELAY_FIM_TEMPLATE (--fim-template): only applies when TAB_RELAY_UPSTREAM_API is fim (it is infill)",
      ]);
      assert.deepEqual(problems({ TAB_RELAY_UPSTREAM_API: "fim", TAB_RELAY_INFILL_MAX_PREDICT_MS: "800" }), [
        "TAB_RELAY_INFILL_MAX_PREDICT_MS (--infill-max-predict-ms): only applies when TAB_RELAY_UPSTREAM_API is infill (it is fim)",
      ]);
    });

    test("infill takes llama.cpp's t_max_predict_ms, 500 by default, 0 for no limit", () => {
      assert.equal(upstream({ TAB_RELAY_UPSTREAM_API: "infill" })?.infillMaxPredictMs, 500);
      assert.equal(
        upstream({ TAB_RELAY_UPSTREAM_API: "infill", TAB_RELAY_INFILL_MAX_PREDICT_MS: "0" })?.infillMaxPredictMs,
        0,
      );
      assert.match(
        problems({ TAB_RELAY_UPSTREAM_API: "infill", TAB_RELAY_INFILL_MAX_PREDICT_MS: "-1" })[0] ?? "",
        /^TAB_RELAY_INFILL_MAX_PREDICT_MS/,
      );
    });
  });

  test("rate limits can be changed one at a time", () => {
    const config = loadConfig({ TAB_RELAY_DATA: "d", TAB_RELAY_RATE_LIMITS: "reads=1000000, writes=5" });
    assert.equal(config.rateLimits.reads, 1_000_000);
    assert.equal(config.rateLimits.writes, 5);
    assert.equal(config.rateLimits.agent_posts, 60);
  });

  test("trusts no proxy unless told: false, a hop count, or a list of addresses and CIDR ranges (IPv4 and IPv6)", () => {
    assert.equal(loadConfig({ TAB_RELAY_DATA: "d" }).trustProxy, false);
    assert.equal(loadConfig({ TAB_RELAY_DATA: "d", TAB_RELAY_TRUST_PROXY: "false" }).trustProxy, false);
    assert.equal(loadConfig({ TAB_RELAY_DATA: "d", TAB_RELAY_TRUST_PROXY: "2" }).trustProxy, 2);
    const list = loadConfig(
      { TAB_RELAY_DATA: "d" },
      { trustProxy: " 10.0.0.0/8, 192.168.1.7 ,fd00::/8, ::1, 172.16.0.0/255.240.0.0, loopback" },
    ).trustProxy;
    assert.deepEqual(list, ["10.0.0.0/8", "192.168.1.7", "fd00::/8", "::1", "172.16.0.0/255.240.0.0", "loopback"]);
    assert.ok(Object.isFrozen(list));
  });

  test("a bad trust-proxy value is reported with every other problem, naming the entries that are wrong", () => {
    const problemsWith = (value: string) => {
      try {
        loadConfig({ TAB_RELAY_PORT: "x", TAB_RELAY_TRUST_PROXY: value });
      } catch (error) {
        assert.ok(error instanceof ConfigError);
        assert.ok(error.problems.some((p) => p.startsWith("TAB_RELAY_PORT")));
        assert.ok(error.problems.some((p) => p.startsWith("TAB_RELAY_DATA")));
        return error.problems.filter((p) => p.startsWith("TAB_RELAY_TRUST_PROXY (--trust-proxy): ")).join("\n");
      }
      assert.fail(`${value} was accepted`);
    };
    assert.match(problemsWith("true"), /any X-Forwarded-For a client makes up/);
    assert.match(problemsWith("0"), /hop count is 1 to 100/);
    assert.match(problemsWith("101"), /hop count is 1 to 100/);
    assert.match(
      problemsWith("10.0.0.0/33, 10.0.0.1, proxy.internal"),
      /not 10\.0\.0\.0\/33 \(invalid range.*\), proxy\.internal \(invalid IP address/,
    );
    assert.match(problemsWith("fd00::/129"), /not fd00::\/129/);
    assert.match(problemsWith("2, 10.0.0.1"), /2 \(a hop count stands alone\)/);
    assert.match(problemsWith(" , "), /no address/);
  });

  test("the audit log keeps 90 days unless told otherwise: 1 to 3650 days", () => {
    assert.equal(loadConfig({ TAB_RELAY_DATA: "/tmp/x" }).usageRetentionDays, 90);
    assert.equal(loadConfig({ TAB_RELAY_DATA: "/tmp/x", TAB_RELAY_USAGE_RETENTION_DAYS: "30" }).usageRetentionDays, 30);
    assert.equal(loadConfig({ TAB_RELAY_DATA: "/tmp/x" }, { usageRetentionDays: "7" }).usageRetentionDays, 7);
    for (const bad of ["0", "3651", "1.5", "forever"]) {
      assert.throws(
        () => loadConfig({ TAB_RELAY_DATA: "/tmp/x", TAB_RELAY_USAGE_RETENTION_DAYS: bad }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.problems.some((problem) =>
            problem.startsWith("TAB_RELAY_USAGE_RETENTION_DAYS (--usage-retention-days): "),
          ),
      );
    }
  });

  test("rejects a non-http upstream URL", () => {
    assert.throws(
      () => loadConfig({ TAB_RELAY_DATA: "d", TAB_RELAY_UPSTREAM_URL: "ftp://x", TAB_RELAY_UPSTREAM_MODEL: "m" }),
      /TAB_RELAY_UPSTREAM_URL/,
    );
  });
});

describe("start-up warnings", () => {
  test("secrets given as flags are named with the variable to use instead, never with their value", () => {
    const warnings = secretFlagWarnings({
      upstreamApiKey: "sk-live-0123456789",
      databaseUrl: "postgres://relay:hunter2@db.internal:5432/relay",
      redisUrl: "rediss://:s3cret@cache.internal:6380",
    });
    assert.equal(warnings.length, 3);
    assert.match(
      warnings[0] ?? "",
      /^--upstream-api-key puts the upstream API key on the command line.*; set TAB_RELAY_UPSTREAM_API_KEY instead$/,
    );
    assert.match(warnings[1] ?? "", /^--database puts a database password .*; set TAB_RELAY_DATABASE_URL instead$/);
    assert.match(warnings[2] ?? "", /^--redis puts a Redis password .*; set TAB_RELAY_REDIS_URL instead$/);
    for (const secret of ["sk-live", "hunter2", "s3cret", "db.internal", "cache.internal"])
      assert.ok(!warnings.join("\n").includes(secret), secret);
  });

  test("a password passed as a URL parameter counts too; URLs without one, and unset flags, do not", () => {
    assert.equal(secretFlagWarnings({ databaseUrl: "postgres://db.internal/relay?password=hunter2" }).length, 1);
    assert.deepEqual(
      secretFlagWarnings({
        databaseUrl: "postgres://relay@db.internal/relay",
        redisUrl: "redis://127.0.0.1:6379",
        upstreamApiKey: "",
      }),
      [],
    );
    assert.deepEqual(secretFlagWarnings({}), []);
  });

  test("loopback addresses are 127.0.0.0/8, ::1 (in any spelling, mapped too) and localhost", () => {
    for (const host of [
      "127.0.0.1",
      "127.8.9.10",
      "::1",
      "0:0:0:0:0:0:0:1",
      "::ffff:127.0.0.1",
      "localhost",
      "LOCALHOST",
    ])
      assert.equal(isLoopbackHost(host), true, host);
    for (const host of ["0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "fd00::1", "relay.internal", "128.0.0.1"])
      assert.equal(isLoopbackHost(host), false, host);
  });

  test("plain http is worth a warning only where other machines reach it and no https public URL fronts it", () => {
    assert.equal(plainHttpWarning({ host: "127.0.0.1", publicUrl: undefined }), undefined);
    assert.equal(plainHttpWarning({ host: "0.0.0.0", publicUrl: "https://relay.example.com" }), undefined);
    const warning = plainHttpWarning({ host: "0.0.0.0", publicUrl: "http://relay.example.com" });
    assert.match(
      warning ?? "",
      /^Serving plain http on 0\.0\.0\.0, which other machines can reach: .* set TAB_RELAY_PUBLIC_URL to its https:\/\/ address, or listen on 127\.0\.0\.1$/,
    );
    assert.ok(plainHttpWarning({ host: "::", publicUrl: undefined }));
  });
});

describe("loadDoctorConfig", () => {
  test("reads the upstream settings alone, flags over environment, with no data folder", () => {
    const config = loadDoctorConfig(
      { TAB_RELAY_UPSTREAM_URL: "http://env:1/v1", TAB_RELAY_UPSTREAM_API_KEY: "sk-env" },
      { upstreamUrl: "http://flag:2", upstreamModel: "m" },
    );
    assert.deepEqual(
      { ...config },
      {
        upstreamUrl: "http://flag:2",
        upstreamModel: "m",
        upstreamApiKey: "sk-env",
        upstreamApi: undefined,
        fimTemplate: undefined,
        infillMaxPredictMs: 500,
        upstreamTimeoutMs: 10_000,
      },
    );
    assert.ok(Object.isFrozen(config));
    assert.equal(
      loadDoctorConfig({ TAB_RELAY_UPSTREAM_URL: "http://h", TAB_RELAY_UPSTREAM_API: "completions" }).upstreamApi,
      "suffix",
    );
  });

  test("reports every problem at once: no URL, a bad mode, a template for another mode", () => {
    assert.throws(
      () => loadDoctorConfig({ TAB_RELAY_UPSTREAM_API: "magic", TAB_RELAY_FIM_TEMPLATE: "nope" }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.length === 3 &&
        error.problems.some((p) => p.startsWith("TAB_RELAY_UPSTREAM_URL (--upstream-url): is required")) &&
        error.problems.some((p) => p.startsWith("TAB_RELAY_UPSTREAM_API (--upstream-api):")) &&
        error.problems.some((p) => p.startsWith('TAB_RELAY_FIM_TEMPLATE (--fim-template): unknown family "nope"')),
    );
    assert.throws(
      () =>
        loadDoctorConfig({
          TAB_RELAY_UPSTREAM_URL: "http://h",
          TAB_RELAY_UPSTREAM_API: "suffix",
          TAB_RELAY_FIM_TEMPLATE: "starcoder2",
        }),
      /only applies when TAB_RELAY_UPSTREAM_API is fim \(it is suffix\)/,
    );
    assert.throws(
      () => loadDoctorConfig({ TAB_RELAY_UPSTREAM_URL: "ftp://h" }),
      /TAB_RELAY_UPSTREAM_URL \(--upstream-url\)/,
    );
  });
});

describe("the embedded engine's FIM template", () => {
  test("a family's template reaches the engine as its text, a custom one as given, none as undefined", () => {
    const engine = (env: Record<string, string>) =>
      loadConfig({ TAB_RELAY_DATA: "/tmp/x", TAB_RELAY_MODEL: "./m.gguf", ...env }).engine;
    assert.equal(
      engine({ TAB_RELAY_FIM_TEMPLATE: "qwen-coder" })?.fimTemplate,
      "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>",
    );
    assert.equal(
      engine({ TAB_RELAY_FIM_TEMPLATE: "starcoder2" })?.fimTemplate,
      "<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>",
    );
    assert.equal(
      engine({ TAB_RELAY_FIM_TEMPLATE: "<A>{prefix}<B>{suffix}<C>" })?.fimTemplate,
      "<A>{prefix}<B>{suffix}<C>",
    );
    assert.equal(engine({})?.fimTemplate, undefined);
  });

  test("a template without {prefix} is refused for the engine too", () => {
    assert.throws(
      () =>
        loadConfig({ TAB_RELAY_DATA: "/tmp/x", TAB_RELAY_MODEL: "./m.gguf", TAB_RELAY_FIM_TEMPLATE: "<A>{suffix}" }),
      (error: ConfigError) => error.problems.some((p) => /must contain \{prefix\}/.test(p)),
    );
  });
});

describe("the embedded engine's nice value", () => {
  const engine = (env: Record<string, string>) =>
    loadConfig({ TAB_RELAY_DATA: "/tmp/x", TAB_RELAY_MODEL: "./m.gguf", ...env }).engine;

  test("is 5 steps below the relay unless set; 0 keeps the relay's priority", () => {
    assert.equal(engine({})?.nice, 5);
    assert.equal(engine({ TAB_RELAY_ENGINE_NICE: "0" })?.nice, 0);
    assert.equal(engine({ TAB_RELAY_ENGINE_NICE: "19" })?.nice, 19);
  });

  test("outside 0 to 19 it is refused, naming the setting", () => {
    for (const value of ["-1", "20", "2.5"]) {
      assert.throws(
        () => engine({ TAB_RELAY_ENGINE_NICE: value }),
        (error: ConfigError) => error.problems.some((p) => p.includes("TAB_RELAY_ENGINE_NICE")),
        value,
      );
    }
  });
});
