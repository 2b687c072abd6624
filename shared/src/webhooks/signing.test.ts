import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
// The reference implementation, hoisted from the test workspace's devDependencies.
import { Webhook } from "standardwebhooks";
import type { WebhookHeaders, WebhookVerificationFailure } from "./signing";
import {
  WebhookVerificationError,
  base64Decode,
  base64Encode,
  decodeSigningSecret,
  isValidSigningSecret,
  newSigningSecret,
  signWebhook,
  verifyWebhook,
} from "./signing";

// Official vector: standard-webhooks libraries/javascript/src/webhook.test.ts and libraries/python/tests/test_webhooks.py.
const OFFICIAL = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const OTHER_SIGNATURE = "Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";

// Derived vectors (computed with Python hmac and Node createHmac).
const DERIVED = [
  {
    name: 'the Standard Webhooks specification\'s example payload, minified (spec/standard-webhooks.md, "Signature scheme")',
    secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    id: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
    timestamp: 1674087231,
    body: '{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52-5198-4599-803e-771906343485"}}',
    signature: "v1,ARw42xaAApl/nxRo+iPGYwSaMQaOwMo2eyH5JBRA+bQ=",
  },
  {
    name: "a 32-byte key 0x01..0x20",
    secret: "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
    id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
    timestamp: 1614265330,
    body: '{"test": 2432232314}',
    signature: "v1,frM35V2Z51bxs4v81I6TpLnscXkhXtKLP/7WPYVyj3A=",
  },
  {
    name: "a non-ASCII body, signed as UTF-8",
    secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
    timestamp: 1614265330,
    body: '{"text":"héllo 👋"}',
    signature: "v1,mF3q1GZpstYd3iSwftLFyonQPG3DJ0pGH4OtSFJL+Vs=",
  },
];

function officialHeaders(signature: string, timestamp: number = OFFICIAL.timestamp): Record<string, string> {
  return { "webhook-id": OFFICIAL.id, "webhook-timestamp": String(timestamp), "webhook-signature": signature };
}

async function rejects(promise: Promise<unknown>, reason: WebhookVerificationFailure): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof WebhookVerificationError, `expected WebhookVerificationError, got ${String(error)}`);
    assert.equal(error.reason, reason);
    return true;
  });
}

