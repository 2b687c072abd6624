import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { RelayError } from "@tab-relay/shared";
import type { Clock } from "../clock";
import type { KeyOwner, Session, Store } from "../store/types";
import type { Scope } from "./scopes";
import { hashSecret } from "./secrets";

/** The session cookie's name when people reach the relay over plain http. */
export const SESSION_COOKIE = "tab_session";
/**
 * Its name under an https public URL. Browsers keep a `__Host-` cookie only if it is Secure, has `Path=/` and no
 * Domain, and came from a secure origin (RFC 6265bis §4.1.3.2), so no sibling subdomain and no
 * plain-http page can plant or overwrite it; only this name is read then.
 */
export const SECURE_SESSION_COOKIE = "__Host-tab_session";

/** The session cookie of a relay whose pages are served from `publicBase` (its public URL, else where it listens). */
export function sessionCookieName(publicBase: string): string {
  return publicBase.startsWith("https:") ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
}

/**
 * What the console is for: reading conversations, watching agents, managing keys and people. A key holding none of
 * these (an editor's `tab.complete` key, the one most likely to leak) cannot open a session.
 */
export const CONSOLE_SCOPES: readonly Scope[] = ["messages.read", "agents.read", "keys.write", "users.write"];
/** The live socket carries messages (`messages.read`) and agent changes (`agents.read`); it needs one of them. */
export const LIVE_SCOPES: readonly Scope[] = ["messages.read", "agents.read"];
/** How many sessions one key may have live; signing in past it ends the key's oldest, so nobody is locked out. */
export const MAX_SESSIONS_PER_KEY = 10;

/**
 * The counter a session's requests go against: one per key, shared by every session made from it, so signing in
 * again never buys more requests.
 */
export function sessionBucket(keyId: string, label: string): string {
  return `keysession:${keyId}:${label}`;
}
export const CSRF_HEADER = "x-csrf-token";
/** A console sign-in lasts a working week at most; signing out or revoking the key ends it sooner. */
export const SESSION_LIFETIME_MS = 7 * 24 * 3600 * 1000;

export function newSessionToken(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * The CSRF token of a session, derived from the cookie's secret so it need not be stored: a page on another site
 * can make the browser send the cookie, but cannot read this value to send it back in the header.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHash("sha256").update(`csrf:${sessionToken}`).digest("base64url");
}

export function csrfMatches(sessionToken: string, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const expected = Buffer.from(csrfTokenFor(sessionToken));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface ResolvedSession {
  session: Session;
  owner: KeyOwner;
  token: string;
}

/** The live session a cookie names, or the reason there is none (401), or a removed user (403, with the owner). */
export async function resolveSession(
  store: Store,
  clock: Clock,
  token: string,
): Promise<{ resolved?: ResolvedSession; error?: RelayError }> {
  const found = await store.sessions.findByTokenHash(hashSecret(token));
  if (!found || found.session.ended_at !== null || Date.parse(found.session.expires_at) <= clock.now()) {
    return { error: new RelayError("UNAUTHORIZED", "Not signed in, or the session has ended; sign in again") };
  }
  if (found.owner.key.revoked_at !== null) {
    return {
      error: new RelayError("UNAUTHORIZED", "The API key this session was made from has been revoked; sign in again"),
    };
  }
  const resolved = { ...found, token };
  if (found.owner.user.removed_at !== null) {
    return { resolved, error: new RelayError("FORBIDDEN", "Your user was removed from the workspace") };
  }
  return { resolved };
}
