/** Sign-in: an API key is exchanged once for a session cookie; the key itself is never kept. */
import { api } from "../api";
import { InputError, errorSlot, field, h, onSubmit } from "../dom";
import type { Session } from "@tab-relay/shared/api";
import type { View } from "./view";

export function signinView(notice: string | null, signedIn: (session: Session) => void): View {
  const heading = h("h1", { tabindex: "-1" }, "Sign in to tab-relay");
  const key = h("input", {
    name: "api_key",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    autocapitalize: "off",
    "data-testid": "signin-key",
  });
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "signin-submit" }, "Sign in");
  const error = errorSlot();
  const form = h(
    "form",
    { "data-testid": "signin-form" },
    field("API key", key, "Paste a key (svc_ws_…). It is exchanged for a session and not stored in this browser."),
    h("div", { class: "row" }, submit),
    error,
  );
  onSubmit(form, submit, error, async () => {
    const apiKey = key.value.trim();
    if (!apiKey) throw new InputError("Paste an API key to sign in.");
    try {
      const session = await api<Session>("POST", "/sessions", { body: { api_key: apiKey }, expect401: true });
      key.value = "";
      signedIn(session);
    } catch (failure) {
      key.select();
      throw failure;
    }
  });
  const element = h(
    "div",
    { class: "signin" },
    h(
      "div",
      { class: "signin-card" },
      heading,
      notice ? h("p", { class: "notice", role: "status", "data-testid": "signin-notice" }, notice) : null,
      form,
    ),
  );
  requestAnimationFrame(() => key.focus());
  return { title: "Sign in", element, focusTarget: key };
}
