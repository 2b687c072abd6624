// What the extension's manifest (extension/package.json) makes VS Code show: the Settings page's order, the name
// the extension goes by, and the commands the docs and the relay's console tell people to run (issue 24, "The
// Settings page").
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import type { NoticeKind } from "../../extension/src/core/status";
import { describeNotice } from "../../extension/src/core/statusView";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

interface Manifest {
  displayName: string;
  contributes: {
    commands: { command: string; title: string; category?: string }[];
    configuration: {
      title: string;
      properties: Record<
        string,
        {
          order?: number;
          markdownDescription?: string;
          description?: string;
          markdownDeprecationMessage?: string;
          deprecationMessage?: string;
        }
      >;
    };
  };
}

const manifest = JSON.parse(readFileSync(join(ROOT, "extension/package.json"), "utf8")) as Manifest;
const { properties } = manifest.contributes.configuration;

test("the Settings page starts with what setup sets: the relay URL, then the workspace; every setting has its own place", () => {
  // VS Code sorts an extension's settings by `order`, then by key; without it "Adaptive Debounce" came first.
  const orders = Object.entries(properties).map(([key, property]) => [key, property.order] as const);
  for (const [key, order] of orders) assert.equal(typeof order, "number", `${key} has no order`);
  const byOrder = [...orders].sort((a, b) => (a[1] ?? 0) - (b[1] ?? 0)).map(([key]) => key);
  assert.deepEqual(byOrder.slice(0, 2), ["tabRelay.relayUrl", "tabRelay.workspaceSlug"]);
  assert.equal(new Set(orders.map(([, order]) => order)).size, orders.length, "two settings share a place");
});

/**
 * The title VS Code 1.100.3 (code-server 4.100.3) shows for a setting on the Settings page. A contributed setting
 * has no title of its own: `SettingsTreeSettingElement.initLabels` uses `setting.title` only when set, and
 * `DefaultSettings.parseConfig` (src/vs/workbench/services/preferences/common/preferencesModels.ts) never sets it;
 * ISetting.title is an "internal property" that only the extension-toggle rows of settingsEditor2.ts fill. Every
 * other setting is titled by `settingKeyToDisplayFormat` (src/vs/workbench/contrib/preferences/browser/
 * settingsTreeModels.ts) as `wordifyKey` of the key's last segment (src/vs/workbench/contrib/preferences/common/
 * preferences.ts): camelCase split into words, the first letter upper-cased, a few acronyms (knownAcronyms, same
 * file) upper-cased. Read from the sources in code-server 4.100.3's workbench.js.map, VS Code commit 409c64e0df4d
 * (product.json); the term mappings that follow (PowerShell, TypeScript, GitHub) match no key here and are left out.
 */
const KNOWN_ACRONYMS = new Set(["css", "html", "scss", "less", "json", "js", "ts", "ie", "id", "php", "scm"]);
function settingsPageTitle(key: string): string {
  return key
    .slice(key.lastIndexOf(".") + 1)
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/^[a-z]/, (letter) => letter.toUpperCase())
    .replace(/\b\w+\b/g, (word) => (KNOWN_ACRONYMS.has(word.toLowerCase()) ? word.toUpperCase() : word));
}

/** Units written short; the Settings page should spell them out ("Debounce Milliseconds", not "Debounce Ms"). */
const UNIT_ABBREVIATIONS = /\b(Ms|Msec|Millis|Sec|Secs|Min|Mins|Hr|Hrs|Chars?|Toks?|Kb|Mb|Gb|Px)\b/;

const isDeprecated = (key: string) =>
  properties[key]?.markdownDeprecationMessage !== undefined || properties[key]?.deprecationMessage !== undefined;

test('every setting\'s title on the Settings page spells out its unit (issue 24: no "Debounce Ms")', () => {
  // The copy of VS Code's titling reproduces what the issue saw, and what the renamed keys read.
  assert.equal(settingsPageTitle("tabRelay.debounceMs"), "Debounce Ms");
  assert.equal(settingsPageTitle("tabRelay.requestTimeoutMs"), "Request Timeout Ms");
  assert.equal(settingsPageTitle("tabRelay.debounceMilliseconds"), "Debounce Milliseconds");
  assert.equal(settingsPageTitle("tabRelay.nextEdits.enabled"), "Enabled");
  const titles = Object.keys(properties)
    .filter((key) => !isDeprecated(key))
    .map((key) => [key, settingsPageTitle(key)] as const);
  assert.ok(titles.length >= 17, `too few settings to check: ${titles.length}`);
  for (const [key, title] of titles) assert.doesNotMatch(title, UNIT_ABBREVIATIONS, `${key} is titled "${title}"`);
});

