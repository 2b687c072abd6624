import { randomBytes } from "node:crypto";

/**
 * Ids for requests and completions: a random per-process prefix and a counter. Unique across relays and
 * restarts, and cheap enough for every request (no system randomness per id).
 */
export function createIdSequence(prefix: string): () => string {
  const base = `${prefix}${randomBytes(6).toString("base64url")}`;
  let counter = 0;
  return () => `${base}${(++counter).toString(36)}`;
}
