import type { Api, AuditAction } from "@tab-relay/shared";
import type { Request } from "express";
import type { Clock } from "../clock";
import type { ClientAddress } from "../http/clientAddress";
import type { SortableIds } from "../store/sortableIds";
import type { Store } from "../store/types";

export type AuditTarget = NonNullable<Api.AuditEntry["target"]>;

export interface AuditChange {
  action: AuditAction;
  target: AuditTarget | null;
  /** Facts about the change, never a secret (keys and tokens by id only). */
  details?: Api.AuditEntry["details"];
}

/** Who acted, when the request's own authentication does not say (signing in happens before it). */
export interface AuditActor {
  /**
   * Null when nothing names the workspace (a sign-in with an unknown key): then no workspace's log gets the record,
   * since writing it to every tenant's log would show each of them the others' callers (and cost a row per
   * workspace); the caller logs and counts it instead.
   */
  workspaceId: string | null;
  userId: string | null;
  via: Api.AuditVia;
  viaId: string | null;
}

/**
 * Records security-relevant changes. Each record is written through the store it is given: the transaction of the
 * change itself, so the change and its record are kept together or not at all, and a record that cannot be written
 * fails the request rather than leaving a change nobody can trace.
 */
export interface Audit {
  record(store: Store, req: Request, change: AuditChange, actor?: AuditActor): Promise<void>;
}

/** The actor of an authenticated request: its user, with the session or key it came with. */
function actorOf(req: Request): AuditActor {
  const caller = req.caller;
  if (!caller) return { workspaceId: null, userId: null, via: "none", viaId: null };
  const session = req.session;
  return {
    workspaceId: caller.workspace.id,
    userId: caller.user.id,
    via: session ? "session" : "api_key",
    viaId: session ? session.id : caller.key.id,
  };
}

export function createAudit(deps: { clock: Clock; ids: SortableIds; clientAddress: ClientAddress }): Audit {
  return {
    async record(store, req, change, actor = actorOf(req)) {
      if (actor.workspaceId === null) return;
      const at = new Date(deps.clock.now()).toISOString();
      await store.audit.create({
        id: deps.ids("aud"),
        workspace_id: actor.workspaceId,
        at,
        action: change.action,
        actor_user_id: actor.userId,
        via: actor.via,
        via_id: actor.viaId,
        address: deps.clientAddress(req),
        target_type: change.target?.type ?? null,
        target_id: change.target?.id ?? null,
        details: JSON.stringify(change.details ?? {}),
      });
    },
  };
}

/** What stands in the log for a path segment that may be a secret. */
export const MASKED_SEGMENT = "***";

/**
 * Whether a path segment may be a secret: Slack's incoming webhooks carry a 24-character token as the last segment
 * (`/services/T…/B…/<token>`), Discord's a 68-character one (`/api/webhooks/<id>/<token>`), and other receivers
 * do the same. Words people choose for paths (`/hooks/tab-relay`) are short, or have no digits and are in one case or
 * split by separators; a token is long and mixes digits or cases, or is very long. Slack's token is 24 letters and
 * digits drawn at random, so about one in 70 has no digit at all: mixed case without separators counts as a token too.
 */
function secretLike(segment: string): boolean {
  if (segment.length >= 32) return true;
  if (segment.length < 16) return false;
  return /\d/.test(segment) || (/[a-z]/.test(segment) && /[A-Z]/.test(segment) && !/[-_.~]/.test(segment));
}

/**
 * A webhook URL as the log keeps it (the log outlives a rotated secret by the whole retention period): scheme, host
 * and path, with each path segment that may be a secret masked. Its query, fragment and any user:password are left
 * out, since some receivers take a token there.
 */
export function auditedUrl(url: string | null): string | null {
  if (url === null) return null;
  try {
    const parsed = new URL(url);
    const path = parsed.pathname
      .split("/")
      .map((segment) => (secretLike(decodeSegment(segment)) ? MASKED_SEGMENT : segment))
      .join("/");
    return `${parsed.protocol}//${parsed.host}${path}`;
  } catch {
    return null;
  }
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
