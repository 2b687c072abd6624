import { type Api, RelayError } from "@tab-relay/shared";
import { Router, type Request } from "express";
import { z } from "zod";
import { type AgentService, type AuditHook, type Delivery, canConnectAgents, canManageAgent } from "../agents/service";
import { type Audit, type AuditChange, auditedUrl } from "../audit/record";
import { webhookUrlProblem } from "../delivery/addresses";
import { requireScope } from "../http/authenticate";
import { parseWith } from "../http/body";
import type { Caller } from "../http/context";
import { named } from "../http/requestContext";
import type { Agent, DeliveryAttempt, Store, User } from "../store/types";

export const AgentParams = z.object({ id: z.string().min(1).max(64) });
export const DeliveryParams = AgentParams.extend({ delivery_id: z.string().min(1).max(64) });
export const DeliveriesQuery = z.object({
  limit: z.coerce.number("must be an integer from 1 to 100").int().min(1).max(100).default(30),
});

function webhookUrl(allowPrivate: boolean) {
  return z
    .string()
    .trim()
    .max(2048)
    .nullable()
    .transform((url, ctx) => {
      if (url === null || url === "") return null;
      const problem = webhookUrlProblem(url, allowPrivate);
      if (problem) {
        ctx.addIssue({ code: "custom", message: problem });
        return z.NEVER;
      }
      return url;
    });
}

const Name = z.string().trim().min(1).max(80);
const Description = z.string().trim().max(500);

/** The bodies of POST and PATCH /agents, whose webhook_url is checked against the relay's guard for private addresses. */
export function agentBodies(allowPrivateWebhooks: boolean) {
  return {
    CreateAgentBody: z.object({
      name: Name,
      description: Description.default(""),
      webhook_url: webhookUrl(allowPrivateWebhooks).optional(),
    }),
    PatchAgentBody: z
      .object({
        name: Name.optional(),
        description: Description.optional(),
        webhook_url: webhookUrl(allowPrivateWebhooks).optional(),
      })
      .refine(
        (body) => Object.values(body).some((value) => value !== undefined),
        "give at least one of name, description, webhook_url",
      ),
  };
}

/** The agent as people see it; only those who may change it see where it is connected and how delivery goes. */
function present(agent: Agent, viewer: User, socketConnected: boolean, last?: DeliveryAttempt): Api.Agent {
  const fields: Api.AgentFields = {
    id: agent.id,
    name: agent.name,
    description: agent.description,
    state: agent.state,
    owner_user_id: agent.owner_user_id,
    created_at: agent.created_at,
    updated_at: agent.updated_at,
  };
  if (!canManageAgent(viewer, agent)) return { ...fields, can_manage: false };
  return {
    ...fields,
    can_manage: true,
    webhook_url: agent.webhook_url,
    connection: { webhook_url: agent.webhook_url, socket: socketConnected ? "connected" : "disconnected" },
    token_hint: agent.token_hint,
    last_delivery: last ? presentAttempt(last) : null,
  };
}

function presentAttempt(attempt: DeliveryAttempt): Api.DeliveryAttempt {
  return {
    id: attempt.id,
    attempt: attempt.attempt,
    trigger: attempt.trigger,
    at: attempt.started_at,
    url: attempt.url,
    outcome: attempt.outcome,
    status_code: attempt.status_code,
    error: attempt.error,
    duration_ms: attempt.duration_ms,
    response_excerpt: attempt.response_excerpt,
    next_attempt_at: attempt.next_attempt_at,
  };
}

function presentDelivery({ event, attempts }: Delivery): Api.Delivery {
  return {
    id: event.id,
    event_type: event.type,
    status: event.sending ? "sending" : event.status,
    created_at: event.created_at,
    next_attempt_at: event.next_attempt_at,
    attempts: attempts.map(presentAttempt),
  };
}

