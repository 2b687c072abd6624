/** People: the workspace's members with roles; owners and admins add, re-role and remove them, as the API allows. */
import { ApiError, api } from "../../api";
import {
  announce,
  busy,
  clearError,
  confirmDialog,
  errorSlot,
  h,
  headed,
  replaceKeepingFocus,
  showError,
  timeEl,
} from "../../dom";
import { forgetDirectory, hasScope, me } from "../../state";
import { withNames } from "../../wording";
import { ROLES, type Role, type User, type UserRemoved } from "@tab-relay/shared/api";
import type { View } from "../view";
import { addPersonForm } from "./add";

/** Only an owner makes, unmakes or removes an owner; owners and admins (users.write) do the rest. */
export function rolesOffered(viewer: Role): readonly Role[] {
  return viewer === "owner" ? ROLES : ROLES.filter((role) => role !== "owner");
}

/** The relay's words about a person by id, with their name instead. */
function named(failure: unknown, people: User[]): unknown {
  if (!(failure instanceof ApiError)) return failure;
  const names = new Map(people.map((person) => [person.id, person.name]));
  return new ApiError(failure.status, failure.code, withNames(failure.message, names));
}

export function peopleView(): View {
  const heading = h("h1", { tabindex: "-1" }, "People");
  const error = errorSlot();
  const list = h("ul", { class: "card-list", "data-testid": "people-list" });
  const viewer = me();
  const manages = hasScope("users.write") && viewer !== null;
  const rowErrors = new Map<string, unknown>();
  let people: User[] = [];
  let disposed = false;

  async function reload(): Promise<void> {
    try {
      const found = await api<User[]>("GET", "/users");
      if (disposed) return;
      people = found;
      clearError(error);
      replaceKeepingFocus(list, ...people.map(personRow));
    } catch (failure) {
      showError(error, failure);
    }
  }

  function personRow(person: User): HTMLLIElement {
    const rowError = errorSlot();
    const stored = rowErrors.get(person.id);
    if (stored) showError(rowError, stored);
    const self = person.id === viewer?.id;
    const mayChange = manages && (viewer.role === "owner" || person.role !== "owner");
    const fail = (failure: unknown) => {
      const worded = named(failure, people);
      rowErrors.set(person.id, worded);
      showError(rowError, worded);
    };
    let controls: HTMLElement | null = null;
    if (mayChange) {
      const select = h(
        "select",
        { "aria-label": `Role of ${person.name}`, "data-testid": "person-role-select" },
        rolesOffered(viewer.role).map((role) => h("option", { value: role, selected: role === person.role }, role)),
      );
      const change = h(
        "button",
        { type: "button", "data-testid": "change-role", "data-focus-key": `role:${person.id}` },
        "Change role",
      );
      change.addEventListener("click", () => {
        clearError(rowError);
        rowErrors.delete(person.id);
        if (select.value === person.role) return;
        void busy(change, async () => {
          await api<User>("PATCH", `/users/${encodeURIComponent(person.id)}`, { body: { role: select.value } });
          // A role of one's own decides the session's scopes and the menu: start again from the relay's view.
          if (self) return location.reload();
          forgetDirectory();
          announce(`${person.name} is now ${select.value}`);
          await reload();
        }).catch(fail);
      });
      let remove: HTMLButtonElement | null = null;
      if (!self) {
        remove = h(
          "button",
          { type: "button", class: "danger", "data-testid": "remove-person", "data-focus-key": `rm:${person.id}` },
          `Remove ${person.name}`,
        );
        const button = remove;
        button.addEventListener("click", () => {
          clearError(rowError);
          rowErrors.delete(person.id);
          void confirmDialog({
            title: `Remove ${person.name}?`,
            body: `${person.name} leaves the workspace: their keys stop working at once, and every agent they own is paused (an owner or admin can resume it). This cannot be undone.`,
            confirm: "Remove",
          }).then((confirmed) => {
            if (!confirmed) return;
            void busy(button, async () => {
              const removed = await api<UserRemoved>("DELETE", `/users/${encodeURIComponent(person.id)}`);
              forgetDirectory();
              const paused = removed.paused_agent_ids.length;
              announce(`${person.name} removed${paused ? `; ${paused} agent(s) paused` : ""}`);
              await reload();
              heading.focus();
            }).catch(fail);
          });
        });
      }
      controls = h("div", { class: "row" }, select, change, remove);
    }
    return h(
      "li",
      { class: "card", "data-testid": "person-row", "data-user-id": person.id, "data-role": person.role },
      h("h3", null, person.name),
      h("span", { class: "tag", "data-testid": "person-role" }, person.role),
      self ? h("span", { class: "tag" }, "you") : null,
      h("p", { class: "muted small" }, "Joined ", timeEl(person.created_at)),
      controls,
      rowError,
    );
  }

  const element = h(
    "div",
    { class: "page" },
    heading,
    h(
      "p",
      { class: "muted", "data-testid": "people-intro" },
      manages
        ? "Everyone in the workspace. Only an owner can make, unmake or remove an owner, and the last owner stays one."
        : "Everyone in the workspace. Only owners and admins can add, re-role or remove people.",
    ),
    error,
    headed("Everyone", "h2", list),
    manages ? addPersonForm(rolesOffered(viewer.role), reload) : null,
  );
  void reload();
  return {
    title: "People",
    element,
    focusTarget: heading,
    dispose: () => {
      disposed = true;
    },
  };
}
