import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { SECRET_PREFIXES, generateSecret } from "@tab-relay/shared";
import {
  DEFAULT_SETTINGS,
  FORMER_SETTING_KEYS,
  SETTING_KEYS,
  apiKeyFormatProblem,
  isLanguageEnabled,
  missingConfiguration,
  parseSettings,
  readSettingValues,
  type ConfigurationSource,
  type SettingInspection,
  type Settings,
} from "./settings";

test("missing values take the documented defaults", () => {
  const { settings, problems } = parseSettings({});
  assert.deepEqual(problems, []);
  assert.equal(settings.relayUrl, "http://127.0.0.1:8787");
  assert.equal(settings.model, "tab-v1");
  assert.equal(settings.debounceMs, 120);
  assert.equal(settings.contextCharsBefore, 600);
  assert.equal(settings.contextCharsAfter, 80);
  assert.equal(settings.surroundingContextChars, 6_000);
  assert.deepEqual(settings.excludeGlobs, [".env*", "*.pem", "*.key", "id_*"]);
});

test("exclude globs are a list of non-empty patterns; a bad list keeps the default one", () => {
  assert.deepEqual(parseSettings({ excludeGlobs: ["secrets/**", " *.p12 "] }).settings.excludeGlobs, [
    "secrets/**",
    "*.p12",
  ]);
  const bad = parseSettings({ excludeGlobs: ["ok", ""] });
  assert.deepEqual(bad.settings.excludeGlobs, DEFAULT_SETTINGS.excludeGlobs);
  assert.match(bad.problems[0] ?? "", /^tabRelay\.excludeGlobs: /);
  assert.equal(parseSettings({ surroundingContextChars: 32_769 }).problems.length, 1);
});

test("an invalid value falls back to its default and is reported by setting name, the rest still applies", () => {
  const { settings, problems } = parseSettings({
    debounceMs: -5,
    relayUrl: "ftp://x",
    workspaceSlug: "acme",
    model: "tab-v2",
  });
  assert.equal(settings.debounceMs, DEFAULT_SETTINGS.debounceMs);
  assert.equal(settings.relayUrl, DEFAULT_SETTINGS.relayUrl);
  assert.equal(settings.workspaceSlug, "acme");
  assert.equal(settings.model, "tab-v2");
  assert.equal(problems.length, 2);
  assert.match(problems[0] ?? "", /^tabRelay\.relayUrl: /);
  assert.match(problems[1] ?? "", /^tabRelay\.debounceMilliseconds: /);
});

test("a trailing slash on the relay URL is dropped so paths join cleanly", () => {
  assert.equal(
    parseSettings({ relayUrl: "https://relay.example.com/ " }).settings.relayUrl,
    "https://relay.example.com",
  );
});

test("a null max tokens means the relay's default", () => {
  assert.equal(parseSettings({ maxCompletionTokens: null }).settings.maxCompletionTokens, undefined);
  assert.equal(parseSettings({ maxCompletionTokens: 64 }).settings.maxCompletionTokens, 64);
  assert.equal(parseSettings({ maxCompletionTokens: 501 }).problems.length, 1);
});

test("the workspace slug defaults to the workspace a first `npm start` creates, so only the key is missing", () => {
  const { settings } = parseSettings({});
  assert.equal(settings.workspaceSlug, "default");
  assert.deepEqual(missingConfiguration(settings, false), ["API key"]);
  assert.deepEqual(missingConfiguration(settings, true), []);
});

test("a workspace slug cleared by hand is required before any request", () => {
  const { settings } = parseSettings({ workspaceSlug: " " });
  assert.deepEqual(missingConfiguration(settings, false), ["tabRelay.workspaceSlug", "API key"]);
  assert.deepEqual(missingConfiguration({ ...settings, workspaceSlug: "acme" }, true), []);
});

test("every default VS Code shows in package.json is the one the pipeline applies", () => {
  // VS Code answers an unset setting with package.json's default, the core with DEFAULT_SETTINGS: they must agree,
  // for the current keys and for the former ones it still declares.
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    contributes: { configuration: { properties: Record<string, { default?: unknown }> } };
  };
  const properties = manifest.contributes.configuration.properties;
  const fieldOf = new Map<string, keyof Settings>();
  for (const [field, key] of Object.entries(SETTING_KEYS)) fieldOf.set(key, field as keyof Settings);
  for (const [field, key] of Object.entries(FORMER_SETTING_KEYS)) fieldOf.set(key, field as keyof Settings);
  assert.deepEqual(Object.keys(properties).sort(), [...fieldOf.keys()].map((key) => `tabRelay.${key}`).sort());
  for (const [name, property] of Object.entries(properties)) {
    const field = fieldOf.get(name.slice("tabRelay.".length));
    assert.ok(field, name);
    const { settings, problems } = parseSettings({ [field]: property.default });
    assert.deepEqual(problems, [], name);
    assert.deepEqual(settings, parseSettings({}).settings, name);
  }
});