/** Connecting and managing outside agents: /agents and everything under it. */
export function createAgentsRouter(deps: {
  store: Store;
  agents: AgentService;
  audit: Audit;
  allowPrivateWebhooks: boolean;
  socketConnected(agentId: string): Promise<boolean>;
}): Router {
  const router = Router();
  const { store } = deps;
  /** Records the change in its own transaction, as the agent is after it. */
  const audited =
    (
      req: Request,
      action: AuditChange["action"],
      details?: (agent: Agent) => NonNullable<AuditChange["details"]>,
    ): AuditHook =>
    (tx, agent) =>
      deps.audit.record(tx, req, {
        action,
        target: { type: "agent", id: agent.id },
        ...(details ? { details: details(agent) } : {}),
      });
  const { CreateAgentBody, PatchAgentBody } = agentBodies(deps.allowPrivateWebhooks);

  async function uniqueName(caller: Caller, name: string, except?: string): Promise<void> {
    const taken = (await store.agents.list(caller.workspace.id)).some(
      (a) => a.id !== except && a.name.toLowerCase() === name.toLowerCase(),
    );
    // Mentions find agents by name, so two agents may not share one.
    if (taken) throw new RelayError("CONFLICT", `name: an agent named ${name} already exists`);
  }

  async function agentFor(req: Request, action: "read" | "manage"): Promise<{ caller: Caller; agent: Agent }> {
    const caller = req.caller as Caller;
    const { id } = parseWith(AgentParams, req.params, "path");
    const agent = await store.agents.get(caller.workspace.id, id);
    if (!agent) throw new RelayError("NOT_FOUND", `path.id: no agent ${id} in this workspace`);
    if (action === "manage" && !canManageAgent(caller.user, agent)) {
      throw new RelayError(
        "FORBIDDEN",
        "Only the agent's owner, an admin or the workspace owner can change this agent",
      );
    }
    return { caller, agent };
  }

  router.post("/agents", named("/agents"), requireScope("agents.write"), async (req, res) => {
    const caller = req.caller as Caller;
    if (!canConnectAgents(caller.user))
      throw new RelayError("FORBIDDEN", `A ${caller.user.role} cannot connect agents`);
    const body = parseWith(CreateAgentBody, req.body);
    await uniqueName(caller, body.name);
    const created = await deps.agents.create(
      {
        workspace: caller.workspace,
        owner: caller.user,
        name: body.name,
        description: body.description,
        webhookUrl: body.webhook_url ?? null,
      },
      audited(req, "agent.created", (agent) => ({ name: agent.name, webhook_url: auditedUrl(agent.webhook_url) })),
    );
    const answer: Api.AgentCreated = {
      agent: present(created.agent, caller.user, await deps.socketConnected(created.agent.id)),
      token: created.token,
      signing_secret: created.signingSecret,
    };
    res.status(201).json({ data: answer });
  });

  router.get("/agents", named("/agents"), requireScope("agents.read"), async (req, res) => {
    const caller = req.caller as Caller;
    const agents = await store.agents.list(caller.workspace.id);
    const data = await Promise.all(
      agents.map(async (agent) =>
        present(
          agent,
          caller.user,
          await deps.socketConnected(agent.id),
          canManageAgent(caller.user, agent) ? await store.events.lastAttempt(agent.id) : undefined,
        ),
      ),
    );
    res.json({ data });
  });

  router.get("/agents/:id", named("/agents/:id"), requireScope("agents.read"), async (req, res) => {
    const { caller, agent } = await agentFor(req, "read");
    const last = canManageAgent(caller.user, agent) ? await store.events.lastAttempt(agent.id) : undefined;
    res.json({ data: present(agent, caller.user, await deps.socketConnected(agent.id), last) });
  });

  router.patch("/agents/:id", named("/agents/:id"), requireScope("agents.write"), async (req, res) => {
    const { caller, agent } = await agentFor(req, "manage");
    const body = parseWith(PatchAgentBody, req.body);
    if (body.name !== undefined) await uniqueName(caller, body.name, agent.id);
    // Where events go is what matters to security; a new name or description is not recorded.
    const urlChanged = body.webhook_url !== undefined && body.webhook_url !== agent.webhook_url;
    const updated = await deps.agents.update(
      agent,
      {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.webhook_url !== undefined ? { webhook_url: body.webhook_url } : {}),
      },
      urlChanged
        ? audited(req, "agent.webhook_url_changed", (after) => ({
            from: auditedUrl(agent.webhook_url),
            to: auditedUrl(after.webhook_url),
          }))
        : undefined,
    );
    res.json({
      data: present(
        updated,
        caller.user,
        await deps.socketConnected(updated.id),
        await store.events.lastAttempt(agent.id),
      ),
    });
  });

  for (const [action, state, recorded] of [
    ["pause", "paused", "agent.paused"],
    ["resume", "active", "agent.resumed"],
  ] as const) {
    router.post(
      `/agents/:id/${action}`,
      named(`/agents/:id/${action}`),
      requireScope("agents.write"),
      async (req, res) => {
        const { caller, agent } = await agentFor(req, "manage");
        const updated =
          agent.state === state ? agent : await deps.agents.update(agent, { state }, audited(req, recorded));
        res.json({
          data: present(
            updated,
            caller.user,
            await deps.socketConnected(updated.id),
            await store.events.lastAttempt(agent.id),
          ),
        });
      },
    );
  }

  router.post("/agents/:id/token", named("/agents/:id/token"), requireScope("agents.write"), async (req, res) => {
    const { caller, agent } = await agentFor(req, "manage");
    const rotated = await deps.agents.rotateToken(agent, audited(req, "agent.token_replaced"));
    const answer: Api.AgentTokenRotated = {
      agent: present(rotated.agent, caller.user, await deps.socketConnected(rotated.agent.id)),
      token: rotated.token,
    };
    res.json({ data: answer });
  });

  router.post(
    "/agents/:id/signing-secret",
    named("/agents/:id/signing-secret"),
    requireScope("agents.write"),
    async (req, res) => {
      const { caller, agent } = await agentFor(req, "manage");
      const rotated = await deps.agents.rotateSigningSecret(agent, audited(req, "agent.signing_secret_replaced"));
      const answer: Api.AgentSigningSecretRotated = {
        agent: present(rotated.agent, caller.user, await deps.socketConnected(rotated.agent.id)),
        signing_secret: rotated.signingSecret,
      };
      res.json({ data: answer });
    },
  );

  router.post(
    "/agents/:id/test-event",
    named("/agents/:id/test-event"),
    requireScope("agents.write"),
    async (req, res) => {
      const { caller, agent } = await agentFor(req, "manage");
      const event = await deps.agents.sendTestEvent(caller.workspace, agent);
      res.status(202).json({ data: presentDelivery({ event, attempts: [] }) });
    },
  );

  router.delete("/agents/:id", named("/agents/:id"), requireScope("agents.write"), async (req, res) => {
    const { agent } = await agentFor(req, "manage");
    await deps.agents.remove(
      agent,
      audited(req, "agent.removed", (removed) => ({ name: removed.name })),
    );
    const answer: Api.AgentRemoved = { id: agent.id, removed: true };
    res.json({ data: answer });
  });

  router.get(
    "/agents/:id/deliveries",
    named("/agents/:id/deliveries"),
    requireScope("agents.read"),
    async (req, res) => {
      const { agent } = await agentFor(req, "manage");
      const { limit } = parseWith(DeliveriesQuery, req.query, "query");
      res.json({ data: (await deps.agents.deliveries(agent, limit)).map(presentDelivery) });
    },
  );

  router.post(
    "/agents/:id/deliveries/:delivery_id/redeliver",
    named("/agents/:id/deliveries/:delivery_id/redeliver"),
    requireScope("agents.write"),
    async (req, res) => {
      const { agent } = await agentFor(req, "manage");
      const { delivery_id } = parseWith(DeliveryParams, req.params, "path");
      const hook: AuditHook = (tx, redelivered) =>
        deps.audit.record(tx, req, {
          action: "agent.redelivery_requested",
          target: { type: "delivery", id: delivery_id },
          details: { agent_id: redelivered.id },
        });
      res.status(202).json({ data: presentDelivery(await deps.agents.redeliver(agent, delivery_id, hook)) });
    },
  );

  return router;
}