/** Changes the first base64 character of the MAC, whose bits are all significant. */
function flipFirstMacCharacter(signature: string): string {
  return `v1,${signature[3] === "A" ? "B" : "A"}${signature.slice(4)}`;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

describe("signWebhook", () => {
  test("reproduces the official Standard Webhooks test vector", async () => {
    assert.equal(
      await signWebhook(OFFICIAL.secret, OFFICIAL.id, OFFICIAL.timestamp, OFFICIAL.body),
      OFFICIAL.signature,
    );
  });

  test("gives the same signature whether or not the secret carries the whsec_ prefix", async () => {
    const bare = OFFICIAL.secret.slice("whsec_".length);
    assert.equal(await signWebhook(bare, OFFICIAL.id, OFFICIAL.timestamp, OFFICIAL.body), OFFICIAL.signature);
  });

  for (const vector of DERIVED) {
    test(`reproduces the derived vector for ${vector.name}`, async () => {
      assert.equal(await signWebhook(vector.secret, vector.id, vector.timestamp, vector.body), vector.signature);
    });
  }

  test("changes when any of id, timestamp or body changes", async () => {
    const base = await signWebhook(OFFICIAL.secret, OFFICIAL.id, OFFICIAL.timestamp, OFFICIAL.body);
    assert.notEqual(await signWebhook(OFFICIAL.secret, `${OFFICIAL.id}x`, OFFICIAL.timestamp, OFFICIAL.body), base);
    assert.notEqual(await signWebhook(OFFICIAL.secret, OFFICIAL.id, OFFICIAL.timestamp + 1, OFFICIAL.body), base);
    assert.notEqual(await signWebhook(OFFICIAL.secret, OFFICIAL.id, OFFICIAL.timestamp, '{"test":2432232314}'), base);
  });

  test("rejects a timestamp that is not a non-negative integer", async () => {
    await assert.rejects(signWebhook(OFFICIAL.secret, OFFICIAL.id, 1614265330.5, OFFICIAL.body), RangeError);
    await assert.rejects(signWebhook(OFFICIAL.secret, OFFICIAL.id, -1, OFFICIAL.body), RangeError);
    await assert.rejects(signWebhook(OFFICIAL.secret, OFFICIAL.id, Number.NaN, OFFICIAL.body), RangeError);
  });

  test("stays correct after more secrets than the key cache holds have been used", async () => {
    const secrets = Array.from({ length: 300 }, () => newSigningSecret());
    const signatures = await Promise.all(secrets.map((secret) => signWebhook(secret, "msg_1", 1700000000, "{}")));
    assert.equal(new Set(signatures).size, secrets.length);
    for (const index of [0, 150, 299]) {
      const secret = secrets[index] as string;
      const reference = new Webhook(secret).sign("msg_1", new Date(1700000000 * 1000), "{}");
      assert.equal(await signWebhook(secret, "msg_1", 1700000000, "{}"), reference);
    }
  });
});

describe("verifyWebhook with the official vector", () => {
  const at = { nowSeconds: OFFICIAL.timestamp };

  test("accepts the official signature and returns the parsed body", async () => {
    assert.deepEqual(await verifyWebhook(OFFICIAL.secret, officialHeaders(OFFICIAL.signature), OFFICIAL.body, at), {
      test: 2432232314,
    });
  });

  test("accepts the secret with and without the whsec_ prefix", async () => {
    const bare = OFFICIAL.secret.slice("whsec_".length);
    assert.deepEqual(await verifyWebhook(bare, officialHeaders(OFFICIAL.signature), OFFICIAL.body, at), {
      test: 2432232314,
    });
  });

  const negatives: Array<[string, string]> = [
    ["the last character changed", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="],
    ["garbage after v1,", "v1,dawfeoifkpqwoekfpqoekf"],
    ["the first 8 characters of the valid header", OFFICIAL.signature.slice(0, 8)],
    ["v1, alone", "v1,"],
    ["the valid MAC under another version tag", `v2,${OFFICIAL.signature.slice(3)}`],
    ["the valid MAC under the asymmetric tag", `v1a,${OFFICIAL.signature.slice(3)}`],
    ["the valid MAC without a version tag", OFFICIAL.signature.slice(3)],
  ];
  for (const [name, signature] of negatives) {
    test(`rejects ${name}`, async () => {
      await rejects(
        verifyWebhook(OFFICIAL.secret, officialHeaders(signature), OFFICIAL.body, at),
        "no_matching_signature",
      );
    });
  }

  test("accepts a multi-signature header when any v1 entry matches, skipping other versions", async () => {
    const header = `v1,${OTHER_SIGNATURE} v2,${OTHER_SIGNATURE} ${OFFICIAL.signature} v1,${OTHER_SIGNATURE}`;
    assert.deepEqual(await verifyWebhook(OFFICIAL.secret, officialHeaders(header), OFFICIAL.body, at), {
      test: 2432232314,
    });
  });

  test("rejects a tampered body, even a single added space", async () => {
    await rejects(
      verifyWebhook(OFFICIAL.secret, officialHeaders(OFFICIAL.signature), '{"test":  2432232314}', at),
      "no_matching_signature",
    );
  });

  test("rejects the right signature under a different secret", async () => {
    await rejects(
      verifyWebhook(newSigningSecret(), officialHeaders(OFFICIAL.signature), OFFICIAL.body, at),
      "no_matching_signature",
    );
  });

  test("accepts timestamps up to 300 s either side of now and rejects 301 s", async () => {
    const signature = OFFICIAL.signature;
    await verifyWebhook(OFFICIAL.secret, officialHeaders(signature), OFFICIAL.body, {
      nowSeconds: OFFICIAL.timestamp + 300,
    });
    await verifyWebhook(OFFICIAL.secret, officialHeaders(signature), OFFICIAL.body, {
      nowSeconds: OFFICIAL.timestamp - 300,
    });
    await rejects(
      verifyWebhook(OFFICIAL.secret, officialHeaders(signature), OFFICIAL.body, {
        nowSeconds: OFFICIAL.timestamp + 301,
      }),
      "timestamp_too_old",
    );
    await rejects(
      verifyWebhook(OFFICIAL.secret, officialHeaders(signature), OFFICIAL.body, {
        nowSeconds: OFFICIAL.timestamp - 301,
      }),
      "timestamp_too_new",
    );
  });

  test("applies a custom tolerance", async () => {
    const headers = officialHeaders(OFFICIAL.signature);
    await verifyWebhook(OFFICIAL.secret, headers, OFFICIAL.body, {
      nowSeconds: OFFICIAL.timestamp + 3600,
      toleranceSeconds: 3600,
    });
    await rejects(
      verifyWebhook(OFFICIAL.secret, headers, OFFICIAL.body, {
        nowSeconds: OFFICIAL.timestamp + 11,
        toleranceSeconds: 10,
      }),
      "timestamp_too_old",
    );
  });
});

describe("verifyWebhook against the current clock", () => {
  test("rejects a signature made 301 s in the past or the future", async () => {
    for (const [offset, reason] of [
      [-301, "timestamp_too_old"],
      [301, "timestamp_too_new"],
    ] as const) {
      const timestamp = nowSeconds() + offset;
      const signature = await signWebhook(OFFICIAL.secret, OFFICIAL.id, timestamp, OFFICIAL.body);
      await rejects(verifyWebhook(OFFICIAL.secret, officialHeaders(signature, timestamp), OFFICIAL.body), reason);
    }
  });

  test("accepts a fresh signature without an explicit clock", async () => {
    const timestamp = nowSeconds();
    const signature = await signWebhook(OFFICIAL.secret, OFFICIAL.id, timestamp, OFFICIAL.body);
    assert.deepEqual(await verifyWebhook(OFFICIAL.secret, officialHeaders(signature, timestamp), OFFICIAL.body), {
      test: 2432232314,
    });
  });
});

describe("verifyWebhook derived vectors", () => {
  for (const vector of DERIVED) {
    test(`accepts the derived vector for ${vector.name}`, async () => {
      const headers = {
        "webhook-id": vector.id,
        "webhook-timestamp": String(vector.timestamp),
        "webhook-signature": vector.signature,
      };
      assert.deepEqual(
        await verifyWebhook(vector.secret, headers, vector.body, { nowSeconds: vector.timestamp }),
        JSON.parse(vector.body),
      );
    });
  }

  test("accepts a rotation header signed with the old and the new key, under either key", async () => {
    const rotation = DERIVED[1];
    assert.ok(rotation);
    const header = `v1,frM35V2Z51bxs4v81I6TpLnscXkhXtKLP/7WPYVyj3A= ${OFFICIAL.signature}`;
    const headers = officialHeaders(header);
    const at = { nowSeconds: OFFICIAL.timestamp };
    await verifyWebhook(rotation.secret, headers, OFFICIAL.body, at);
    await verifyWebhook(OFFICIAL.secret, headers, OFFICIAL.body, at);
  });
});

describe("verifyWebhook headers", () => {
  const at = { nowSeconds: OFFICIAL.timestamp };

  for (const missing of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    test(`rejects a delivery without ${missing}`, async () => {
      const headers: Record<string, string> = officialHeaders(OFFICIAL.signature);
      delete headers[missing];
      await rejects(verifyWebhook(OFFICIAL.secret, headers, OFFICIAL.body, at), "missing_headers");
    });
  }

  test("treats an empty or repeated webhook-id as missing", async () => {
    await rejects(
      verifyWebhook(OFFICIAL.secret, { ...officialHeaders(OFFICIAL.signature), "webhook-id": "" }, OFFICIAL.body, at),
      "missing_headers",
    );
    const repeated: WebhookHeaders = {
      ...officialHeaders(OFFICIAL.signature),
      "webhook-id": [OFFICIAL.id, "msg_other"],
    };
    await rejects(verifyWebhook(OFFICIAL.secret, repeated, OFFICIAL.body, at), "missing_headers");
  });

  for (const timestamp of ["1614265330abc", "-1614265330", "1614265330.0", " 1614265330", "16142653301234567890"]) {
    test(`rejects the non-integer timestamp ${JSON.stringify(timestamp)}`, async () => {
      const headers = { ...officialHeaders(OFFICIAL.signature), "webhook-timestamp": timestamp };
      await rejects(verifyWebhook(OFFICIAL.secret, headers, OFFICIAL.body, at), "invalid_timestamp");
    });
  }

  test("looks header names up case-insensitively in a plain record", async () => {
    const headers = {
      "Webhook-Id": OFFICIAL.id,
      "WEBHOOK-TIMESTAMP": String(OFFICIAL.timestamp),
      "webhook-Signature": OFFICIAL.signature,
    };
    assert.deepEqual(await verifyWebhook(OFFICIAL.secret, headers, OFFICIAL.body, at), { test: 2432232314 });
  });

  test("accepts a fetch Headers object", async () => {
    const headers = new Headers(officialHeaders(OFFICIAL.signature));
    assert.deepEqual(await verifyWebhook(OFFICIAL.secret, headers, OFFICIAL.body, at), { test: 2432232314 });
  });

  test("treats repeated webhook-signature values as one space-separated list", async () => {
    const headers: WebhookHeaders = {
      ...officialHeaders(""),
      "webhook-signature": [`v1,${OTHER_SIGNATURE}`, OFFICIAL.signature],
    };
    assert.deepEqual(await verifyWebhook(OFFICIAL.secret, headers, OFFICIAL.body, at), { test: 2432232314 });
  });

  test("returns undefined for a correctly signed empty body", async () => {
    const signature = await signWebhook(OFFICIAL.secret, OFFICIAL.id, OFFICIAL.timestamp, "");
    assert.equal(await verifyWebhook(OFFICIAL.secret, officialHeaders(signature), "", at), undefined);
  });
});

describe("signing secrets", () => {
  const wrong: Array<[string, string]> = [
    ["a key of 16 bytes", `whsec_${Buffer.alloc(16, 7).toString("base64")}`],
    ["a key of 23 bytes", `whsec_${Buffer.alloc(23, 7).toString("base64")}`],
    ["punctuation", "whsec_!!!!"],
    ["an empty secret", ""],
    ["the prefix alone", "whsec_"],
    ["a pasted signature header", "v1,whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    ["a URL-safe base64 key", `whsec_${Buffer.alloc(32, 0xfb).toString("base64url")}`],
    ["a trailing newline", `${OFFICIAL.secret}\n`],
    ["stray padding", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw="],
  ];
  for (const [name, secret] of wrong) {
    test(`rejects ${name} when signing, verifying and checking`, async () => {
      assert.equal(isValidSigningSecret(secret), false);
      assert.throws(() => decodeSigningSecret(secret), WebhookVerificationError);
      await rejects(signWebhook(secret, OFFICIAL.id, OFFICIAL.timestamp, OFFICIAL.body), "invalid_secret");
      await rejects(
        verifyWebhook(secret, officialHeaders(OFFICIAL.signature), OFFICIAL.body, { nowSeconds: OFFICIAL.timestamp }),
        "invalid_secret",
      );
    });
  }

  test("never repeats the secret in the error message", () => {
    const secret = `whsec_${Buffer.alloc(16, 9).toString("base64")}`;
    assert.throws(
      () => decodeSigningSecret(secret),
      (error: Error) => !error.message.includes(secret.slice(6)),
    );
  });

  test("accepts a 24-byte key, padded or unpadded", () => {
    assert.equal(decodeSigningSecret(OFFICIAL.secret).length, 24);
    const key = Buffer.alloc(25, 3);
    assert.deepEqual(Buffer.from(decodeSigningSecret(`whsec_${key.toString("base64")}`)), key);
    assert.deepEqual(Buffer.from(decodeSigningSecret(`whsec_${key.toString("base64").replace(/=+$/, "")}`)), key);
  });

  test("newSigningSecret gives whsec_ plus padded base64 of 32 random bytes, different each time", () => {
    const secret = newSigningSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(decodeSigningSecret(secret).length, 32);
    assert.notEqual(newSigningSecret(), secret);
  });
});

describe("base64", () => {
  const rfc4648: Array<[string, string]> = [
    ["", ""],
    ["f", "Zg=="],
    ["fo", "Zm8="],
    ["foo", "Zm9v"],
    ["foob", "Zm9vYg=="],
    ["fooba", "Zm9vYmE="],
    ["foobar", "Zm9vYmFy"],
  ];
  for (const [plain, encoded] of rfc4648) {
    test(`encodes and decodes the RFC 4648 vector ${JSON.stringify(plain)}`, () => {
      const bytes = new TextEncoder().encode(plain);
      assert.equal(base64Encode(bytes), encoded);
      assert.deepEqual(base64Decode(encoded), bytes);
    });
  }

  test("matches Node's Buffer for random bytes of every length up to 70", () => {
    for (let length = 0; length <= 70; length++) {
      const bytes = new Uint8Array(randomBytes(length));
      const expected = Buffer.from(bytes).toString("base64");
      assert.equal(base64Encode(bytes), expected);
      assert.deepEqual(base64Decode(expected), bytes);
      assert.deepEqual(base64Decode(expected.replace(/=+$/, "")), bytes);
    }
  });

  for (const malformed of ["A", "Zg=", "Zg===", "Zm9v=", "Zm 9v", "Zm9v\n", "Zm-_", "=Zg="]) {
    test(`refuses the malformed input ${JSON.stringify(malformed)}`, () => {
      assert.equal(base64Decode(malformed), null);
    });
  }
});

describe("interoperability with the standardwebhooks reference library", () => {
  const bodies = [
    '{"test": 2432232314}',
    '{"text":"héllo 👋","n":[1,2,3]}',
    JSON.stringify({ type: "ping", nested: { a: "b.c.d" } }),
  ];

  for (const body of bodies) {
    test(`the reference library verifies our signature over ${JSON.stringify(body).slice(0, 40)}`, async () => {
      const secret = newSigningSecret();
      const timestamp = nowSeconds();
      const signature = await signWebhook(secret, "msg_interop", timestamp, body);
      const headers = {
        "webhook-id": "msg_interop",
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signature,
      };
      assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    });

    test(`we verify the reference library's signature over ${JSON.stringify(body).slice(0, 40)}`, async () => {
      const secret = newSigningSecret();
      const timestamp = nowSeconds();
      const signature = new Webhook(secret).sign("msg_interop", new Date(timestamp * 1000), body);
      const headers = {
        "webhook-id": "msg_interop",
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signature,
      };
      assert.deepEqual(await verifyWebhook(secret, headers, body), JSON.parse(body));
    });
  }

  test("the reference library and we sign an empty body identically", async () => {
    const secret = newSigningSecret();
    assert.equal(
      await signWebhook(secret, "msg_empty", 1700000000, ""),
      new Webhook(secret).sign("msg_empty", new Date(1700000000 * 1000), ""),
    );
  });

  test("the reference library and we agree on the official vector and reject the same tampering", async () => {
    const reference = new Webhook(OFFICIAL.secret);
    assert.equal(reference.sign(OFFICIAL.id, new Date(OFFICIAL.timestamp * 1000), OFFICIAL.body), OFFICIAL.signature);
    const timestamp = nowSeconds();
    const signature = reference.sign(OFFICIAL.id, new Date(timestamp * 1000), OFFICIAL.body);
    const tampered = {
      "webhook-id": OFFICIAL.id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": flipFirstMacCharacter(signature),
    };
    assert.throws(() => reference.verify(OFFICIAL.body, tampered));
    await rejects(verifyWebhook(OFFICIAL.secret, tampered, OFFICIAL.body), "no_matching_signature");
  });
});
