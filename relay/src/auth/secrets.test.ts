import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { hashSecret } from "./secrets";

test("hashSecret gives the digest the database holds: SHA-256 hex of the key's UTF-8, as createHash gave it", () => {
  const secrets = [
    "",
    "tr_live_0123456789abcdefghijklmnopqrstuvwxyz",
    "clé-é-ü-ß-日本-🙂",
    // A lone surrogate is hashed as U+FFFD's bytes by both.
    "key\uD800tail",
    "x".repeat(10_000),
  ];
  for (const secret of secrets) {
    assert.equal(hashSecret(secret), createHash("sha256").update(secret).digest("hex"), JSON.stringify(secret));
  }
  assert.equal(hashSecret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});
