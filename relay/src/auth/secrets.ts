import { hash, randomBytes } from "node:crypto";
import { SECRET_PREFIXES, generateSecret, hasValidChecksum } from "@tab-relay/shared";

/**
 * SHA-256 hex of a secret: what the database keeps instead of the secret. Lookups by hash avoid comparing secrets.
 * Every request with an API key hashes it again (nothing remembers a key). Node's one-shot `crypto.hash` (added in
 * v20.12.0 and v21.7.0, doc/api/crypto.md; a string is hashed as UTF-8, as `Hash.update` does by default) gives the
 * same digest without a Hash object and its stream: half the time of `createHash().update().digest()` per key here.
 */
export function hashSecret(secret: string): string {
  return hash("sha256", secret, "hex");
}

/** A short, non-secret reminder of which key this is: the prefix, four characters, and the checksum's tail. */
export function secretHint(secret: string): string {
  const prefix = secret.startsWith(SECRET_PREFIXES.agentToken) ? SECRET_PREFIXES.agentToken : SECRET_PREFIXES.apiKey;
  return `${secret.slice(0, prefix.length + 4)}…${secret.slice(-4)}`;
}

export function newApiKeySecret(): string {
  return generateSecret(SECRET_PREFIXES.apiKey);
}

export function looksLikeApiKey(token: string): boolean {
  return hasValidChecksum(token, SECRET_PREFIXES.apiKey);
}

/** Random identifiers for rows: a readable type prefix and 16 base32 characters. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(10).toString("base64url").replace(/[-_]/g, "x").slice(0, 16)}`;
}

export function newAgentToken(): string {
  return generateSecret(SECRET_PREFIXES.agentToken);
}

export function looksLikeAgentToken(token: string): boolean {
  return hasValidChecksum(token, SECRET_PREFIXES.agentToken);
}
