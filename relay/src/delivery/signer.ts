import { type KeyObject, createHmac, createSecretKey } from "node:crypto";
import {
  SIGNATURE_VERSION,
  SIGNING_KEY_CACHE_LIMIT,
  checkSigningTimestamp,
  decodeSigningSecret,
  recentlyUsed,
} from "@tab-relay/shared";

/**
 * Standard Webhooks v1 signatures for the relay's deliveries, byte for byte those of `signWebhook` in
 * shared/src/webhooks/signing.ts (which stays the reference and what agents verify with), but synchronous.
 *
 * Why not `signWebhook` here: WebCrypto's `subtle.sign` for HMAC runs as an asynchronous crypto job (Node 20,
 * lib/internal/crypto/mac.js `hmacSignVerify` → `jobPromise(() => new HmacJob(kCryptoJobAsync, ...))`), so every
 * delivery paid for a promise, a job handed to the libuv thread pool, a copy of the input and a turn of the event
 * loop to come back; with `TextEncoder` and the JavaScript base64 around it, that was about 7 % of the relay's
 * CPU in the webhook benchmark's profile. One `createHmac` over a string is a few microseconds on the loop.
 */

const keys = recentlyUsed<KeyObject>(SIGNING_KEY_CACHE_LIMIT);

function keyFor(secret: string): KeyObject {
  const cached = keys.get(secret);
  if (cached !== undefined) return cached;
  // Throws WebhookVerificationError("invalid_secret") for a malformed secret, as signWebhook rejects with it.
  const key = createSecretKey(decodeSigningSecret(secret));
  keys.set(secret, key);
  return key;
}

/** `v1,<base64 HMAC-SHA256>` of `${id}.${timestampSeconds}.${body}`, the exact body string that is sent. */
export function signDelivery(secret: string, id: string, timestampSeconds: number, body: string): string {
  checkSigningTimestamp(timestampSeconds);
  // A string is hashed as UTF-8, lone surrogates as U+FFFD, which is what TextEncoder gives signWebhook.
  const mac = createHmac("sha256", keyFor(secret)).update(`${id}.${timestampSeconds}.${body}`, "utf8").digest("base64");
  return `${SIGNATURE_VERSION},${mac}`;
}
