/** Agents: the list with the create form, and one agent's management view (connection, controls, delivery log). */
import { api } from "../api";
import {
  InputError,
  announce,
  busy,
  clearError,
  confirmDialog,
  errorSlot,
  field,
  h,
  headed,
  onSubmit,
  replaceKeepingFocus,
  secretsPanel,
  showError,
  timeEl,
} from "../dom";
import { navigate } from "../router";
import { app, forgetDirectory, hasScope, loadDirectory } from "../state";
import type {
  Agent,
  AgentCreated,
  AgentSigningSecretRotated,
  AgentTokenRotated,
  Delivery,
  DeliveryAttempt,
  LiveEvent,
  User,
} from "@tab-relay/shared/api";
import type { View } from "./view";

const DELIVERY_LIMIT = 20;
const POLL_MS = 3000;
const MAX_POLLS = 20;

function agentPath(id: string): string {
  return `/agents/${encodeURIComponent(id)}`;
}

function stateBadge(state: Agent["state"]): HTMLSpanElement {
  return h("span", { class: `badge state-${state}`, "data-testid": "agent-state", "data-state": state }, state === "active" ? "Active" : "Paused");
}

function ownerName(agent: Agent, users: User[]): string {
  if (agent.owner_user_id === app.session?.user.id) return "you";
  return users.find((u) => u.id === agent.owner_user_id)?.name ?? agent.owner_user_id;
}

/** Coalesces refreshes: live updates come in bursts, and one fetch after the burst is enough. */
function refresher(run: () => Promise<void>) {
  let running: Promise<void> | null = null;
  let again = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  function now(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = run().finally(() => {
      running = null;
      if (again) {
        again = false;
        void now();
      }
    });
    return running;
  }
  return {
    now,
    soon(delayMs = 200): void {
      clearTimeout(timer);
      timer = setTimeout(() => void now(), delayMs);
    },
    cancel(): void {
      clearTimeout(timer);
    },
  };
}

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
  refreshButton.addEventListener("click", () => void busy(refreshButton, refresh.now).then(() => announce("Agents refreshed")));

  const canCreate = hasScope("agents.write") && app.session?.user.role !== "guest";
  const element = h(
    "div",
    { class: "page" },
    h("div", { class: "page-head" }, heading, refreshButton),
    h("p", { class: "muted" }, "Outside agents join the workspace as crew members: mention them in a channel or message them directly, and they answer through the Agent API."),
    error,
    headed("All agents", "h2", list, empty),
    canCreate ? createAgentForm(() => void refresh.now()) : null,
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
    agent.can_manage ? h("span", { class: "tag" }, "you manage it") : null,
    h("p", null, agent.description || h("span", { class: "muted" }, "No description.")),
    h("p", { class: "muted small" }, `Owner: ${ownerName(agent, users)}`),
  );
}

function createAgentForm(created: () => void): HTMLElement {
  const name = h("input", { name: "name", autocomplete: "off", maxlength: "80", "data-testid": "agent-name" });
  const description = h("textarea", { name: "description", rows: "2", maxlength: "500", "data-testid": "agent-description" });
  const webhook = h("input", { name: "webhook_url", type: "url", inputmode: "url", autocomplete: "off", spellcheck: "false", "data-testid": "agent-webhook-url" });
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "create-agent-submit" }, "Create agent");
  const error = errorSlot();
  const secrets = h("div", { class: "secrets-slot" });
  const form = h(
    "form",
    { "data-testid": "create-agent-form" },
    field("Name", name, "People mention the agent by this name, so it must be unique."),
    field("Description (optional)", description),
    field("Webhook URL (optional)", webhook, "The relay POSTs signed events here; it must be https unless this relay allows private addresses. Leave it empty for an agent that connects over Socket Mode."),
    h("div", { class: "row" }, submit),
    error,
  );
  onSubmit(form, submit, error, async () => {
    if (!name.value.trim()) throw new InputError("Give the agent a name.");
    const body: Record<string, string> = { name: name.value.trim(), description: description.value.trim() };
    if (webhook.value.trim()) body.webhook_url = webhook.value.trim();
    const result = await api<AgentCreated>("POST", "/agents", { body });
    form.reset();
    forgetDirectory();
    secrets.replaceChildren(
      secretsPanel(
        `${result.agent.name} is connected: its secrets`,
        [
          { key: "token", label: "Token", value: result.token },
          { key: "signing-secret", label: "Signing secret", value: result.signing_secret },
        ],
        h("p", null, "Give both to the agent: the token authenticates its Agent API calls, the signing secret verifies events. ", h("a", { href: agentPath(result.agent.id), "data-testid": "open-created-agent" }, `Manage ${result.agent.name}`)),
      ),
    );
    announce(`Agent ${result.agent.name} created`);
    created();
  });
  return headed("Connect an agent", "h2", form, secrets);
}

