/**
 * Standard Webhooks (v1, HMAC-SHA256) signing and verification on WebCrypto, so the same code runs in the
 * relay, in agents and in browsers. Wire format: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.ts.body">`,
 * keyed with the base64-decoded part of a `whsec_` secret.
 */
import { systemClock } from "../clock";

export const SIGNING_SECRET_PREFIX = "whsec_";
/** The Standard Webhooks minimum; a shorter key usually means a truncated or mistyped secret. */
export const SIGNING_SECRET_MIN_BYTES = 24;
export const SIGNING_SECRET_NEW_BYTES = 32;
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

export const SIGNATURE_VERSION = "v1";
/** How many secrets' keys a signer keeps: the relay signs every delivery attempt, and importing a key each time would dominate the cost. */
export const SIGNING_KEY_CACHE_LIMIT = 256;

/**
 * Up to `limit` values by key, for a signer's keys. Insertion order doubles as recency order: a hit is moved to the
 * end, the oldest entry is evicted.
 */
export function recentlyUsed<V>(limit: number): {
  get(key: string): V | undefined;
  set(key: string, value: V): void;
  delete(key: string): void;
} {
  const entries = new Map<string, V>();
  return {
    get(key) {
      const value = entries.get(key);
      if (value !== undefined) {
        entries.delete(key);
        entries.set(key, value);
      }
      return value;
    },
    set(key, value) {
      entries.set(key, value);
      if (entries.size > limit) {
        const oldest = entries.keys().next();
        if (oldest.done !== true) entries.delete(oldest.value);
      }
    },
    delete: (key) => void entries.delete(key),
  };
}

/** A signature's timestamp must be whole non-negative Unix seconds; throws the RangeError signers give otherwise. */
export function checkSigningTimestamp(timestampSeconds: number): void {
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new RangeError("timestampSeconds must be a non-negative integer (unix seconds)");
  }
}

export type WebhookVerificationFailure =
  | "missing_headers"
  | "invalid_timestamp"
  | "timestamp_too_old"
  | "timestamp_too_new"
  | "no_matching_signature"
  | "invalid_secret";

const DEFAULT_MESSAGES: Record<WebhookVerificationFailure, string> = {
  missing_headers: "Missing webhook-id, webhook-timestamp or webhook-signature header",
  invalid_timestamp: "webhook-timestamp is not an integer number of seconds",
  timestamp_too_old: "webhook-timestamp is too old",
  timestamp_too_new: "webhook-timestamp is too far in the future",
  no_matching_signature: "No matching signature found",
  invalid_secret: "Invalid signing secret",
};

/** Thrown for every verification failure; callers branch on `reason`, never on the message. */
export class WebhookVerificationError extends Error {
  readonly reason: WebhookVerificationFailure;

  constructor(reason: WebhookVerificationFailure, message: string = DEFAULT_MESSAGES[reason]) {
    super(message);
    this.name = "WebhookVerificationError";
    this.reason = reason;
  }
}

/** A plain header record (Node's `req.headers`, any casing) or anything with `get(name)`, like fetch `Headers`. */
export type WebhookHeaders =
  Readonly<Record<string, string | readonly string[] | undefined>> | { get(name: string): string | null };

export interface VerifyWebhookOptions {
  /** Current time in seconds; defaults to the system clock. */
  nowSeconds?: number | undefined;
  /** Allowed distance between `webhook-timestamp` and now, in both directions. Default 300. */
  toleranceSeconds?: number | undefined;
}

const BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
// Marked pure so bundles that re-export shared but never touch webhooks (the extension) can drop it.
const BASE64_VALUES = /* @__PURE__ */ (() => {
  const table = new Int16Array(128).fill(-1);
  for (let i = 0; i < BASE64_ALPHABET.length; i++) table[BASE64_ALPHABET.charCodeAt(i)] = i;
  return table;
})();

/** Standard padded base64 (RFC 4648 §4). */
export function base64Encode(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const a = bytes[i] as number;
    const b = bytes[i + 1];
    const c = bytes[i + 2];
    const chunk = (a << 16) | ((b ?? 0) << 8) | (c ?? 0);
    out += BASE64_ALPHABET[(chunk >> 18) & 63];
    out += BASE64_ALPHABET[(chunk >> 12) & 63];
    out += b === undefined ? "=" : BASE64_ALPHABET[(chunk >> 6) & 63];
    out += c === undefined ? "=" : BASE64_ALPHABET[chunk & 63];
  }
  return out;
}

/**
 * Strict standard base64, padded or unpadded; `null` for anything else (URL-safe alphabet, whitespace,
 * stray padding). Permissive decoders turn a typo'd secret into a short, guessable key.
 */
export function base64Decode(text: string): Uint8Array<ArrayBuffer> | null {
  const match = /^([A-Za-z0-9+/]*)(={0,2})$/.exec(text);
  if (match === null) return null;
  const data = match[1] as string;
  const padding = (match[2] as string).length;
  if (data.length % 4 === 1) return null;
  if (padding > 0 && (data.length + padding) % 4 !== 0) return null;
  const out = new Uint8Array(Math.floor((data.length * 3) / 4));
  let buffer = 0;
  let bits = 0;
  let index = 0;
  for (let i = 0; i < data.length; i++) {
    buffer = (buffer << 6) | (BASE64_VALUES[data.charCodeAt(i)] as number);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (buffer >> bits) & 0xff;
    }
  }
  return out;
}

