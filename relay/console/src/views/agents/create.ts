/** Connecting a new agent: the form, then its token and signing secret, shown once. */
import { api } from "../../api";
import { InputError, announce, errorSlot, field, h, headed, onSubmit, reveal, secretsPanel } from "../../dom";
import { forgetDirectory } from "../../state";
import type { AgentCreated } from "@tab-relay/shared/api";
import { agentPath } from "./common";

export function createAgentForm(created: () => Promise<void>): HTMLElement {
  const name = h("input", { name: "name", autocomplete: "off", maxlength: "80", "data-testid": "agent-name" });
  const description = h("textarea", {
    name: "description",
    rows: "2",
    maxlength: "500",
    "data-testid": "agent-description",
  });
  const webhook = h("input", {
    name: "webhook_url",
    type: "url",
    inputmode: "url",
    autocomplete: "off",
    spellcheck: "false",
    "data-testid": "agent-webhook-url",
  });
  const submit = h(
    "button",
    { type: "submit", class: "primary", "data-testid": "create-agent-submit" },
    "Create agent",
  );
  const error = errorSlot();
  const secrets = h("div", { class: "secrets-slot" });
  const form = h(
    "form",
    { "data-testid": "create-agent-form" },
    field("Name", name, "People mention the agent by this name, so it must be unique."),
    field("Description (optional)", description),
    field(
      "Webhook URL (optional)",
      webhook,
      "The relay POSTs signed events here; it must be https unless this relay allows private addresses. Leave it empty for an agent that connects over Socket Mode.",
    ),
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
    const url = result.agent.webhook_url;
    // Nothing is connected yet: the agent has to be given its secrets and started first.
    const how = url
      ? `Give both to the agent: the token authenticates its Agent API calls, and the signing secret lets it check the events the relay sends to ${url}. `
      : "Give both to the agent: it connects over Socket Mode with the token, and events wait until it does. The signing secret verifies events if you add a webhook URL later. ";
    const panel = secretsPanel(
      `${result.agent.name} was created: its token and signing secret`,
      [
        { key: "token", label: "Token", value: result.token },
        { key: "signing-secret", label: "Signing secret", value: result.signing_secret },
      ],
      h(
        "p",
        null,
        how,
        h(
          "a",
          { href: agentPath(result.agent.id), "data-testid": "open-created-agent" },
          `Manage ${result.agent.name}`,
        ),
      ),
    );
    secrets.replaceChildren(panel);
    announce(`Agent ${result.agent.name} created`);
    // The list above grows by the new agent, which would push the secrets out of sight: show them once it has.
    await created();
    reveal(panel);
  });
  return headed("Connect an agent", "h2", form, secrets);
}
