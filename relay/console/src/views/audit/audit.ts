/** The audit log for owners and admins: newest first, filtered by action, person and days, paged with `before`. */
import { api } from "../../api";
import { busy, clearError, errorSlot, field, h, headed, showError, timeEl } from "../../dom";
import { hasScope, loadDirectory } from "../../state";
import { detailLabel, withNames } from "../../wording";
import { AUDIT_ACTIONS, type AuditAction, type AuditEntry } from "@tab-relay/shared/api";
import type { View } from "../view";

const PAGE = 50;

/** Each action in words; an action the API adds does not compile here until it is worded. */
export const ACTION_WORDS: Readonly<Record<AuditAction, string>> = {
  "session.signed_in": "Signed in to the console",
  "session.sign_in_failed": "Sign-in refused",
  "api_key.created": "Key created",
  "api_key.revoked": "Key revoked",
  "user.added": "Person added",
  "user.removed": "Person removed",
  "user.role_changed": "Role changed",
  "agent.created": "Agent created",
  "agent.paused": "Agent paused",
  "agent.resumed": "Agent resumed",
  "agent.removed": "Agent removed",
  "agent.token_replaced": "Agent token replaced",
  "agent.signing_secret_replaced": "Agent signing secret replaced",
  "agent.webhook_url_changed": "Webhook URL changed",
  "agent.redelivery_requested": "Redelivery asked",
};

/** A date input's day as the instant it starts, here; `next` gives the day after (an inclusive "to"). */
function dayStart(value: string, next = false): string | undefined {
  if (!value) return undefined;
  const [year = 0, month = 1, day = 1] = value.split("-").map(Number);
  return new Date(year, month - 1, day + (next ? 1 : 0)).toISOString();
}

export function auditView(): View {
  const heading = h("h1", { tabindex: "-1" }, "Audit log");
  const page = h("div", { class: "page" }, heading);
  const view: View = { title: "Audit log", element: page, focusTarget: heading };
  if (!hasScope("users.write")) {
    page.append(h("p", { "data-testid": "audit-forbidden" }, "Only owners and admins can read the audit log."));
    return view;
  }
  const error = errorSlot();
  const list = h("ul", { class: "card-list", "data-testid": "audit-list" });
  const older = h("button", { type: "button", hidden: true, "data-testid": "audit-older" }, "Show older");
  const action = h(
    "select",
    { "data-testid": "audit-action" },
    h("option", { value: "" }, "Any action"),
    AUDIT_ACTIONS.map((a) => h("option", { value: a }, ACTION_WORDS[a])),
  );
  const actor = h("select", { "data-testid": "audit-actor" }, h("option", { value: "" }, "Anyone"));
  const since = h("input", { type: "date", "data-testid": "audit-since" });
  const until = h("input", { type: "date", "data-testid": "audit-until" });
  let names = new Map<string, string>();
  let last: string | undefined;
  let generation = 0;

  const who = (id: string | null) => (id ? (names.get(id) ?? `someone no longer here (${id})`) : "someone unknown");

  function entryRow(entry: AuditEntry): HTMLLIElement {
    const { actor: by, target } = entry;
    const doer = by.via === "cli" ? "the relay's command line" : who(by.user_id);
    const details = Object.entries(entry.details).map(
      ([key, value]) => `${detailLabel(key)}: ${Array.isArray(value) ? value.join(", ") || "none" : (value ?? "none")}`,
    );
    return h(
      "li",
      { class: "card", "data-testid": "audit-entry", "data-action": entry.action },
      h("h3", null, ACTION_WORDS[entry.action] ?? entry.action),
      target ? h("span", null, target.type === "user" ? who(target.id) : `${target.type} ${target.id}`) : null,
      h("p", { class: "small" }, `By ${doer}, from ${by.address} (${by.via.replace("_", " ")})`),
      details.length ? h("p", { class: "small" }, withNames(details.join(" · "), names)) : null,
      h("p", { class: "muted small" }, timeEl(entry.at)),
    );
  }

  async function load(more: boolean): Promise<void> {
    const mine = more ? generation : ++generation;
    clearError(error);
    try {
      const entries = await api<AuditEntry[]>("GET", "/audit", {
        query: {
          action: action.value || undefined,
          actor: actor.value || undefined,
          since: dayStart(since.value),
          until: dayStart(until.value, true),
          limit: PAGE,
          before: more ? last : undefined,
        },
      });
      if (mine !== generation) return;
      const rows = entries.map(entryRow);
      if (more) list.append(...rows);
      else list.replaceChildren(...(rows.length ? rows : [h("li", { class: "muted" }, "Nothing recorded matches.")]));
      last = entries.at(-1)?.id ?? last;
      older.hidden = entries.length < PAGE;
    } catch (failure) {
      showError(error, failure);
    }
  }

  for (const control of [action, actor, since, until]) control.addEventListener("change", () => void load(false));
  older.addEventListener("click", () => void busy(older, () => load(true)));

  page.append(
    h(
      "p",
      { class: "muted" },
      "Security-relevant changes, newest first: sign-ins, keys, people and agents. Secrets are never recorded.",
    ),
    h(
      "div",
      { class: "row top filters", "data-testid": "audit-filters" },
      field("Action", action),
      field("Person", actor),
      field("From", since),
      field("To", until),
    ),
    error,
    headed("Entries", "h2", list, older),
  );
  void loadDirectory(true).then(({ users }) => {
    names = new Map(users.map((u) => [u.id, u.name]));
    actor.append(...users.map((u) => h("option", { value: u.id }, u.name)));
    return load(false);
  });
  return {
    ...view,
    dispose: () => {
      generation = -1;
    },
  };
}
