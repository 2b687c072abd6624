import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/dist/**", "data/**", "test-output/**", "**/*.vsix"] },
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
    // Only the composition roots and config read the environment; everything else gets config injected.
    files: ["relay/src/**/*.ts", "extension/src/**/*.ts", "shared/src/**/*.ts"],
    ignores: ["relay/src/config.ts", "relay/src/clock.ts", "relay/src/main.ts", "relay/src/cli.ts", "**/*.test.ts", "extension/src/vscode/extension.ts"],
    rules: {
      "no-restricted-properties": [
        "error",
        { object: "process", property: "env", message: "Read configuration in config.ts or main.ts and inject it." },
        { object: "Date", property: "now", message: "Inject a clock." },
      ],
    },
  },
  {
    // Tests run under Node, so only the code itself must stay platform-free.
    files: ["extension/src/core/**/*.ts", "shared/src/**/*.ts"],
    ignores: ["**/*.test.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ group: ["vscode"], message: "core and shared must not import vscode." }, { group: ["node:*"], message: "core and shared stay platform-free." }] },
      ],
    },
  },
  {
    // Scripts and tests print their results to the console on purpose.
    files: ["scripts/**", "test/**", "**/bench/**", "**/build.mjs", "examples/**"],
    rules: { "no-console": "off" },
  },
);
