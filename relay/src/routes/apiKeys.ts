import { type Api, RelayError } from "@tab-relay/shared";
import { Router } from "express";
import { z } from "zod";
import type { Audit } from "../audit/record";
import type { SessionsOf } from "../bus/types";
import { createApiKey } from "../auth/apiKeys";
import { SCOPES } from "../auth/scopes";
import type { Clock } from "../clock";
import { requireScope } from "../http/authenticate";
import { parseWith } from "../http/body";
import type { Caller } from "../http/context";
import { named } from "../http/requestContext";
import type { ApiKey, Store } from "../store/types";

export const CreateApiKeyBody = z.object({
  name: z.string().trim().min(1).max(100),
  scopes: z.array(z.enum(SCOPES)).min(1),
});

export const KeyIdParams = z.object({ id: z.string().min(1).max(64) });

/** The key as the API shows it: never the secret, never the hash. */
function present(key: ApiKey): Api.ApiKey {
  return {
    id: key.id,
    name: key.name,
    hint: key.hint,
    scopes: key.scopes,
    created_at: key.created_at,
    revoked_at: key.revoked_at,
  };
}

/** POST/GET /api-keys and DELETE /api-keys/{id}. */
export function createApiKeysRouter(deps: {
  store: Store;
  clock: Clock;
  audit: Audit;
  /** The key's console sessions ended with it: their live sockets, on every relay, close now. */
  sessionsChanged(workspaceId: string, of: SessionsOf): void;
}): Router {
  const router = Router();

  router.post("/api-keys", named("/api-keys"), requireScope("keys.write"), async (req, res) => {
    const caller = req.caller as Caller;
    const body = parseWith(CreateApiKeyBody, req.body);
    // A key can hand on only what it holds itself.
    const wider = body.scopes.filter((scope) => !caller.scopes.has(scope));
    if (wider.length > 0)
      throw new RelayError("FORBIDDEN", `scopes: this key cannot grant scopes it does not hold: ${wider.join(", ")}`);
    const { key, secret } = await deps.store.transaction(async (tx) => {
      const created = await createApiKey(tx, deps.clock, {
        workspaceId: caller.workspace.id,
        user: caller.user,
        name: body.name,
        scopes: body.scopes,
      });
      const details = { name: created.key.name, scopes: created.key.scopes };
      await deps.audit.record(tx, req, {
        action: "api_key.created",
        target: { type: "api_key", id: created.key.id },
        details,
      });
      return created;
    });
    const answer: Api.ApiKeyCreated = { ...present(key), secret };
    res.status(201).json({ data: answer });
  });

  router.get("/api-keys", named("/api-keys"), requireScope("keys.write"), async (req, res) => {
    const caller = req.caller as Caller;
    const keys = await deps.store.apiKeys.listForUser(caller.workspace.id, caller.user.id);
    res.json({ data: keys.map(present) });
  });

  router.delete("/api-keys/:id", named("/api-keys/:id"), async (req, res) => {
    const caller = req.caller as Caller;
    const { id } = parseWith(KeyIdParams, req.params, "path");
    const key = await deps.store.apiKeys.get(caller.workspace.id, id);
    if (!key) throw new RelayError("NOT_FOUND", `path.id: no API key ${id} in this workspace`);
    // Any key may revoke itself; revoking another needs keys.write, and someone else's key needs an owner or admin.
    const self = key.id === caller.key.id;
    if (!self && !caller.scopes.has("keys.write"))
      throw new RelayError("FORBIDDEN", "This API key lacks the scope keys.write");
    const manager = caller.user.role === "owner" || caller.user.role === "admin";
    if (key.user_id !== caller.user.id && !manager)
      throw new RelayError("FORBIDDEN", "Only an owner or admin can revoke another user's key");
    if (key.user_id !== caller.user.id && caller.user.role !== "owner") {
      // An admin could otherwise lock every owner out, and nobody in the workspace could let them back in.
      const holder = await deps.store.users.get(caller.workspace.id, key.user_id);
      if (holder?.role === "owner") throw new RelayError("FORBIDDEN", "Only an owner can revoke an owner's key");
    }
    if (key.revoked_at !== null) {
      res.json({ data: present(key) });
      return;
    }
    const at = new Date(deps.clock.now()).toISOString();
    await deps.store.transaction(async (tx) => {
      await tx.apiKeys.revoke(caller.workspace.id, id, at);
      await deps.audit.record(tx, req, {
        action: "api_key.revoked",
        target: { type: "api_key", id },
        details: { holder_user_id: key.user_id, name: key.name },
      });
    });
    deps.sessionsChanged(caller.workspace.id, { keyId: id });
    res.json({ data: present({ ...key, revoked_at: at }) });
  });

  return router;
}
