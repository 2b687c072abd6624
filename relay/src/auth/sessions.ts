import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { RelayError } from "@tab-relay/shared";
import type { Clock } from "../clock";
import type { KeyOwner, Session, Store } from "../store/types";
import { hashSecret } from "./secrets";

export const SESSION_COOKIE = "tab_session";
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
    return { error: new RelayError("UNAUTHORIZED", "The API key this session was made from has been revoked; sign in again") };
  }
  const resolved = { ...found, token };
  if (found.owner.user.removed_at !== null) {
    return { resolved, error: new RelayError("FORBIDDEN", "Your user was removed from the workspace") };
  }
  return { resolved };
}
