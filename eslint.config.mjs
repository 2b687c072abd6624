import js from "@eslint/js";
import tseslint from "typescript-eslint";
import heldPromises from "./scripts/eslint/heldPromises.mjs";

const NO_ENV = {
  object: "process",
  property: "env",
  message: "Read configuration in config.ts or main.ts and inject it.",
};
const NO_WALL_CLOCK = [{ object: "Date", property: "now", message: "Inject a clock." }];
const NO_MONOTONIC_CLOCK = [
  {
    object: "performance",
    property: "now",
    message: "Inject a clock: durations measured on it run on a FakeClock in tests.",
  },
  {
    object: "process",
    property: "hrtime",
    message: "Inject a clock: durations measured on it run on a FakeClock in tests.",
  },
];

export default tseslint.config(
  {
    ignores: [
      "**/node_modules/**",
      "**/dist/**",
      "data/**",
      "test-output/**",
      "**/*.vsix",
      "test/openapi/client/schema.d.ts",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } },
    rules: {
      "no-console": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
    },
  },
  {
    // Type-aware rules for the packages' code and their own tests: a promise nobody awaits (its rejection goes
    // unhandled, or a caller goes on before the work is done) and a promise where a callback's void or a boolean is
    // expected fail the lint. The programs are the packages' tsconfigs (shared's test config covers its src and tests).
    files: ["relay/**/*.ts", "shared/**/*.ts", "agent/**/*.ts", "extension/**/*.ts"],
    extends: [tseslint.configs.recommendedTypeCheckedOnly],
    plugins: { "tab-relay": heldPromises },
    languageOptions: {
      parserOptions: {
        project: [
          "shared/tsconfig.test.json",
          "agent/tsconfig.json",
          "relay/tsconfig.json",
          "relay/console/tsconfig.json",
          "extension/tsconfig.json",
        ],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // node:test's test() and describe() return promises the runner itself awaits.
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            {
              from: "package",
              package: "node:test",
              name: ["test", "describe", "it", "suite", "before", "after", "beforeEach", "afterEach"],
            },
          ],
        },
      ],
      // A promise kept to be awaited later has a handler from the start (scripts/eslint/heldPromises.mjs).
      "tab-relay/no-held-promise": "error",
      // An async function without await is how a synchronous implementation of an async interface is written here:
      // unlike a plain function returning Promise.resolve(), it turns a throw into a rejection.
      "@typescript-eslint/require-await": "off",
    },
  },
  {
    // A test holds a request or a stop on purpose while it does what it checks, and a rejection there fails the test.
    files: ["relay/**/*.test.ts", "shared/**/*.test.ts", "agent/**/*.test.ts", "extension/**/*.test.ts"],
    rules: { "tab-relay/no-held-promise": "off" },
  },
  {
    // Only the composition roots and config read the environment; everything else gets config injected. Nor does
    // anything else read the time, in any of its spellings: code that asks the platform for the time cannot run on
    // a FakeClock, so its decisions (retries, timeouts, expiry) could only be tested by waiting. The clocks live in
    // relay/src/clock.ts and shared/src/clock.ts; `new Date(ms)` and `Date.parse` read no clock and stay allowed.
    files: ["relay/src/**/*.ts", "extension/src/**/*.ts", "shared/src/**/*.ts", "agent/src/**/*.ts"],
    ignores: [
      "relay/src/config.ts",
      "relay/src/clock.ts",
      "shared/src/clock.ts",
      "relay/src/main.ts",
      "relay/src/cli.ts",
      // The embedded engine's child process: an entry point like cli.ts, read its settings and times inference.
      "relay/src/engine/child/main.ts",
      "**/*.test.ts",
      "extension/src/vscode/extension.ts",
    ],
    rules: {
      "no-restricted-properties": ["error", NO_ENV, ...NO_WALL_CLOCK, ...NO_MONOTONIC_CLOCK],
      "no-restricted-syntax": [
        "error",
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: "new Date() reads the wall clock: inject a clock and use new Date(clock.now()).",
        },
        { selector: "CallExpression[callee.name='Date']", message: "Date() reads the wall clock: inject a clock." },
      ],
    },
  },
  {
    // Adapters that time real I/O against their own real timers and decide nothing by the result: the webhook client
    // (an attempt's duration on the wire, beside its socket timeout) and the latency histograms of requests and
    // completions. They may read the monotonic clock; the wall clock stays injected.
    files: [
      "relay/src/delivery/webhookClient.ts",
      "relay/src/http/requestContext.ts",
      "relay/src/completion/service.ts",
    ],
    rules: { "no-restricted-properties": ["error", NO_ENV, ...NO_WALL_CLOCK] },
  },
  {
    // Tests run under Node, so only the code itself must stay platform-free (@tab-relay/agent runs wherever
    // WebCrypto and fetch do).
    files: ["extension/src/core/**/*.ts", "shared/src/**/*.ts", "agent/src/**/*.ts"],
    ignores: ["**/*.test.ts", "agent/src/fixtures.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["vscode"], message: "core and shared must not import vscode." },
            { group: ["node:*"], message: "core and shared stay platform-free." },
          ],
        },
      ],
    },
  },
  {
    // Scripts and tests print their results to the console on purpose.
    files: ["scripts/**", "test/**", "**/bench/**", "**/build.mjs", "examples/**"],
    rules: { "no-console": "off" },
  },
);
