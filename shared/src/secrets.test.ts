import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  SECRET_CHECKSUM_LENGTH,
  SECRET_PREFIXES,
  SECRET_RANDOM_LENGTH,
  crc32,
  generateSecret,
  hasValidChecksum,
  randomBase62,
  toBase62,
} from "./secrets";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

function fromBase62(text: string): number {
  let value = 0;
  for (const char of text) value = value * 62 + ALPHABET.indexOf(char);
  return value;
}

describe("crc32", () => {
  test("matches the standard check value and the empty string", () => {
    assert.equal(crc32("123456789"), 0xcbf43926);
    assert.equal(crc32(""), 0);
    assert.equal(crc32("The quick brown fox jumps over the lazy dog"), 0x414fa339);
  });
});

describe("toBase62", () => {
  test("is fixed-width, most significant digit first", () => {
    assert.equal(toBase62(0, 6), "000000");
    assert.equal(toBase62(61, 2), "0z");
    assert.equal(toBase62(62, 2), "10");
    assert.equal(toBase62(62 * 62 - 1, 2), "zz");
  });

  test("six digits hold every 32-bit checksum, and read back to the same number", () => {
    for (const value of [0, 1, 0x7fffffff, 0xcbf43926, 0xffffffff]) {
      const text = toBase62(value, SECRET_CHECKSUM_LENGTH);
      assert.equal(text.length, 6);
      assert.equal(fromBase62(text), value);
    }
  });
});

describe("randomBase62", () => {
  test("gives the requested number of base62 characters, differently each time", () => {
    const a = randomBase62(64);
    assert.match(a, /^[0-9A-Za-z]{64}$/);
    assert.notEqual(randomBase62(64), a);
    assert.equal(randomBase62(0), "");
  });
});

describe("generateSecret and hasValidChecksum", () => {
  for (const [kind, prefix] of Object.entries(SECRET_PREFIXES)) {
    test(`a new ${kind} has its prefix, 30 random + 6 checksum characters, and a valid checksum`, () => {
      const secret = generateSecret(prefix);
      assert.ok(secret.startsWith(prefix));
      assert.equal(secret.length, prefix.length + SECRET_RANDOM_LENGTH + SECRET_CHECKSUM_LENGTH);
      assert.equal(SECRET_RANDOM_LENGTH + SECRET_CHECKSUM_LENGTH, 36);
      const body = secret.slice(prefix.length);
      assert.match(body, /^[0-9A-Za-z]{36}$/);
      assert.equal(
        fromBase62(body.slice(30)),
        crc32(body.slice(0, 30)),
        "the last six characters are the CRC-32 of the first thirty",
      );
      assert.equal(hasValidChecksum(secret, prefix), true);
    });
  }

  test("the API key prefix is svc_ws_ and the agent token prefix svc_agent_, as docs/api.md documents them", () => {
    assert.deepEqual({ ...SECRET_PREFIXES }, { apiKey: "svc_ws_", agentToken: "svc_agent_" });
  });

  test("secrets do not repeat", () => {
    const secrets = new Set(Array.from({ length: 200 }, () => generateSecret(SECRET_PREFIXES.apiKey)));
    assert.equal(secrets.size, 200);
  });

  test("changing any one character of the random part or the checksum fails the check", () => {
    const prefix = SECRET_PREFIXES.apiKey;
    const secret = generateSecret(prefix);
    for (let i = prefix.length; i < secret.length; i++) {
      const original = secret[i] ?? "";
      const replacement = ALPHABET[(ALPHABET.indexOf(original) + 1) % ALPHABET.length] ?? "";
      const typo = secret.slice(0, i) + replacement + secret.slice(i + 1);
      assert.equal(hasValidChecksum(typo, prefix), false, `a change at position ${i} went unnoticed`);
    }
  });

  test("a wrong prefix, a wrong length or a character outside base62 fails the check", () => {
    const secret = generateSecret(SECRET_PREFIXES.apiKey);
    assert.equal(hasValidChecksum(secret, SECRET_PREFIXES.agentToken), false);
    assert.equal(hasValidChecksum(secret.replace("svc_ws_", "svc_wx_"), SECRET_PREFIXES.apiKey), false);
    assert.equal(hasValidChecksum(secret.slice(0, -1), SECRET_PREFIXES.apiKey), false);
    assert.equal(hasValidChecksum(`${secret}0`, SECRET_PREFIXES.apiKey), false);
    const random = "_".repeat(SECRET_RANDOM_LENGTH);
    assert.equal(hasValidChecksum(`svc_ws_${random}${toBase62(crc32(random), 6)}`, SECRET_PREFIXES.apiKey), false);
  });
});
