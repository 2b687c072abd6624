import assert from "node:assert/strict";
import { test } from "node:test";
import type * as vscode from "vscode";
import { ApiKeyStore } from "./apiKeySecret";

const STORED = "svc_ws_0123456789abcdefghijklmnopqrstABCDEF";
const FROM_ENV = "svc_ws_fedcba9876543210zyxwvutsrqponmFEDCBA";

/** SecretStorage as the extension host has it; `shutDown` makes every call fail as VS Code's do once it is closing. */
function secretStorage(initial: Record<string, string> = {}) {
  const values = new Map(Object.entries(initial));
  const state = { shutDown: false, reads: 0 };
  const guard = () => {
    if (state.shutDown) throw new Error("Canceled");
  };
  const listeners = new Set<(event: { key: string }) => void>();
  const changed = (key: string) => {
    for (const listener of listeners) listener({ key });
  };
  const secrets = {
    get: (key: string) => Promise.resolve().then(() => (guard(), state.reads++, values.get(key))),
    store: (key: string, value: string) =>
      Promise.resolve().then(() => (guard(), values.set(key, value), changed(key))),
    delete: (key: string) => Promise.resolve().then(() => (guard(), values.delete(key), changed(key))),
    onDidChange: (listener: (event: { key: string }) => void) => {
      listeners.add(listener);
      return { dispose: () => listeners.delete(listener) };
    },
  } as unknown as vscode.SecretStorage;
  /** Another window changes the stored key: VS Code fires onDidChange here too (apiKeySecret.ts). */
  const changedElsewhere = (key: string, value: string | undefined) => {
    if (value === undefined) values.delete(key);
    else values.set(key, value);
    changed(key);
  };
  return { secrets, state, changedElsewhere, listeners };
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

test("current() reads secret storage once and holds the key until it changes there, in this window or another", async () => {
  const { secrets, state, changedElsewhere } = secretStorage({ "tabRelay.apiKey": STORED });
  const keys = new ApiKeyStore(secrets, FROM_ENV);
  assert.equal(await keys.current(), STORED);
  assert.equal(await keys.current(), STORED);
  assert.equal(state.reads, 1, "one read for two pauses");

  changedElsewhere("some.other.secret", "x");
  assert.equal(await keys.current(), STORED);
  assert.equal(state.reads, 1, "another secret's change keeps the key held");

  changedElsewhere("tabRelay.apiKey", "svc_ws_fromanotherwindow000000000000000000");
  assert.equal(await keys.current(), "svc_ws_fromanotherwindow000000000000000000");
  changedElsewhere("tabRelay.apiKey", undefined);
  assert.equal(await keys.current(), FROM_ENV, "with the stored key deleted, the environment's");

  await keys.set(STORED);
  assert.equal(await keys.current(), STORED);
  await keys.clear();
  assert.equal(await keys.current(), FROM_ENV);
});

test("a failed read is not held: the next current() reads again; dispose stops watching", async () => {
  const { secrets, state, listeners } = secretStorage({ "tabRelay.apiKey": STORED });
  const keys = new ApiKeyStore(secrets, FROM_ENV);
  state.shutDown = true;
  await assert.rejects(keys.current(), /Canceled/);
  state.shutDown = false;
  assert.equal(await keys.current(), STORED);

  assert.equal(listeners.size, 1);
  keys.dispose();
  assert.equal(listeners.size, 0);
});
