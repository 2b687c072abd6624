/** Adding a person: a name and a role; their first key is shown once, with what to paste into VS Code. */
import { api } from "../../api";
import { InputError, announce, errorSlot, field, h, headed, onSubmit, reveal, secretsPanel } from "../../dom";
import { app, forgetDirectory } from "../../state";
import type { Role, UserCreated } from "@tab-relay/shared/api";
import { installLine, SET_API_KEY_COMMAND, setupLine } from "../../vscodeSetup";

export function addPersonForm(roles: readonly Role[], added: () => Promise<void>): HTMLElement {
  const name = h("input", { name: "name", autocomplete: "off", maxlength: "80", "data-testid": "person-name" });
  const role = h(
    "select",
    { name: "role", "data-testid": "person-role-new" },
    roles.map((r) => h("option", { value: r, selected: r === "member" }, r)),
  );
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "add-person-submit" }, "Add person");
  const error = errorSlot();
  const secrets = h("div", { class: "secrets-slot" });
  const form = h(
    "form",
    { "data-testid": "add-person-form" },
    field("Name", name, "As others will see it, for example in mentions."),
    field("Role", role, "Owners and admins manage people; members use everything else; guests only Tab and messages."),
    h("div", { class: "row" }, submit),
    error,
  );
  onSubmit(form, submit, error, async () => {
    if (!name.value.trim()) throw new InputError("Give the person a name.");
    const created = await api<UserCreated>("POST", "/users", { body: { name: name.value.trim(), role: role.value } });
    form.reset();
    forgetDirectory();
    const who = created.user.name;
    const noTab = !created.api_key.scopes.includes("tab.complete");
    const panel = secretsPanel(
      `${who} was added: their first key`,
      [
        { key: "api-key", label: "API key", value: created.api_key.secret },
        { key: "install", label: "Install in VS Code", value: installLine(location.origin) },
        {
          key: "setup",
          label: "VS Code settings",
          value: setupLine(location.origin, app.session?.workspace.slug ?? ""),
        },
      ],
      h(
        "p",
        { class: "small", "data-testid": "setup-steps" },
        `Give these to ${who}: the install line runs in a terminal, the settings line goes into VS Code's settings.json, then “${SET_API_KEY_COMMAND}” stores the key.`,
        noTab ? " This key cannot ask for completions (your session does not hold tab.complete)." : null,
      ),
    );
    secrets.replaceChildren(panel);
    announce(`${who} added`);
    await added();
    reveal(panel);
  });
  return headed("Add a person", "h2", form, secrets);
}
