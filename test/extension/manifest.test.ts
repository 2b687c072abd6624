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
      properties: Record<string, { order?: number; markdownDescription?: string; description?: string }>;
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