test("a deprecated setting names the setting that replaced it, which is declared and not deprecated", () => {
  const deprecated = Object.keys(properties).filter(isDeprecated);
  assert.ok(deprecated.length >= 2, "the renamed settings are no longer declared");
  for (const key of deprecated) {
    const message = properties[key]?.markdownDeprecationMessage ?? properties[key]?.deprecationMessage ?? "";
    const named = /`(tabRelay\.[\w.]+)`/.exec(message)?.[1];
    assert.ok(named !== undefined, `${key}: "${message}" names no setting`);
    assert.ok(properties[named] !== undefined && !isDeprecated(named), `${key} points at ${named}`);
    // VS Code lists a deprecated setting on the Settings page only where it is set (settingsTreeModels.ts,
    // createSettingsTreeGroupElement); when it is, it comes after the current ones.
    const last = Math.max(
      ...Object.keys(properties)
        .filter((other) => !isDeprecated(other))
        .map((other) => properties[other]?.order ?? 0),
    );
    assert.ok((properties[key]?.order ?? 0) > last, `${key} sits among the current settings`);
  }
});

test("Model says what it is, who serves it and when to change it", () => {
  const text = properties["tabRelay.model"]?.markdownDescription ?? "";
  assert.match(text, /`model` in each request/);
  assert.match(text, /`tab-v1`/);
  assert.match(text, /operator/);
});

/** Text people read that names commands: the docs, the READMEs and the relay's console. */
function readerFacingFiles(): string[] {
  const files = ["README.md", "extension/README.md"];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const path = join(dir, name);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (/\.(md|ts)$/.test(name) && !name.endsWith(".test.ts")) files.push(path);
    }
  };
  walk("docs");
  walk("relay/console/src");
  return files;
}

test("the extension goes by one name: its display name is the commands' category, the settings' title and the prefix of every command the docs and the console name", () => {
  const name = manifest.displayName;
  assert.equal(manifest.contributes.configuration.title, name);
  for (const command of manifest.contributes.commands) assert.equal(command.category, name, command.command);
  const titles = manifest.contributes.commands.map((command) => command.title.replace(/…$/, ""));
  // What a person types into the palette: the title, or its first words ("Set Up" for "Set Up (Relay, …)…").
  const isCommand = (named: string) =>
    titles.some((title) => title === named || (title.startsWith(named) && /^\W/.test(title.slice(named.length))));
  const named: string[] = [];
  for (const file of readerFacingFiles()) {
    const text = readFileSync(join(ROOT, file), "utf8");
    // A command is named in bold in Markdown and in curly quotes in the console: **Tab Relay: Set Up**, “…”.
    for (const match of text.matchAll(/\*\*(Tab[^*:]*): ([^*]+)\*\*|“(Tab[^”:]*): ([^”]+)”/g)) {
      const prefix = match[1] ?? match[3];
      const title = (match[2] ?? match[4] ?? "").replace(/…$/, "");
      named.push(`${relative(ROOT, join(ROOT, file))}: ${prefix}: ${title}`);
      assert.equal(prefix, name, `${file} names the command "${prefix}: ${title}"`);
      assert.ok(isCommand(title), `${file} names "${prefix}: ${title}", which is no command's title`);
    }
  }
  assert.ok(named.length >= 5, `too few commands named to check anything:\n${named.join("\n")}`);
});

test("every notification the status raises starts with that name", () => {
  const kinds: NoticeKind[] = ["unauthorized", "wrongWorkspace", "forbidden", "unreachable"];
  for (const kind of kinds) {
    const { message } = describeNotice(kind, "HTTP 401", "http://127.0.0.1:8787", { slug: "acme", name: "acme" }, "x");
    assert.ok(message.startsWith(`${manifest.displayName}: `), message);
  }
});
