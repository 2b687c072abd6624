import { type Api, RelayError } from "@tab-relay/shared";
import { type RequestHandler, type Response, Router } from "express";
import { z } from "zod";
import type { Audit, AuditActor } from "../audit/record";
import type { SessionsOf } from "../bus/types";
import { effectiveScopes } from "../auth/apiKeys";
import { hashSecret, looksLikeApiKey } from "../auth/secrets";
import {
  CONSOLE_SCOPES,
  MAX_SESSIONS_PER_KEY,
  SESSION_LIFETIME_MS,
  csrfTokenFor,
  newSessionToken,
  sessionCookieName,
} from "../auth/sessions";
import type { Clock } from "../clock";
import { KEY_REFUSALS } from "../http/authenticate";
import { parseWith } from "../http/body";
import type { Caller } from "../http/context";
import { named } from "../http/requestContext";
import type { Links } from "../links";
import type { Logger } from "../logger";
import type { Metrics } from "../metrics";
import type { ClientAddress } from "../http/clientAddress";
import type { SortableIds } from "../store/sortableIds";
import type { KeyOwner, Store } from "../store/types";

export const SignInBody = z.object({ api_key: z.string().min(1).max(200) });

function present(owner: KeyOwner, sessionToken: string): Api.Session {
  return {
    user: { id: owner.user.id, name: owner.user.name, role: owner.user.role },
    workspace: { id: owner.workspace.id, slug: owner.workspace.slug, name: owner.workspace.name },
    // The key the session acts with, so the console can mark it (revoking it ends the session).
    key: { id: owner.key.id, name: owner.key.name, hint: owner.key.hint },
    scopes: [...effectiveScopes(owner.key, owner.user)],
    csrf_token: csrfTokenFor(sessionToken),
  };
}

function cookie(links: Links, value: string, maxAgeSeconds: number): string {
  // Secure whenever people reach the relay over https, so the cookie never travels in the clear; the name then
  // carries the `__Host-` prefix, whose rules (Secure, Path=/, no Domain) this cookie meets.
  const base = links.base();
  const secure = base.startsWith("https:") ? "; Secure" : "";
  return `${sessionCookieName(base)}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}${secure}`;
}

/**
 * Signing in to the console: `POST /sessions` turns an API key into a session cookie. It runs before the
 * API's own authentication (the key comes in the body), behind `guard`, which counts attempts per address.
 */
