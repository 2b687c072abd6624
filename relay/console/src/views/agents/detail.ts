/** One agent's page: name, state and owner for everyone; for those who manage it, the parts in manage.ts. */
import { api } from "../../api";
import { announce, busy, clearError, errorSlot, h, showError, timeEl } from "../../dom";
import { app, loadDirectory } from "../../state";
import type { Agent, LiveEvent } from "@tab-relay/shared/api";
import type { View } from "../view";
import { type AgentContext, agentPath, deliveryHealth, healthBadge, ownerName, refresher, stateBadge } from "./common";
import { DELIVERY_LIMIT } from "./deliveries";
import { type ManagerParts, managerParts } from "./manage";

const POLL_MS = 3000;
const MAX_POLLS = 20;

export function agentView(agentId: string): View {
  const base = agentPath(agentId);
  const heading = h("h1", { tabindex: "-1", "data-testid": "agent-name-heading" }, "Agent");
  const stateSlot = h("span", { class: "state-slot" });
  const healthSlot = h("span", { class: "state-slot" });
  const refreshButton = h("button", { type: "button", "data-testid": "refresh-agent" }, "Refresh");
  const description = h("p", { "data-testid": "agent-description-text" });
  const meta = h("p", { class: "muted small" });
  const loadError = errorSlot();
  const body = h("div", { class: "agent-body" });
  let mode: "manager" | "viewer" | null = null;
  let disposed = false;
  let polls = 0;

  let manager: ManagerParts | null = null;

  async function load(): Promise<void> {
    try {
      const [agent, dir] = await Promise.all([api<Agent>("GET", base), loadDirectory()]);
      if (disposed) return;
      clearError(loadError);
      heading.textContent = agent.name;
      document.title = `${agent.name} · tab-relay`;
      stateSlot.replaceChildren(stateBadge(agent.state));
      description.replaceChildren(agent.description || h("span", { class: "muted" }, "No description."));
      meta.replaceChildren(`Owner: ${ownerName(agent, dir.users)} · Created `, timeEl(agent.created_at));
      const wanted = agent.can_manage ? "manager" : "viewer";
      if (mode !== wanted) {
        mode = wanted;
        manager = agent.can_manage ? managerParts(agent, context) : null;
        body.replaceChildren(
          manager
            ? manager.element
            : h(
                "p",
                { class: "note", "data-testid": "agent-readonly" },
                "Only this agent's owner, an admin or the workspace owner can change it or see its deliveries.",
              ),
        );
      }
      if (manager) {
        manager.update(agent);
        if (agent.can_manage) healthSlot.replaceChildren(healthBadge(agent.last_delivery));
        const deliveries = await manager.loadDeliveries();
        if (deliveries) {
          const { last, failures } = deliveryHealth(deliveries, deliveries.length >= DELIVERY_LIMIT);
          healthSlot.replaceChildren(healthBadge(last, failures));
        }
        // Without live updates, follow a delivery in flight by polling for a while.
        const inFlight = deliveries?.some(
          (d) => d.status === "sending" || (d.status === "pending" && d.attempts.length === 0),
        );
        if (inFlight && app.live !== "connected" && polls < MAX_POLLS && !disposed) {
          polls += 1;
          refresh.soon(POLL_MS);
        }
      }
    } catch (failure) {
      showError(loadError, failure);
    }
  }
  const refresh = refresher(load);
  const context: AgentContext = {
    base,
    name: () => heading.textContent ?? "this agent",
    show(agent) {
      manager?.update(agent);
      stateSlot.replaceChildren(stateBadge(agent.state));
    },
    refresh,
  };

  refreshButton.addEventListener("click", () => {
    polls = 0;
    void busy(refreshButton, refresh.now).then(() => announce("Agent refreshed"));
  });

  const element = h(
    "div",
    { class: "page" },
    h("p", null, h("a", { href: "/agents" }, "← All agents")),
    h("div", { class: "page-head" }, heading, stateSlot, healthSlot, refreshButton),
    description,
    meta,
    loadError,
    body,
  );
  void load();
  return {
    title: "Agent",
    element,
    focusTarget: heading,
    dispose: () => {
      disposed = true;
      refresh.cancel();
    },
    live(event: LiveEvent): boolean {
      if (event.type === "agent.updated" && event.agent_id === agentId) {
        polls = 0;
        refresh.soon();
      }
      return false;
    },
    reconnected: () => refresh.soon(),
  };
}
