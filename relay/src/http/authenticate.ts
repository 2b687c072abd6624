import { RelayError } from "@tab-relay/shared";
import type { Request, RequestHandler } from "express";
import { effectiveScopes } from "../auth/apiKeys";
import type { Scope } from "../auth/scopes";
import { hashSecret, looksLikeApiKey } from "../auth/secrets";
import { CSRF_HEADER, csrfMatches, readCookie, resolveSession, sessionCookieName } from "../auth/sessions";
import type { Clock } from "../clock";
import type { Links } from "../links";
import type { KeyOwner, Store } from "../store/types";

const BEARER = /^Bearer ([^\s]+)$/;
/** A header with no key in it: empty, or `Bearer` alone (what `Bearer $KEY` becomes when KEY is unset). */
const NO_KEY = /^(?:Bearer)?\s*$/i;

/** The token of an `Authorization: Bearer <token>` header: exactly that form, one space, nothing else. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** How a key that cannot be used is refused, in the same words wherever it is presented (a header, the console's sign-in). */
export const KEY_REFUSALS = {
  unknown: "API key not recognised: it is not a key of this relay (check it was copied whole)",
  revoked: "This API key has been revoked",
} as const;

function headerValue(value: string | string[] | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/**
 * Resolves the API key in `Authorization: Bearer <key>`. A failure is recorded on the request rather than
 * thrown, so the rate limiter still counts (and answers headers for) unauthenticated attempts.
 */
export function createAuthenticate(deps: { store: Store; clock: Clock; links: Pick<Links, "base"> }): RequestHandler {
  // A store that remembers owners hands out the same frozen owner while nothing changed, so its scopes are worked out once.
  const scopesOf = new WeakMap<KeyOwner, ReadonlySet<Scope>>();
  const scopes = (owner: KeyOwner) => {
    let known = scopesOf.get(owner);
    if (!known) {
      known = effectiveScopes(owner.key, owner.user);
      if (Object.isFrozen(owner)) scopesOf.set(owner, known);
    }
    return known;
  };
  const settle = (req: Request, owner: KeyOwner | undefined) => {
    if (!owner) {
      req.authError = new RelayError("UNAUTHORIZED", KEY_REFUSALS.unknown);
    } else if (owner.key.revoked_at !== null) {
      req.authError = new RelayError("UNAUTHORIZED", KEY_REFUSALS.revoked);
    } else {
      req.caller = { ...owner, scopes: scopes(owner) };
      if (owner.user.removed_at !== null) {
        req.authError = new RelayError("FORBIDDEN", "The user this API key belongs to was removed from the workspace");
      }
    }
  };
  const withSession = async (req: Request, sessionToken: string) => {
    const { resolved, error } = await resolveSession(deps.store, deps.clock, sessionToken);
    if (resolved) {
      req.caller = { ...resolved.owner, scopes: effectiveScopes(resolved.owner.key, resolved.owner.user) };
      req.session = { id: resolved.session.id, token: sessionToken };
    }
    if (error) req.authError = error;
    // A cookie arrives with every request the browser makes, from any site; only the console can read the CSRF token.
    if (!error && !SAFE_METHODS.has(req.method) && !csrfMatches(sessionToken, headerValue(req.headers[CSRF_HEADER]))) {
      req.authError = new RelayError("FORBIDDEN", "Missing or wrong X-CSRF-Token header for this session");
    }
  };
  return function authenticate(req, _res, next) {
    const header = req.headers.authorization;
    const sessionToken =
      header === undefined ? readCookie(req.headers.cookie, sessionCookieName(deps.links.base())) : undefined;
    if (sessionToken !== undefined) return withSession(req, sessionToken).then(() => next());
    if (header === undefined) {
      req.authError = new RelayError(
        "UNAUTHORIZED",
        "Missing API key: there is no Authorization header; send `Authorization: Bearer <API key>`",
      );
      return next();
    }
    if (NO_KEY.test(header)) {
      req.authError = new RelayError(
        "UNAUTHORIZED",
        "Missing API key: the Authorization header holds none (is the variable meant to hold it empty?); send `Authorization: Bearer <API key>`",
      );
      return next();
    }
    const token = bearerToken(header);
    if (token === undefined) {
      req.authError = new RelayError("UNAUTHORIZED", "Authorization header must be exactly `Bearer <API key>`");
      return next();
    }
    // The checksum rejects typos and foreign tokens without touching the database. An owner the store remembers
    // comes back at once, and the request goes on without a promise and a turn of the microtask queue.
    const found = looksLikeApiKey(token) ? deps.store.apiKeys.findOwnerByHash(hashSecret(token)) : undefined;
    if (found instanceof Promise)
      return found.then((owner) => {
        settle(req, owner);
        next();
      });
    settle(req, found);
    next();
  };
}

/** Raises the authentication failure recorded earlier, once the request has been counted. */
export const requireCaller: RequestHandler = function requireCaller(req, _res, next) {
  next(req.authError);
};

export function requireScope(scope: Scope): RequestHandler {
  return function checkScope(req, _res, next) {
    if (!req.caller?.scopes.has(scope)) {
      return next(new RelayError("FORBIDDEN", `This API key lacks the scope ${scope}`));
    }
    next();
  };
}
