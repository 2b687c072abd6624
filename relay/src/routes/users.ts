import { type Api, RelayError } from "@tab-relay/shared";
import { Router } from "express";
import { z } from "zod";
import { createApiKey } from "../auth/apiKeys";
import { ROLES, ROLE_SCOPES } from "../auth/scopes";
import { newId } from "../auth/secrets";
import type { Clock } from "../clock";
import { requireScope } from "../http/authenticate";
import { parseWith } from "../http/body";
import type { Caller } from "../http/context";
import { named } from "../http/requestContext";
import type { AgentService } from "../agents/service";
import type { Audit } from "../audit/record";
import type { SessionsOf } from "../bus/types";
import type { Store, User } from "../store/types";

export const CreateUserBody = z.object({ name: z.string().trim().min(1).max(80), role: z.enum(ROLES) });
export const UserParams = z.object({ id: z.string().min(1).max(64) });
export const PatchUserBody = z.object({ role: z.enum(ROLES) });

function present(user: User): Api.User {
  return { id: user.id, name: user.name, role: user.role, created_at: user.created_at };
}

/** The workspace's people: listing them (for mentions), adding one with a first key, changing a role, removing one. */
export function createUsersRouter(deps: {
  store: Store;
  clock: Clock;
  audit: Audit;
  agents: Pick<AgentService, "removeUser">;
  /** A person's console sessions ended (removed) or changed (another role): their live sockets follow at once. */
  sessionsChanged(workspaceId: string, of: SessionsOf): void;
}): Router {
  const router = Router();
  const { store } = deps;

  router.get("/users", named("/users"), requireScope("workspace.read"), async (req, res) => {
    const caller = req.caller as Caller;
    res.json({ data: (await store.users.list(caller.workspace.id)).map(present) });
  });

  router.post("/users", named("/users"), requireScope("users.write"), async (req, res) => {
    const caller = req.caller as Caller;
    const body = parseWith(CreateUserBody, req.body);
    if (body.role === "owner" && caller.user.role !== "owner")
      throw new RelayError("FORBIDDEN", "Only an owner can add another owner");
    // The first key is a key the caller makes, so like any other it holds only scopes the caller's key holds: a key
    // kept to users.write must not mint an admin's every scope. It may hold none: the person is still added, and an
    // owner can make them a key with `tab-relay keys create`.
    const scopes = ROLE_SCOPES[body.role].filter((scope) => caller.scopes.has(scope));
    const { user, key, secret } = await store.transaction(async (tx) => {
      const user = await tx.users.create({
        id: newId("usr"),
        workspaceId: caller.workspace.id,
        name: body.name,
        role: body.role,
        createdAt: new Date(deps.clock.now()).toISOString(),
      });
      const created = await createApiKey(tx, deps.clock, {
        workspaceId: caller.workspace.id,
        user,
        name: "First key",
        scopes,
      });
      await deps.audit.record(tx, req, {
        action: "user.added",
        target: { type: "user", id: user.id },
        details: { role: user.role, first_key_id: created.key.id },
      });
      return { user, ...created };
    });
    const answer: Api.UserCreated = {
      user: present(user),
      api_key: { id: key.id, name: key.name, scopes: key.scopes, created_at: key.created_at, secret },
    };
    res.status(201).json({ data: answer });
  });

  router.patch("/users/:id", named("/users/:id"), requireScope("users.write"), async (req, res) => {
    const caller = req.caller as Caller;
    const { id } = parseWith(UserParams, req.params, "path");
    const body = parseWith(PatchUserBody, req.body);
    const updated = await store.transaction(async (tx) => {
      // Counted first, which holds the workspace's owners: two owners demoting each other cannot leave none.
      const owners = await tx.users.countOwners(caller.workspace.id);
      const current = await tx.users.get(caller.workspace.id, id);
      if (!current || current.removed_at !== null)
        throw new RelayError("NOT_FOUND", `path.id: no user ${id} in this workspace`);
      if ((current.role === "owner" || body.role === "owner") && caller.user.role !== "owner") {
        throw new RelayError("FORBIDDEN", "role: only an owner can make or unmake an owner");
      }
      if (current.role === body.role) return current;
      if (current.role === "owner" && owners <= 1) {
        throw new RelayError(
          "CONFLICT",
          `role: ${id} is the workspace's last owner and stays one; make someone else an owner first`,
        );
      }
      await tx.users.setRole(caller.workspace.id, id, body.role);
      await deps.audit.record(tx, req, {
        action: "user.role_changed",
        target: { type: "user", id },
        details: { from: current.role, to: body.role },
      });
      return { ...current, role: body.role };
    });
    deps.sessionsChanged(caller.workspace.id, { userId: id });
    res.json({ data: present(updated) });
  });

  router.delete("/users/:id", named("/users/:id"), requireScope("users.write"), async (req, res) => {
    const caller = req.caller as Caller;
    const { id } = parseWith(UserParams, req.params, "path");
    const user = await store.users.get(caller.workspace.id, id);
    if (!user || user.removed_at !== null)
      throw new RelayError("NOT_FOUND", `path.id: no user ${id} in this workspace`);
    if (user.id === caller.user.id) throw new RelayError("VALIDATION_ERROR", "path.id: you cannot remove yourself");
    // Checked here for a quick answer, and again inside the removal's transaction, where it counts: the person may be
    // made an owner (or the caller unmade one) in between.
    if (user.role === "owner" && caller.user.role !== "owner")
      throw new RelayError("FORBIDDEN", "Only an owner can remove an owner");
    const { paused } = await deps.agents.removeUser(
      user,
      async (tx, agents) => {
        await deps.audit.record(tx, req, {
          action: "user.removed",
          target: { type: "user", id },
          details: { role: user.role, paused_agent_ids: agents.map((agent) => agent.id) },
        });
        // Each pause is recorded as such too, so filtering by agent.paused finds it.
        for (const agent of agents)
          await deps.audit.record(tx, req, {
            action: "agent.paused",
            target: { type: "agent", id: agent.id },
            details: { owner_removed: id },
          });
      },
      caller.user.id,
    );
    deps.sessionsChanged(caller.workspace.id, { userId: id });
    const answer: Api.UserRemoved = { id, removed: true, paused_agent_ids: paused.map((agent) => agent.id) };
    res.json({ data: answer });
  });

  return router;
}
