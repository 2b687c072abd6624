/** Changing the agent's name, description or webhook URL, and removing it (after a confirmation). */
import { api } from "../../api";
import {
  InputError,
  announce,
  busy,
  clearError,
  confirmDialog,
  errorSlot,
  field,
  h,
  onSubmit,
  showError,
} from "../../dom";
import { navigate } from "../../router";
import { forgetDirectory } from "../../state";
import type { Agent } from "@tab-relay/shared/api";
import type { AgentContext } from "./common";

export function editPart(initial: Agent, context: AgentContext): HTMLElement {
  const { base, refresh } = context;
  const editName = h("input", { name: "name", autocomplete: "off", maxlength: "80", "data-testid": "edit-agent-name" });
  const editDescription = h("textarea", {
    name: "description",
    rows: "2",
    maxlength: "500",
    "data-testid": "edit-agent-description",
  });
  const editWebhook = h("input", {
    name: "webhook_url",
    type: "url",
    inputmode: "url",
    autocomplete: "off",
    spellcheck: "false",
    "data-testid": "edit-agent-webhook-url",
  });
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
      body: {
        name: editName.value.trim(),
        description: editDescription.value.trim(),
        webhook_url: editWebhook.value.trim() || null,
      },
    });
    fillEdit(agent);
    forgetDirectory();
    announce("Agent saved");
    await refresh.now();
  });
  return h(
    "details",
    { class: "edit", "data-testid": "edit-agent" },
    h("summary", null, "Edit name, description or webhook URL"),
    editForm,
  );
}

export function removePart(context: AgentContext): HTMLElement {
  const { base } = context;
  const removeButton = h("button", { type: "button", class: "danger", "data-testid": "remove-agent" }, "Remove agent…");
  const removeError = errorSlot();
  removeButton.addEventListener("click", () => {
    clearError(removeError);
    const name = context.name();
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
  return h(
    "section",
    { class: "danger-zone", "aria-labelledby": "agent-remove-h" },
    h("h2", { id: "agent-remove-h" }, "Remove"),
    h("p", null, "Removing the agent invalidates its token and cancels its undelivered events."),
    removeButton,
    removeError,
  );
}