export function agentView(agentId: string): View {
  const base = agentPath(agentId);
  const heading = h("h1", { tabindex: "-1", "data-testid": "agent-name-heading" }, "Agent");
  const stateSlot = h("span", { class: "state-slot" });
  const refreshButton = h("button", { type: "button", "data-testid": "refresh-agent" }, "Refresh");
  const description = h("p", { "data-testid": "agent-description-text" });
  const meta = h("p", { class: "muted small" });
  const loadError = errorSlot();
  const body = h("div", { class: "agent-body" });
  let mode: "manager" | "viewer" | null = null;
  let disposed = false;
  let polls = 0;

  let manager: ReturnType<typeof managerParts> | null = null;

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
        manager = agent.can_manage ? managerParts(agent) : null;
        body.replaceChildren(
          manager
            ? manager.element
            : h("p", { class: "note", "data-testid": "agent-readonly" }, "Only this agent's owner, an admin or the workspace owner can change it or see its deliveries."),
        );
      }
      if (manager) {
        manager.update(agent);
        const deliveries = await manager.loadDeliveries();
        // Without live updates, follow a delivery in flight by polling for a while.
        const inFlight = deliveries?.some((d) => d.status === "sending" || (d.status === "pending" && d.attempts.length === 0));
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

  function managerParts(initial: Agent) {
    const webhookValue = h("span", { "data-testid": "webhook-url" });
    const socketValue = h("span", { "data-testid": "socket-status" });
    const tokenValue = h("code", { "data-testid": "token-hint" });
    const connection = h(
      "dl",
      { class: "facts" },
      h("dt", null, "Webhook URL"),
      h("dd", null, webhookValue),
      h("dt", null, "Socket Mode"),
      h("dd", null, socketValue),
      h("dt", null, "Token"),
      h("dd", null, tokenValue),
    );

    const controlsError = errorSlot();
    const secrets = h("div", { class: "secrets-slot" });
    const testButton = h("button", { type: "button", "data-testid": "send-test-event" }, "Send test event");
    const pauseButton = h("button", { type: "button", "data-testid": "pause-agent" }, "Pause");
    const resumeButton = h("button", { type: "button", class: "primary", "data-testid": "resume-agent" }, "Resume");
    const tokenButton = h("button", { type: "button", "data-testid": "rotate-token" }, "Set a new token");
    const secretButton = h("button", { type: "button", "data-testid": "rotate-signing-secret" }, "Set a new signing secret");

    function control(button: HTMLButtonElement, run: () => Promise<void>): void {
      button.addEventListener("click", () => {
        clearError(controlsError);
        void busy(button, run).catch((failure: unknown) => showError(controlsError, failure));
      });
    }
    control(testButton, async () => {
      await api("POST", `${base}/test-event`);
      announce("Test event sent; its delivery appears below");
      await refresh.now();
    });
    for (const [button, other, action, done] of [
      [pauseButton, resumeButton, "pause", "paused"],
      [resumeButton, pauseButton, "resume", "resumed"],
    ] as const) {
      control(button, async () => {
        const agent = await api<Agent>("POST", `${base}/${action}`);
        update(agent);
        stateSlot.replaceChildren(stateBadge(agent.state));
        other.focus();
        announce(`Agent ${done}`);
        refresh.soon();
      });
    }
    control(tokenButton, async () => {
      const result = await api<AgentTokenRotated>("POST", `${base}/token`);
      secrets.replaceChildren(
        secretsPanel(`New token for ${result.agent.name}`, [{ key: "token", label: "Token", value: result.token }], h("p", null, "The old token stopped working. Give this one to the agent.")),
      );
      refresh.soon();
    });
    control(secretButton, async () => {
      const result = await api<AgentSigningSecretRotated>("POST", `${base}/signing-secret`);
      secrets.replaceChildren(
        secretsPanel(
          `New signing secret for ${result.agent.name}`,
          [{ key: "signing-secret", label: "Signing secret", value: result.signing_secret }],
          h("p", null, "Events, retries included, are now signed with this secret only. Give it to the agent."),
        ),
      );
      refresh.soon();
    });

    const editName = h("input", { name: "name", autocomplete: "off", maxlength: "80", "data-testid": "edit-agent-name" });
    const editDescription = h("textarea", { name: "description", rows: "2", maxlength: "500", "data-testid": "edit-agent-description" });
    const editWebhook = h("input", { name: "webhook_url", type: "url", inputmode: "url", autocomplete: "off", spellcheck: "false", "data-testid": "edit-agent-webhook-url" });
    const editSubmit = h("button", { type: "submit", class: "primary" }, "Save changes");
    const editError = errorSlot();
    const editForm = h(
      "form",
      { "data-testid": "edit-agent-form" },
      field("Name", editName),
      field("Description", editDescription),
      field("Webhook URL", editWebhook, "Leave it empty to remove the URL (events then wait, or go over Socket Mode)."),
      h("div", { class: "row" }, editSubmit),
      editError,
    );
    function fillEdit(agent: Agent): void {
      editName.value = agent.name;
      editDescription.value = agent.description;
      editWebhook.value = agent.webhook_url ?? "";
    }
    fillEdit(initial);
    onSubmit(editForm, editSubmit, editError, async () => {
      if (!editName.value.trim()) throw new InputError("The agent needs a name.");
      const agent = await api<Agent>("PATCH", base, {
        body: { name: editName.value.trim(), description: editDescription.value.trim(), webhook_url: editWebhook.value.trim() || null },
      });
      fillEdit(agent);
      forgetDirectory();
      announce("Agent saved");
      await refresh.now();
    });

    const removeButton = h("button", { type: "button", class: "danger", "data-testid": "remove-agent" }, "Remove agent…");
    const removeError = errorSlot();
    removeButton.addEventListener("click", () => {
      clearError(removeError);
      const name = heading.textContent ?? "this agent";
      void confirmDialog({
        title: `Remove ${name}?`,
        body: "Its token stops working at once and its undelivered events are cancelled. This cannot be undone.",
        confirm: "Remove agent",
      }).then((confirmed) => {
        if (!confirmed) return;
        void busy(removeButton, async () => {
          await api("DELETE", base);
          forgetDirectory();
          announce(`Agent ${name} removed`);
          navigate("/agents");
        }).catch((failure: unknown) => showError(removeError, failure));
      });
    });

    const deliveriesError = errorSlot();
    const deliveryList = h("ol", { class: "deliveries", "data-testid": "delivery-list" });
    const deliveryErrors = new Map<string, unknown>();

    function attemptRow(attempt: DeliveryAttempt): HTMLTableRowElement {
      const excerpt = attempt.response_excerpt;
      return h(
        "tr",
        { "data-testid": "attempt", "data-outcome": attempt.outcome },
        h("td", null, String(attempt.attempt)),
        h("td", null, attempt.trigger),
        h("td", null, timeEl(attempt.at)),
        h(
          "td",
          { class: `outcome-${attempt.outcome}` },
          `${attempt.outcome === "success" ? "Success" : "Failed"}${attempt.status_code !== null ? ` · ${attempt.status_code}` : ""}`,
          attempt.error ? h("div", { class: "small" }, attempt.error) : null,
        ),
        h("td", null, `${attempt.duration_ms} ms`),
        h(
          "td",
          { class: "excerpt" },
          excerpt.length > 60
            ? h("details", null, h("summary", null, `${excerpt.slice(0, 40)}…`), h("pre", null, excerpt))
            : excerpt
              ? h("code", null, excerpt)
              : "–",
        ),
        h("td", null, attempt.next_attempt_at ? timeEl(attempt.next_attempt_at) : "–"),
      );
    }

    function deliveryItem(delivery: Delivery): HTMLLIElement {
      const redeliver = h("button", { type: "button", "data-testid": "redeliver", "data-focus-key": `redeliver:${delivery.id}` }, "Redeliver");
      const error = errorSlot();
      const stored = deliveryErrors.get(delivery.id);
      if (stored) showError(error, stored);
      redeliver.addEventListener("click", () => {
        clearError(error);
        deliveryErrors.delete(delivery.id);
        void busy(redeliver, async () => {
          await api("POST", `${base}/deliveries/${encodeURIComponent(delivery.id)}/redeliver`);
          announce("Redelivery started");
          await refresh.now();
        }).catch((failure: unknown) => {
          deliveryErrors.set(delivery.id, failure);
          showError(error, failure);
        });
      });
      const attempts = [...delivery.attempts].sort((a, b) => a.attempt - b.attempt);
      return h(
        "li",
        { class: "delivery", "data-testid": "delivery", "data-delivery-id": delivery.id, "data-status": delivery.status, "data-event-type": delivery.event_type },
        h(
          "div",
          { class: "delivery-head" },
          h("strong", null, delivery.event_type),
          h("span", { class: `badge status-${delivery.status}`, "data-testid": "delivery-status" }, delivery.status),
          h("code", { class: "small" }, delivery.id),
          h("span", { class: "muted small" }, "queued ", timeEl(delivery.created_at)),
          delivery.next_attempt_at && delivery.status === "pending" ? h("span", { class: "small" }, "next attempt ", timeEl(delivery.next_attempt_at)) : null,
          redeliver,
        ),
        attempts.length
          ? h(
              "div",
              { class: "table-wrap" },
              h(
                "table",
                { class: "attempts" },
                h("caption", { class: "sr-only" }, `Attempts for ${delivery.event_type} ${delivery.id}`),
                h(
                  "thead",
                  null,
                  h("tr", null, ["#", "Trigger", "Time", "Result", "Duration", "Response", "Next retry"].map((label) => h("th", { scope: "col" }, label))),
                ),
                h("tbody", null, attempts.map(attemptRow)),
              ),
            )
          : h("p", { class: "muted small" }, "No attempts yet."),
        error,
      );
    }

    function update(agent: Agent): void {
      const url = agent.connection?.webhook_url ?? agent.webhook_url ?? null;
      webhookValue.replaceChildren(url ? h("code", null, url) : h("span", { class: "muted" }, "None"));
      const socket = agent.connection?.socket;
      socketValue.dataset.state = socket ?? "unknown";
      socketValue.className = `badge socket-${socket ?? "unknown"}`;
      socketValue.textContent = socket === "connected" ? "Connected" : socket === "disconnected" ? "Disconnected" : "Unknown";
      tokenValue.textContent = agent.token_hint ?? "–";
      pauseButton.hidden = agent.state === "paused";
      resumeButton.hidden = agent.state === "active";
    }

    const element = h(
      "div",
      null,
      h(
        "section",
        { "aria-labelledby": "agent-connection-h", "data-testid": "agent-connection" },
        h("h2", { id: "agent-connection-h" }, "Connection"),
        connection,
      ),
      h(
        "section",
        { "aria-labelledby": "agent-actions-h", "data-testid": "agent-controls" },
        h("h2", { id: "agent-actions-h" }, "Actions"),
        h("div", { class: "toolbar" }, testButton, pauseButton, resumeButton, tokenButton, secretButton),
        controlsError,
        secrets,
      ),
      h(
        "section",
        { "aria-labelledby": "agent-deliveries-h", "data-testid": "deliveries" },
        h("h2", { id: "agent-deliveries-h" }, "Recent deliveries"),
        deliveriesError,
        deliveryList,
      ),
      h("details", { class: "edit", "data-testid": "edit-agent" }, h("summary", null, "Edit name, description or webhook URL"), editForm),
      h(
        "section",
        { class: "danger-zone", "aria-labelledby": "agent-remove-h" },
        h("h2", { id: "agent-remove-h" }, "Remove"),
        h("p", null, "Removing the agent invalidates its token and cancels its undelivered events."),
        removeButton,
        removeError,
      ),
    );

    return {
      element,
      update,
      async loadDeliveries(): Promise<Delivery[] | null> {
        try {
          const deliveries = await api<Delivery[]>("GET", `${base}/deliveries`, { query: { limit: DELIVERY_LIMIT } });
          clearError(deliveriesError);
          replaceKeepingFocus(
            deliveryList,
            ...(deliveries.length ? deliveries.map(deliveryItem) : [h("li", { class: "muted" }, "No deliveries yet. Send a test event to try the connection.")]),
          );
          return deliveries;
        } catch (failure) {
          showError(deliveriesError, failure);
          return null;
        }
      },
    };
  }

  refreshButton.addEventListener("click", () => {
    polls = 0;
    void busy(refreshButton, refresh.now).then(() => announce("Agent refreshed"));
  });

  const element = h(
    "div",
    { class: "page" },
    h("p", null, h("a", { href: "/agents" }, "← All agents")),
    h("div", { class: "page-head" }, heading, stateSlot, refreshButton),
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
