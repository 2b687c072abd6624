/** API keys: the person's keys, creating one with scopes from the catalogue (secret shown once), revoking. */
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
  reveal,
  secretsPanel,
  showError,
  timeEl,
} from "../dom";
import { hasScope } from "../state";
import { type ApiKey, type ApiKeyCreated, SCOPES, type Scope } from "@tab-relay/shared/api";
import type { View } from "./view";

/** What each scope allows; a scope the API adds does not compile here until it is described. */
export const SCOPE_CATALOGUE: Readonly<Record<Scope, string>> = {
  "workspace.read": "reading workspace information",
  "apps.read": "reading installed apps",
  "files.read": "reading files the user can access",
  "tab.complete": "Tab completions",
  "messages.read": "reading conversations the user is in",
  "messages.write": "posting as the user",
  "agents.read": "reading outside agents",
  "agents.write": "connecting and changing outside agents",
  "users.write": "adding and removing users",
  "keys.write": "creating, listing and revoking API keys",
};

export function keysView(): View {
  const heading = h("h1", { tabindex: "-1" }, "API keys");
  const error = errorSlot();
  const list = h("ul", { class: "card-list", "data-testid": "key-list" });
  const rowErrors = new Map<string, unknown>();
  let disposed = false;

  async function reload(): Promise<void> {
    try {
      const keys = await api<ApiKey[]>("GET", "/api-keys");
      if (disposed) return;
      clearError(error);
      replaceKeepingFocus(list, ...(keys.length ? keys.map(keyRow) : [h("li", { class: "muted" }, "No keys yet.")]));
    } catch (failure) {
      showError(error, failure);
    }
  }

  function keyRow(key: ApiKey): HTMLLIElement {
    const rowError = errorSlot();
    const stored = rowErrors.get(key.id);
    if (stored) showError(rowError, stored);
    let revoke: HTMLButtonElement | null = null;
    if (!key.revoked_at) {
      const button = h(
        "button",
        { type: "button", class: "danger", "data-testid": "revoke-key", "data-focus-key": `revoke:${key.id}` },
        `Revoke ${key.name}`,
      );
      button.addEventListener("click", () => {
        clearError(rowError);
        rowErrors.delete(key.id);
        void confirmDialog({
          title: `Revoke ${key.name}?`,
          body: `Anything using ${key.hint} stops working at once. If you signed in to this console with it, you are signed out. This cannot be undone.`,
          confirm: "Revoke key",
        }).then((confirmed) => {
          if (!confirmed) return;
          void busy(button, async () => {
            await api("DELETE", `/api-keys/${encodeURIComponent(key.id)}`);
            announce(`Key ${key.name} revoked`);
            await reload();
            list.querySelector<HTMLElement>(`[data-key-id="${CSS.escape(key.id)}"]`)?.focus();
          }).catch((failure: unknown) => {
            rowErrors.set(key.id, failure);
            showError(rowError, failure);
          });
        });
      });
      revoke = button;
    }
    return h(
      "li",
      {
        class: `card key${key.revoked_at ? " revoked" : ""}`,
        "data-testid": "key-row",
        "data-key-id": key.id,
        "data-revoked": String(key.revoked_at !== null),
        tabindex: "-1",
      },
      h("h3", null, key.name),
      h("p", null, h("code", null, key.hint)),
      h("p", { class: "small" }, "Scopes: ", key.scopes.join(", ")),
      h(
        "p",
        { class: "muted small" },
        "Created ",
        timeEl(key.created_at),
        key.revoked_at ? h("span", { "data-testid": "key-revoked" }, " · revoked ", timeEl(key.revoked_at)) : null,
      ),
      revoke,
      rowError,
    );
  }

  const element = h(
    "div",
    { class: "page" },
    heading,
    h(
      "p",
      { class: "muted" },
      "A key acts as you, with the scopes it was created with (limited by your role). Keep keys secret.",
    ),
    error,
    headed("Your keys", "h2", list),
    createKeyForm(reload),
  );
  void reload();
  return {
    title: "API keys",
    element,
    focusTarget: heading,
    dispose: () => {
      disposed = true;
    },
  };
}

function createKeyForm(created: () => Promise<void>): HTMLElement {
  const name = h("input", { name: "name", autocomplete: "off", maxlength: "100", "data-testid": "key-name" });
  const scopes = h(
    "fieldset",
    { class: "checks", "data-testid": "key-scopes" },
    h("legend", null, "Scopes"),
    SCOPES.map((scope) => {
      const allows = SCOPE_CATALOGUE[scope];
      const held = hasScope(scope);
      return h(
        "label",
        { class: `check${held ? "" : " unavailable"}` },
        // Every scope the session holds starts checked, as `keys create` on the command line defaults to all the
        // role allows; as an attribute it is also what the form returns to after `reset()`.
        h("input", {
          type: "checkbox",
          name: "scope",
          value: scope,
          checked: held,
          disabled: !held,
          "data-testid": `scope-${scope}`,
        }),
        " ",
        h("code", null, scope),
        ` ${allows}`,
        held ? null : h("span", { class: "muted small" }, " (your session does not hold it)"),
      );
    }),
  );
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "create-key-submit" }, "Create key");
  const error = errorSlot();
  const secrets = h("div", { class: "secrets-slot" });
  const form = h(
    "form",
    { "data-testid": "create-key-form" },
    field("Name", name, "What the key is for, for example “laptop editor”."),
    scopes,
    h("div", { class: "row" }, submit),
    error,
  );
  onSubmit(form, submit, error, async () => {
    const chosen = [...form.querySelectorAll<HTMLInputElement>('input[name="scope"]:checked')].map(
      (input) => input.value,
    );
    if (!name.value.trim()) throw new InputError("Give the key a name.");
    if (chosen.length === 0) throw new InputError("Choose at least one scope.");
    const key = await api<ApiKeyCreated>("POST", "/api-keys", { body: { name: name.value.trim(), scopes: chosen } });
    form.reset();
    const panel = secretsPanel(`Your new key ${key.name}`, [{ key: "api-key", label: "API key", value: key.secret }]);
    secrets.replaceChildren(panel);
    announce(`Key ${key.name} created`);
    // The list above grows by the new key, which would push its secret out of sight: show it once it has.
    await created();
    reveal(panel);
  });
  return headed("Create a key", "h2", form, secrets);
}
