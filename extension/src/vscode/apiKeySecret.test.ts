import assert from "node:assert/strict";
import { test } from "node:test";
import type * as vscode from "vscode";
import { ApiKeyStore } from "./apiKeySecret";

const STORED = "svc_ws_0123456789abcdefghijklmnopqrstABCDEF";
const FROM_ENV = "svc_ws_fedcba9876543210zyxwvutsrqponmFEDCBA";

/** SecretStorage as the extension host has it; `shutDown` makes every call fail as VS Code's do once it is closing. */
function secretStorage(initial: Record<string, string> = {}) {
  const values = new Map(Object.entries(initial));
  const state = { shutDown: false };
  const guard = () => {
    if (state.shutDown) throw new Error("Canceled");
  };
  const secrets = {
    get: (key: string) => Promise.resolve().then(() => (guard(), values.get(key))),
    store: (key: string, value: string) => Promise.resolve().then(() => (guard(), void values.set(key, value))),
    delete: (key: string) => Promise.resolve().then(() => (guard(), void values.delete(key))),
    onDidChange: () => ({ dispose: () => undefined }),
  } as unknown as vscode.SecretStorage;
  return { secrets, state };
}

test("the key last read stays known after VS Code starts cancelling secret storage calls on shutdown", async () => {
  const { secrets, state } = secretStorage({ "tabRelay.apiKey": STORED });
  const keys = new ApiKeyStore(secrets, FROM_ENV);
  assert.equal(keys.remembered, undefined, "nothing was read yet");
  assert.equal(await keys.get(), STORED);

  state.shutDown = true;
  await assert.rejects(keys.get(), /Canceled/);
  assert.equal(keys.remembered, STORED);
});

test("the remembered key follows what get() finds: the environment's once the stored one is cleared", async () => {
  const { secrets } = secretStorage({ "tabRelay.apiKey": STORED });
  const keys = new ApiKeyStore(secrets, FROM_ENV);
  await keys.get();
  await keys.clear();
  assert.equal(await keys.get(), FROM_ENV);
  assert.equal(keys.remembered, FROM_ENV);

  const none = new ApiKeyStore(secretStorage().secrets, "");
  assert.equal(await none.get(), undefined);
  assert.equal(none.remembered, undefined);
});
