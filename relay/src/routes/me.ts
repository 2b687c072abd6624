import type { Api } from "@tab-relay/shared";
import { Router } from "express";
import type { Caller } from "../http/context";
import { named } from "../http/requestContext";

function present(caller: Caller): Api.Me {
  return {
    key: {
      id: caller.key.id,
      name: caller.key.name,
      hint: caller.key.hint,
      scopes: [...caller.scopes],
      created_at: caller.key.created_at,
    },
    user: { id: caller.user.id, name: caller.user.name, role: caller.user.role },
    workspace: { id: caller.workspace.id, slug: caller.workspace.slug, name: caller.workspace.name },
  };
}

/** GET /me: who the key belongs to and what it may do. Any valid key may ask. */
export function createMeRouter(): Router {
  const router = Router();
  router.get("/me", named("/me"), (req, res) => {
    res.json({ data: present(req.caller as Caller) });
  });
  return router;
}
