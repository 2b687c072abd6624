const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export const SECRET_PREFIXES = { apiKey: "svc_ws_", agentToken: "svc_agent_" } as const;
export const SECRET_RANDOM_LENGTH = 30;
export const SECRET_CHECKSUM_LENGTH = 6;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE 802.3, as zlib computes it) of an ASCII string. */
export function crc32(text: string): number {
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) crc = (CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** Fixed-width base62 of a non-negative integer, most significant digit first. */
export function toBase62(value: number, width: number): string {
  let out = "";
  let rest = value;
  for (let i = 0; i < width; i++) {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

/** `count` uniformly random base62 characters from the platform CSPRNG (rejection sampling, no modulo bias). */
export function randomBase62(count: number): string {
  let out = "";
  const bytes = new Uint8Array(count * 2);
  while (out.length < count) {
    crypto.getRandomValues(bytes);
    for (const byte of bytes) {
      if (byte < 248 && out.length < count) out += BASE62[byte % 62];
    }
  }
  return out;
}

/**
 * A new secret: prefix + 30 random base62 characters + a 6-character base62 CRC-32 of the random part,
 * so secret scanners can tell a real key from a typo without asking the server (GitHub's token scheme).
 */
export function generateSecret(prefix: string): string {
  const random = randomBase62(SECRET_RANDOM_LENGTH);
  return prefix + random + toBase62(crc32(random), SECRET_CHECKSUM_LENGTH);
}

/** True when `secret` has the prefix, the length, the alphabet and a matching checksum. */
export function hasValidChecksum(secret: string, prefix: string): boolean {
  if (!secret.startsWith(prefix)) return false;
  const body = secret.slice(prefix.length);
  if (body.length !== SECRET_RANDOM_LENGTH + SECRET_CHECKSUM_LENGTH || !/^[0-9A-Za-z]+$/.test(body)) return false;
  const random = body.slice(0, SECRET_RANDOM_LENGTH);
  return toBase62(crc32(random), SECRET_CHECKSUM_LENGTH) === body.slice(SECRET_RANDOM_LENGTH);
}