/**
 * A stand-in for `vscode.WorkspaceConfiguration` over the `tabRelay` section: `user` and `workspace` hold what a
 * person wrote in settings.json, `defaults` what package.json declares; `get` answers like VS Code (the most
 * specific level that has the key, else the default).
 */
function configuration(levels: {
  user?: Record<string, unknown>;
  workspace?: Record<string, unknown>;
  defaults?: Record<string, unknown>;
}): ConfigurationSource {
  const { user = {}, workspace = {}, defaults = {} } = levels;
  return {
    get: (key) => workspace[key] ?? user[key] ?? defaults[key],
    inspect: (key): SettingInspection => ({ globalValue: user[key], workspaceValue: workspace[key] }),
  };
}

const DECLARED_DEFAULTS = { debounceMilliseconds: 120, debounceMs: 120, requestTimeoutMilliseconds: 5_000 };

test("a renamed setting's former key still takes effect while the new key is set nowhere", () => {
  const old = readSettingValues(
    configuration({ user: { debounceMs: 300, contextCharsBefore: 900 }, defaults: DECLARED_DEFAULTS }),
  );
  const { settings, problems } = parseSettings(old.raw, old.keys);
  assert.deepEqual(problems, []);
  assert.equal(settings.debounceMs, 300);
  assert.equal(settings.contextCharsBefore, 900);
  assert.equal(settings.requestTimeoutMs, 5_000);
  // Set in a workspace's settings.json only, it counts too.
  const inWorkspace = readSettingValues(configuration({ workspace: { requestTimeoutMs: 9_000 } }));
  assert.equal(parseSettings(inWorkspace.raw, inWorkspace.keys).settings.requestTimeoutMs, 9_000);
});

test("the new key wins over the former one when both are set, at any level", () => {
  const both = readSettingValues(
    configuration({ user: { debounceMs: 300, debounceMilliseconds: 50 }, defaults: DECLARED_DEFAULTS }),
  );
  assert.equal(parseSettings(both.raw, both.keys).settings.debounceMs, 50);
  // The new key in the user settings beats the old one in a workspace's: one moved to the new key is not
  // surprised by an old value left in some workspace.
  const split = readSettingValues(
    configuration({ user: { debounceMilliseconds: 50 }, workspace: { debounceMs: 300 }, defaults: DECLARED_DEFAULTS }),
  );
  assert.equal(parseSettings(split.raw, split.keys).settings.debounceMs, 50);
  // A new key set to its default value is still set: it wins.
  const atDefault = readSettingValues(configuration({ user: { debounceMilliseconds: 120, debounceMs: 300 } }));
  assert.equal(parseSettings(atDefault.raw, atDefault.keys).settings.debounceMs, 120);
});

test("an invalid value under a former key is reported by that key", () => {
  const values = readSettingValues(configuration({ user: { debounceMs: -5 } }));
  const { settings, problems } = parseSettings(values.raw, values.keys);
  assert.equal(settings.debounceMs, DEFAULT_SETTINGS.debounceMs);
  assert.deepEqual(
    problems.map((line) => line.split(":")[0]),
    ["tabRelay.debounceMs"],
  );
});

test("disabled languages win over enabled ones, and * enables the rest", () => {
  const settings = { ...DEFAULT_SETTINGS, enabledLanguages: ["*"], disabledLanguages: ["plaintext"] };
  assert.equal(isLanguageEnabled(settings, "typescript"), true);
  assert.equal(isLanguageEnabled(settings, "plaintext"), false);
  const only = { ...DEFAULT_SETTINGS, enabledLanguages: ["python"] };
  assert.equal(isLanguageEnabled(only, "python"), true);
  assert.equal(isLanguageEnabled(only, "typescript"), false);
});

test("refuses a pasted key without the prefix, cut short or with a broken checksum, with the reason; not a real one", () => {
  const real = generateSecret(SECRET_PREFIXES.apiKey);
  assert.equal(apiKeyFormatProblem(real), undefined);
  assert.equal(apiKeyFormatProblem(` ${real}\n`), undefined);
  assert.match(apiKeyFormatProblem("hello") ?? "", /start with svc_ws_/);
  assert.match(apiKeyFormatProblem("sk-abc") ?? "", /start with svc_ws_/);
  assert.match(apiKeyFormatProblem(real.slice(0, -1)) ?? "", /cut short or mistyped/);
  assert.match(apiKeyFormatProblem(`${real.slice(0, -1)}${real.endsWith("A") ? "B" : "A"}`) ?? "", /checksum/);
});
