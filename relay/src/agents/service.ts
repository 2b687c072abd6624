import { RelayError, newSigningSecret, type PingEvent } from "@tab-relay/shared";
import { hashSecret, newAgentToken, secretHint } from "../auth/secrets";
import type { Clock } from "../clock";
import { newEvent } from "../conversations/service";
import type { SortableIds } from "../store/sortableIds";
import type { Agent, AgentPatch, DeliveryAttempt, Store, StoredEvent, User, Workspace } from "../store/types";

/** The roles that may connect an agent: whoever can create crew members (docs/api.md#outside-agents). */
const CONNECTING_ROLES: ReadonlySet<User["role"]> = new Set(["owner", "admin", "member"]);
const MANAGING_ROLES: ReadonlySet<User["role"]> = new Set(["owner", "admin"]);

export function canConnectAgents(user: User): boolean {
  return CONNECTING_ROLES.has(user.role);
}

/** Its owner, and the roles that manage agents, may change an agent. */
export function canManageAgent(user: User, agent: Agent): boolean {
  return agent.owner_user_id === user.id || MANAGING_ROLES.has(user.role);
}

export type AgentChange = "updated" | "paused" | "token" | "removed";

export interface AgentServiceDeps {
  store: Store;
  clock: Clock;
  ids: SortableIds;
  eventsQueued(): void;
  /** After a change is stored: sockets of a paused, re-keyed or removed agent close, consoles refresh. */
  agentChanged(agent: Agent, change: AgentChange): void;
  /** Whether the agent holds a Socket Mode connection, which can take events without a webhook URL. */
  socketConnected(agentId: string): Promise<boolean>;
}

/** Writes a change's audit record in the change's own transaction. */
export type AuditHook = (tx: Store, agent: Agent) => Promise<void>;

export interface Delivery {
  event: StoredEvent;
  attempts: DeliveryAttempt[];
}

