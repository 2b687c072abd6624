/** The agents page: every agent as a card, and the form that connects a new one. */
import { api } from "../../api";
import { announce, busy, clearError, errorSlot, h, headed, replaceKeepingFocus, showError } from "../../dom";
import { app, hasScope, loadDirectory } from "../../state";
import type { Agent, LiveEvent, User } from "@tab-relay/shared/api";
import type { View } from "../view";
import { agentPath, healthBadge, ownerName, refresher, stateBadge } from "./common";
import { createAgentForm } from "./create";

export function agentsView(): View {
  const heading = h("h1", { tabindex: "-1" }, "Agents");
  const refreshButton = h("button", { type: "button", "data-testid": "refresh-agents" }, "Refresh");
  const error = errorSlot();
  const list = h("ul", { class: "card-list", "data-testid": "agent-list" });
  const empty = h("p", { class: "muted", hidden: true }, "No agents yet.");
  let disposed = false;

  async function reload(): Promise<void> {
    try {
      const [agents, dir] = await Promise.all([api<Agent[]>("GET", "/agents"), loadDirectory()]);
      if (disposed) return;
      clearError(error);
      empty.hidden = agents.length > 0;
      replaceKeepingFocus(list, ...agents.map((agent) => agentCard(agent, dir.users)));
    } catch (failure) {
      showError(error, failure);
    }
  }
  const refresh = refresher(reload);
  refreshButton.addEventListener(
    "click",
    () => void busy(refreshButton, refresh.now).then(() => announce("Agents refreshed")),
  );

  const canCreate = hasScope("agents.write") && app.session?.user.role !== "guest";
  const element = h(
    "div",
    { class: "page" },
    h("div", { class: "page-head" }, heading, refreshButton),
    h(
      "p",
      { class: "muted" },
      "Outside agents join the workspace as crew members: mention them in a channel or message them directly, and they answer through the Agent API.",
    ),
    error,
    headed("All agents", "h2", list, empty),
    canCreate ? createAgentForm(refresh.now) : null,
  );
  void reload();
  return {
    title: "Agents",
    element,
    focusTarget: heading,
    dispose: () => {
      disposed = true;
      refresh.cancel();
    },
    live(event: LiveEvent): boolean {
      if (event.type === "agent.updated") refresh.soon();
      return false;
    },
    reconnected: () => refresh.soon(),
  };
}

function agentCard(agent: Agent, users: User[]): HTMLLIElement {
  const href = agentPath(agent.id);
  return h(
    "li",
    { class: "card", "data-testid": "agent-item", "data-agent-id": agent.id, "data-state": agent.state },
    h("h3", null, h("a", { href, "data-focus-key": href }, agent.name)),
    stateBadge(agent.state),
    agent.can_manage ? healthBadge(agent.last_delivery) : null,
    agent.can_manage ? h("span", { class: "tag" }, "you manage it") : null,
    h("p", null, agent.description || h("span", { class: "muted" }, "No description.")),
    h("p", { class: "muted small" }, `Owner: ${ownerName(agent, users)}`),
  );
}