/**
 * The HMAC key inside a `whsec_` secret (the prefix is optional, as in the reference libraries).
 * Throws WebhookVerificationError("invalid_secret") for non-base64 input or a key under 24 bytes;
 * the message never repeats the secret.
 */
export function decodeSigningSecret(secret: string): Uint8Array<ArrayBuffer> {
  const encoded = secret.startsWith(SIGNING_SECRET_PREFIX) ? secret.slice(SIGNING_SECRET_PREFIX.length) : secret;
  const key = base64Decode(encoded);
  if (key === null) {
    throw new WebhookVerificationError(
      "invalid_secret",
      "Signing secret must be whsec_ followed by standard base64 (no spaces, no v1, prefix)",
    );
  }
  if (key.length < SIGNING_SECRET_MIN_BYTES) {
    throw new WebhookVerificationError(
      "invalid_secret",
      `Signing secret decodes to ${key.length} bytes; at least ${SIGNING_SECRET_MIN_BYTES} are required`,
    );
  }
  return key;
}

export function isValidSigningSecret(secret: string): boolean {
  try {
    decodeSigningSecret(secret);
    return true;
  } catch {
    return false;
  }
}

/** A new secret: `whsec_` + padded base64 of 32 random bytes. */
export function newSigningSecret(): string {
  const bytes = new Uint8Array(SIGNING_SECRET_NEW_BYTES);
  crypto.getRandomValues(bytes);
  return SIGNING_SECRET_PREFIX + base64Encode(bytes);
}

// Spelled through `crypto` because Node's type definitions have no global CryptoKey outside the DOM lib.
type HmacKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;
const keyCache = recentlyUsed<Promise<HmacKey>>(SIGNING_KEY_CACHE_LIMIT);

function hmacKey(secret: string): Promise<HmacKey> {
  const cached = keyCache.get(secret);
  if (cached !== undefined) return cached;
  const raw = decodeSigningSecret(secret);
  const imported = crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  keyCache.set(secret, imported);
  imported.catch(() => keyCache.delete(secret));
  return imported;
}

async function hmac(secret: string, id: string, timestamp: string, body: string): Promise<Uint8Array> {
  const key = await hmacKey(secret);
  const content = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, content));
}

/** `v1,<base64 HMAC-SHA256>` of `${id}.${timestampSeconds}.${body}`; sign the exact body string that is sent. */
export async function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): Promise<string> {
  checkSigningTimestamp(timestampSeconds);
  const mac = await hmac(secret, id, String(timestampSeconds), body);
  return `${SIGNATURE_VERSION},${base64Encode(mac)}`;
}

/** Length is public (every v1 MAC is 32 bytes); the content comparison takes the same time wherever they differ. */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

function hasGet(headers: WebhookHeaders): headers is { get(name: string): string | null } {
  return typeof (headers as { get?: unknown }).get === "function";
}

/** All values of a header, whatever the casing of its name in a plain record. */
function headerValues(headers: WebhookHeaders, name: string): string[] {
  if (hasGet(headers)) {
    const value = headers.get(name);
    return value === null ? [] : [value];
  }
  const wanted = name.toLowerCase();
  const values: string[] = [];
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    if (typeof value === "string") values.push(value);
    else values.push(...value);
  }
  return values;
}

/**
 * A single-valued header, looked up case-insensitively; repeated or empty values count as missing rather than
 * guessing which one was signed.
 */
export function getWebhookHeader(headers: WebhookHeaders, name: string): string | undefined {
  const values = headerValues(headers, name);
  return values.length === 1 && values[0] !== "" ? values[0] : undefined;
}

/**
 * Checks a delivery and returns its parsed JSON body (`undefined` for an empty body).
 * `body` must be the raw request body exactly as received: re-serialized JSON does not verify.
 * Signatures other than `v1` in the space-separated list are ignored, so rotation headers carrying
 * several signatures pass when any one matches.
 */
export async function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string,
  options: VerifyWebhookOptions = {},
): Promise<unknown> {
  decodeSigningSecret(secret);
  const id = getWebhookHeader(headers, "webhook-id");
  const timestamp = getWebhookHeader(headers, "webhook-timestamp");
  const signatures = headerValues(headers, "webhook-signature").join(" ").trim();
  if (id === undefined || timestamp === undefined || signatures === "")
    throw new WebhookVerificationError("missing_headers");

  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError("invalid_timestamp");
  const sentAt = Number(timestamp);
  const now = options.nowSeconds ?? Math.floor(systemClock.now() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  if (now - sentAt > tolerance) throw new WebhookVerificationError("timestamp_too_old");
  if (sentAt - now > tolerance) throw new WebhookVerificationError("timestamp_too_new");

  // The header string is what the sender put between the dots, so it is signed as received.
  const expected = await hmac(secret, id, timestamp, body);
  let matched = false;
  for (const entry of signatures.split(/\s+/)) {
    const comma = entry.indexOf(",");
    if (comma === -1 || entry.slice(0, comma) !== SIGNATURE_VERSION) continue;
    const candidate = base64Decode(entry.slice(comma + 1));
    if (candidate !== null && constantTimeEqual(candidate, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError("no_matching_signature");
  return body === "" ? undefined : JSON.parse(body);
}
