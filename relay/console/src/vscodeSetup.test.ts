import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { installLine, SET_API_KEY_COMMAND, setupLine } from "./vscodeSetup";

describe("the console's lines for VS Code", () => {
  test("the install line downloads the relay's own package and installs that file", () => {
    assert.equal(
      installLine("http://127.0.0.1:8787"),
      "curl -fsSLo tab-relay.vsix http://127.0.0.1:8787/downloads/tab-relay.vsix && code --install-extension tab-relay.vsix",
    );
    assert.match(
      installLine("https://relay.example.com"),
      / https:\/\/relay\.example\.com\/downloads\/tab-relay\.vsix /,
    );
  });

  test("the settings line is settings.json's two entries, quoted as JSON", () => {
    assert.equal(
      setupLine("http://h:1", 'a"b'),
      '"tabRelay.relayUrl": "http://h:1", "tabRelay.workspaceSlug": "a\\"b"',
    );
    assert.deepEqual(JSON.parse(`{${setupLine("http://h:1", "acme")}}`), {
      "tabRelay.relayUrl": "http://h:1",
      "tabRelay.workspaceSlug": "acme",
    });
  });

  test("the key command is the title the palette shows for tabRelay.setApiKey", () => {
    const manifest = JSON.parse(readFileSync(new URL("../../../extension/package.json", import.meta.url), "utf8")) as {
      contributes: { commands: Array<{ command: string; title: string; category?: string }> };
    };
    const command = manifest.contributes.commands.find(({ command }) => command === "tabRelay.setApiKey");
    assert.ok(command);
    assert.equal(`${command.category}: ${command.title.replace(/…$/, "")}`, SET_API_KEY_COMMAND);
  });
});
