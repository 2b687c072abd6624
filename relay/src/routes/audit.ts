import { AUDIT_ACTIONS, type Api, RelayError } from "@tab-relay/shared";
import { Router } from "express";
import { z } from "zod";
import { requireScope } from "../http/authenticate";
import { parseWith } from "../http/body";
import type { Caller } from "../http/context";
import { named } from "../http/requestContext";
import type { AuditRecord, Store } from "../store/types";

const Id = z.string().min(1).max(64);
const Instant = z.iso
  .datetime({ offset: true, error: "must be an ISO 8601 date and time, e.g. 2026-01-31T00:00:00Z" })
  .transform((at) => new Date(at).toISOString());

/** The same paging as the relay's other lists: newest first, `limit`, and `before` an id from the page before. */
export const AuditQuery = z.object({
  since: Instant.optional(),
  until: Instant.optional(),
  actor: Id.optional(),
  action: z.enum(AUDIT_ACTIONS).optional(),
  limit: z.coerce.number("must be an integer from 1 to 100").int().min(1).max(100).default(50),
  before: Id.optional(),
});

function present(record: AuditRecord): Api.AuditEntry {
  return {
    id: record.id,
    at: record.at,
    action: record.action,
    actor: { user_id: record.actor_user_id, via: record.via, via_id: record.via_id, address: record.address },
    target:
      record.target_type !== null && record.target_id !== null
        ? { type: record.target_type, id: record.target_id }
        : null,
    details: JSON.parse(record.details) as Api.AuditEntry["details"],
  };
}

/** `GET /audit`: the workspace's audit log, for its owners and admins. Nothing changes or deletes a record. */
export function createAuditRouter(deps: { store: Store }): Router {
  const router = Router();
  // users.write is what only owners and admins hold (docs/api.md#audit-log); the role is checked too, in case a
  // role's scopes ever widen.
  router.get("/audit", named("/audit"), requireScope("users.write"), async (req, res) => {
    const caller = req.caller as Caller;
    if (caller.user.role !== "owner" && caller.user.role !== "admin")
      throw new RelayError("FORBIDDEN", "Only an owner or admin can read the audit log");
    const query = parseWith(AuditQuery, req.query, "query");
    const records = await deps.store.audit.list(caller.workspace.id, query);
    const data: Api.AuditEntry[] = records.map(present);
    res.json({ data });
  });
  return router;
}