export function createAgentService(deps: AgentServiceDeps) {
  const iso = () => new Date(deps.clock.now()).toISOString();

  async function create(
    input: { workspace: Workspace; owner: User; name: string; description: string; webhookUrl: string | null },
    audit?: AuditHook,
  ) {
    const token = newAgentToken();
    const signingSecret = newSigningSecret();
    const agent = await deps.store.transaction(async (tx) => {
      const agent = await tx.agents.create({
        id: deps.ids("agt"),
        workspaceId: input.workspace.id,
        ownerUserId: input.owner.id,
        name: input.name,
        description: input.description,
        webhookUrl: input.webhookUrl,
        tokenHash: hashSecret(token),
        tokenHint: secretHint(token),
        signingSecret,
        createdAt: iso(),
      });
      await audit?.(tx, agent);
      return agent;
    });
    deps.agentChanged(agent, "updated");
    return { agent, token, signingSecret };
  }

  async function update(agent: Agent, patch: AgentPatch, audit?: AuditHook): Promise<Agent> {
    const updated = await deps.store.transaction(async (tx) => {
      const updated = await tx.agents.update(agent.workspace_id, agent.id, patch, iso());
      if (!updated) throw new RelayError("NOT_FOUND", `path.id: no agent ${agent.id} in this workspace`);
      await audit?.(tx, updated);
      return updated;
    });
    // Events held while the agent had no URL or was paused may now go.
    if (patch.state === "active" || patch.webhook_url) deps.eventsQueued();
    deps.agentChanged(
      updated,
      patch.state === "paused" ? "paused" : patch.token_hash !== undefined ? "token" : "updated",
    );
    return updated;
  }

  async function rotateToken(agent: Agent, audit?: AuditHook) {
    const token = newAgentToken();
    const updated = await update(agent, { token_hash: hashSecret(token), token_hint: secretHint(token) }, audit);
    return { agent: updated, token };
  }

  async function rotateSigningSecret(agent: Agent, audit?: AuditHook) {
    const signingSecret = newSigningSecret();
    const updated = await update(agent, { signing_secret: signingSecret }, audit);
    return { agent: updated, signingSecret };
  }

  /** Removes the agent: its token stops at once and its undelivered events are dropped. */
  async function remove(agent: Agent, audit?: AuditHook): Promise<void> {
    await deps.store.transaction(async (tx) => {
      const at = iso();
      await tx.agents.remove(agent.workspace_id, agent.id, at);
      await tx.events.cancelPending(agent.id, at);
      await audit?.(tx, agent);
    });
    deps.agentChanged(agent, "removed");
  }

  /**
   * Removes a person from the workspace (never its last owner) and, in the same transaction, pauses the active agents
   * they own: nobody would be left answering for them. The pauses reach the rest of the relay as any pause does (their Socket Mode
   * sockets close with 4003, consoles refresh); an owner or admin may resume them later.
   */
  async function removeUser(
    user: User,
    audit?: (tx: Store, paused: Agent[]) => Promise<void>,
    /** Who removes them, when a person does: only an owner removes an owner, as the roles stand in the transaction. */
    removerId?: string,
  ): Promise<{ removed: boolean; paused: Agent[] }> {
    const result = await deps.store.transaction(async (tx) => {
      const at = iso();
      const paused: Agent[] = [];
      // Counted first: on PostgreSQL this holds the workspace's row, so a role change under way (which counts first
      // too) finishes before the roles below are read, or waits for this removal to end.
      const owners = await tx.users.countOwners(user.workspace_id);
      // Read again in the transaction: the roles may have changed since the caller looked.
      const current = await tx.users.get(user.workspace_id, user.id);
      if (current?.role === "owner" && current.removed_at === null && removerId !== undefined) {
        const remover = await tx.users.get(user.workspace_id, removerId);
        if (remover?.role !== "owner" || remover.removed_at !== null)
          throw new RelayError("FORBIDDEN", "Only an owner can remove an owner");
      }
      if (current?.role === "owner" && current.removed_at === null && owners <= 1) {
        throw new RelayError(
          "CONFLICT",
          `path.id: ${user.id} is the workspace's last owner and cannot be removed; make someone else an owner first`,
        );
      }
      if (!(await tx.users.remove(user.workspace_id, user.id, at))) return { removed: false, paused };
      for (const agent of await tx.agents.list(user.workspace_id)) {
        if (agent.owner_user_id !== user.id || agent.state !== "active") continue;
        const updated = await tx.agents.update(agent.workspace_id, agent.id, { state: "paused" }, at);
        if (updated) paused.push(updated);
      }
      await audit?.(tx, paused);
      return { removed: true, paused };
    });
    for (const agent of result.paused) deps.agentChanged(agent, "paused");
    return result;
  }

  /** Queues a `ping` through the normal delivery path; it is tried once, since someone is watching for it. */
  async function sendTestEvent(workspace: Workspace, agent: Agent): Promise<StoredEvent> {
    if (agent.webhook_url === null && !(await deps.socketConnected(agent.id))) {
      throw new RelayError(
        "VALIDATION_ERROR",
        "webhook_url: the agent has no webhook URL and no Socket Mode connection to send a test event to",
      );
    }
    const now = iso();
    const payload: PingEvent = {
      id: deps.ids("evt"),
      type: "ping",
      created_at: now,
      workspace: { slug: workspace.slug, name: workspace.name },
      agent: { id: agent.id, name: agent.name },
    };
    const event = newEvent(payload.id, workspace.id, agent.id, payload.type, JSON.stringify(payload), now, 0, "test");
    await deps.store.events.create(event);
    deps.eventsQueued();
    return event;
  }

  async function deliveries(agent: Agent, limit: number): Promise<Delivery[]> {
    const events = await deps.store.events.listForAgent(agent.id, limit);
    const attempts = await deps.store.events.attempts(events.map((event) => event.id));
    return events.map((event) => ({ event, attempts: attempts.filter((attempt) => attempt.event_id === event.id) }));
  }

  /**
   * Sends the event again now, with the same `webhook-id`. A pending event keeps its retry schedule after the
   * manual attempt; a finished one gets exactly one more attempt.
   */
  async function redeliver(agent: Agent, eventId: string, audit?: AuditHook): Promise<Delivery> {
    const event = await deps.store.events.get(agent.id, eventId);
    if (!event) throw new RelayError("NOT_FOUND", `path.delivery_id: no delivery ${eventId} for this agent`);
    if (agent.webhook_url === null && !(await deps.socketConnected(agent.id))) {
      throw new RelayError(
        "VALIDATION_ERROR",
        "webhook_url: the agent has no webhook URL and no Socket Mode connection to deliver to",
      );
    }
    const retries = event.status === "pending" ? event.retries : 0;
    const update = { status: "pending" as const, next_attempt_at: iso(), next_trigger: "manual" as const, retries };
    await deps.store.transaction(async (tx) => {
      await tx.events.schedule(event.id, update, iso());
      await audit?.(tx, agent);
    });
    deps.eventsQueued();
    return { event: { ...event, ...update }, attempts: await deps.store.events.attempts([event.id]) };
  }

  return { create, update, rotateToken, rotateSigningSecret, remove, removeUser, sendTestEvent, deliveries, redeliver };
}

export type AgentService = ReturnType<typeof createAgentService>;
