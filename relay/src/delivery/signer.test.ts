import assert from "node:assert/strict";
import { test } from "node:test";
import { newSigningSecret, signWebhook, verifyWebhook } from "@tab-relay/shared";
import { signDelivery } from "./signer";

/** Bodies that stress the UTF-8 step: empty, ASCII, marks, emoji, lone surrogates on both sides, NUL, long. */
const BODIES = [
  "",
  '{"type":"message.created","message":{"text":"hello"}}',
  "café naïve ñ \u0301 日本語 🚀👩‍💻",
  "lone \ud800 high, lone \udfff low, reversed \udc00\ud800, pair \ud83d\ude80",
  "nul \u0000 and \u007f and \u2028",
  "x".repeat(70_000),
  JSON.stringify({ text: "é 🚀", padding: "y".repeat(5_000) }),
];

test("a delivery is signed exactly as shared's signWebhook signs it, and verifies", async () => {
  // More secrets than the key cache holds, signed twice each, so evicted keys are imported again.
  const secrets = Array.from({ length: 300 }, () => newSigningSecret());
  for (const round of [0, 1]) {
    for (const [i, secret] of secrets.entries()) {
      const body = BODIES[(i + round) % BODIES.length] as string;
      const id = `evt_${i}_${round}`;
      const timestamp = 1_790_000_000 + i;
      const signature = signDelivery(secret, id, timestamp, body);
      assert.equal(signature, await signWebhook(secret, id, timestamp, body), `secret ${i}, round ${round}`);
      const headers = { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": signature };
      // verifyWebhook also parses the body, so it checks those bodies that are JSON; the others compare above.
      if (body.startsWith("{")) await verifyWebhook(secret, headers, body, { nowSeconds: timestamp });
    }
  }
  // A secret without its prefix is accepted by both, as in the reference libraries.
  const bare = (secrets[0] as string).slice("whsec_".length);
  assert.equal(signDelivery(bare, "evt_bare", 0, "{}"), await signWebhook(bare, "evt_bare", 0, "{}"));
});

test("a malformed secret or timestamp fails with signWebhook's error", async () => {
  const secret = newSigningSecret();
  for (const [badSecret, timestamp] of [
    ["whsec_not base64!", 1],
    ["whsec_c2hvcnQ=", 1],
    [secret, -1],
    [secret, 1.5],
    [secret, Number.MAX_SAFE_INTEGER + 1],
  ] as const) {
    const expected = await signWebhook(badSecret, "evt_1", timestamp, "{}").then(
      () => assert.fail("signWebhook accepted it"),
      (error: unknown) => error as Error,
    );
    assert.throws(
      () => signDelivery(badSecret, "evt_1", timestamp, "{}"),
      (error: Error) => error.constructor === expected.constructor && error.message === expected.message,
    );
  }
});