export function createSignInHandler(deps: {
  store: Store;
  clock: Clock;
  links: Links;
  ids: SortableIds;
  logger: Logger;
  audit: Audit;
  metrics: Metrics;
  clientAddress: ClientAddress;
  sessionsChanged(workspaceId: string, of: SessionsOf): void;
}): RequestHandler {
  const actorOf = (owner: KeyOwner | undefined): AuditActor =>
    owner
      ? { workspaceId: owner.workspace.id, userId: owner.user.id, via: "api_key", viaId: owner.key.id }
      : { workspaceId: null, userId: null, via: "none", viaId: null };
  /** Records the refusal, then raises it; a record that cannot be written is logged, and the refusal still answered. */
  async function refuse(
    req: Parameters<RequestHandler>[0],
    owner: KeyOwner | undefined,
    reason: string,
    error: RelayError,
  ): Promise<never> {
    deps.metrics.signInsRefused.inc({ reason });
    if (!owner) {
      // No workspace is named, so no tenant's log is the place for it: the operator's log and metric are.
      deps.logger.warn("sign-in refused: unknown key", { reason, client: deps.clientAddress(req) });
      throw error;
    }
    const target = { type: "api_key" as const, id: owner.key.id };
    await deps.audit
      .record(deps.store, req, { action: "session.sign_in_failed", target, details: { reason } }, actorOf(owner))
      .catch((failure: unknown) =>
        deps.logger.error("could not record a failed sign-in in the audit log", { error: failure }),
      );
    throw error;
  }
  return async function signIn(req, res) {
    const { api_key } = parseWith(SignInBody, req.body);
    const owner = looksLikeApiKey(api_key) ? await deps.store.apiKeys.findOwnerByHash(hashSecret(api_key)) : undefined;
    if (!owner || owner.key.revoked_at !== null) {
      return refuse(
        req,
        owner,
        owner ? "revoked_key" : "unknown_key",
        new RelayError("UNAUTHORIZED", owner ? KEY_REFUSALS.revoked : KEY_REFUSALS.unknown),
      );
    }
    if (owner.user.removed_at !== null) {
      return refuse(
        req,
        owner,
        "removed_user",
        new RelayError("FORBIDDEN", "The user of this API key was removed from the workspace"),
      );
    }
    const scopes = effectiveScopes(owner.key, owner.user);
    if (!CONSOLE_SCOPES.some((scope) => scopes.has(scope))) {
      const error = new RelayError(
        "FORBIDDEN",
        `api_key: this key is for the editor or the API, not the console; signing in needs a key holding at least one of ${CONSOLE_SCOPES.join(", ")}`,
      );
      return refuse(req, owner, "no_console_scope", error);
    }
    const token = newSessionToken();
    const now = deps.clock.now();
    const at = new Date(now).toISOString();
    // Sortable ids order the key's sessions even when two are made within one millisecond.
    const id = deps.ids("ses");
    const ended = await deps.store.transaction(async (tx) => {
      await tx.sessions.create({
        id,
        api_key_id: owner.key.id,
        token_hash: hashSecret(token),
        created_at: at,
        expires_at: new Date(now + SESSION_LIFETIME_MS).toISOString(),
        ended_at: null,
      });
      // Past the cap the oldest sessions end rather than this sign-in failing: a person who lost track of their
      // browsers is never locked out, and a leaked key cannot pile up sessions.
      const ended = await tx.sessions.endOldest(owner.key.id, MAX_SESSIONS_PER_KEY, at);
      await deps.audit.record(
        tx,
        req,
        { action: "session.signed_in", target: { type: "session", id }, details: { ended_session_ids: ended } },
        actorOf(owner),
      );
      return ended;
    });
    if (ended.length > 0) {
      deps.logger.info("sessions ended by a newer sign-in", {
        key_id: owner.key.id,
        sessions: ended.length,
        cap: MAX_SESSIONS_PER_KEY,
      });
      deps.sessionsChanged(owner.workspace.id, { keyId: owner.key.id });
    }
    res.setHeader("Set-Cookie", cookie(deps.links, token, SESSION_LIFETIME_MS / 1000));
    res.status(201).json({ data: present(owner, token) });
  };
}

/** GET and DELETE /sessions/current, for a caller authenticated by the session cookie. */
export function createSessionsRouter(deps: {
  store: Store;
  clock: Clock;
  links: Links;
  sessionsChanged(workspaceId: string, of: SessionsOf): void;
}): Router {
  const router = Router();
  const current = (req: Parameters<RequestHandler>[0]) => {
    if (!req.session)
      throw new RelayError("UNAUTHORIZED", "Not signed in to the console (this request used an API key)");
    return req.session;
  };

  router.get("/sessions/current", named("/sessions/current"), (req, res) => {
    const session = current(req);
    res.json({ data: present(req.caller as Caller, session.token) });
  });

  router.delete("/sessions/current", named("/sessions/current"), async (req, res: Response) => {
    const session = current(req);
    await deps.store.sessions.end(session.id, new Date(deps.clock.now()).toISOString());
    const caller = req.caller as Caller;
    deps.sessionsChanged(caller.workspace.id, { keyId: caller.key.id });
    res.setHeader("Set-Cookie", cookie(deps.links, "", 0));
    const answer: Api.SessionEnded = { ended: true };
    res.json({ data: answer });
  });

  return router;
}
