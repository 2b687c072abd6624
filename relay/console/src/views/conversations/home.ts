/**
 * The home page: how to get ghost text in VS Code, every conversation the person can see, and the forms that create a
 * channel or start a DM.
 */
import { api } from "../../api";
import { InputError, announce, clearError, errorSlot, field, h, headed, onSubmit } from "../../dom";
import { navigate } from "../../router";
import { app, hasScope, loadDirectory, mentionCandidates } from "../../state";
import type { Conversation } from "@tab-relay/shared/api";
import { channelNameFor, isChannelName } from "../../wording";
import {
  conversationLabel,
  conversationPath,
  conversations,
  conversationsLoaded,
  loadConversations,
  onConversationsChanged,
} from "../sidebar";
import type { View } from "../view";
import { vscodeBlock } from "../vscodeBlock";

export function homeView(): View {
  const heading = h("h1", { tabindex: "-1" }, "Conversations");
  const list = h("ul", { class: "card-list", "data-testid": "home-conversations" });
  const canPost = hasScope("messages.write");
  const canCreateChannel = canPost && app.session?.user.role !== "guest";
  const empty = h(
    "p",
    { class: "note", "data-testid": "conversations-empty", hidden: true },
    canCreateChannel
      ? "No conversations yet. Create a channel below and invite people and agents to it, or start a direct message with one of them."
      : canPost
        ? "You are in no conversation yet. Start a direct message below, or ask a member of the workspace to add you to a channel."
        : "You are in no conversation yet. Ask a member of the workspace to add you to a channel.",
  );
  const renderList = () => {
    empty.hidden = !(conversationsLoaded() && conversations().length === 0);
    list.replaceChildren(
      ...conversations().map((c) =>
        h(
          "li",
          { "data-testid": "home-conversation", "data-conversation-id": c.id, "data-type": c.type },
          h("a", { href: conversationPath(c.type, c.id) }, conversationLabel(c)),
          c.type === "dm" ? h("span", { class: "tag" }, "direct message") : null,
          c.visibility === "private" ? h("span", { class: "tag" }, "private") : null,
          c.type === "channel" && c.is_member === false ? h("span", { class: "tag" }, "not joined") : null,
        ),
      ),
    );
  };
  renderList();
  const unsubscribe = onConversationsChanged(renderList);
  const element = h(
    "div",
    { class: "page" },
    heading,
    h(
      "p",
      { class: "muted" },
      `Channels and direct messages in ${app.session?.workspace.name ?? "this workspace"}. Pick one from the list, or start a new one.`,
    ),
    hasScope("tab.complete") ? vscodeBlock() : null,
    headed("All conversations", "h2", list, empty),
    canCreateChannel ? createChannelForm() : null,
    canPost ? createDmForm() : null,
  );
  return { title: "Conversations", element, focusTarget: heading, dispose: unsubscribe };
}

function createChannelForm(): HTMLElement {
  const name = h("input", { name: "name", autocomplete: "off", maxlength: "80", "data-testid": "channel-name" });
  const visibility = h(
    "select",
    { name: "visibility", "data-testid": "channel-visibility" },
    h("option", { value: "public" }, "Public: everyone in the workspace can find it"),
    h("option", { value: "private" }, "Private: only the people added to it"),
  );
  const submit = h("button", { type: "submit", class: "primary" }, "Create channel");
  const error = errorSlot();
  const offer = h("div", { class: "offer", hidden: true });
  const form = h(
    "form",
    { "data-testid": "create-channel-form" },
    field("Channel name", name, "Lowercase letters, digits, - and _."),
    offer,
    field("Visibility", visibility),
    h("div", { class: "row" }, submit),
    error,
  );
  name.addEventListener("input", () => {
    offer.hidden = true;
  });
  onSubmit(form, submit, error, async () => {
    offer.hidden = true;
    if (!name.value.trim()) throw new InputError("Give the channel a name.");
    if (!isChannelName(name.value)) {
      const suggestion = channelNameFor(name.value);
      if (!suggestion)
        throw new InputError(
          "A channel name needs at least one letter or digit; use lowercase letters, digits, - and _.",
        );
      const use = h(
        "button",
        { type: "button", class: "link-button", "data-testid": "channel-name-suggestion" },
        `Use ${suggestion}`,
      );
      use.addEventListener("click", () => {
        name.value = suggestion;
        offer.hidden = true;
        clearError(error);
        name.focus();
      });
      offer.replaceChildren(
        h("span", null, `Channel names are lowercase letters, digits, - and _, with no spaces. `),
        use,
      );
      offer.hidden = false;
      throw new InputError(`"${name.value.trim()}" cannot be a channel name as it is; ${suggestion} can.`);
    }
    const created = await api<Conversation>("POST", "/channels", {
      body: { name: name.value.trim(), visibility: visibility.value },
    });
    form.reset();
    await loadConversations();
    announce(`Channel ${created.name ?? ""} created`);
    navigate(conversationPath(created.type, created.id));
  });
  return headed("Create a channel", "h2", form);
}

function createDmForm(): HTMLElement {
  const legend = h("legend", null, "People and agents");
  const choices = h(
    "fieldset",
    { class: "checks", "data-testid": "dm-members" },
    legend,
    h("p", { class: "muted" }, "Loading…"),
  );
  void loadDirectory().then((dir) => {
    const candidates = mentionCandidates(dir);
    choices.replaceChildren(
      legend,
      ...(candidates.length
        ? candidates.map((c) =>
            h(
              "label",
              { class: "check" },
              h("input", { type: "checkbox", name: "member", value: c.id }),
              ` ${c.name} `,
              c.type === "agent" ? h("span", { class: "badge agent" }, "Agent") : null,
            ),
          )
        : [h("p", { class: "muted" }, "Nobody else is in this workspace yet.")]),
    );
  });
  const submit = h("button", { type: "submit", class: "primary" }, "Open direct message");
  const error = errorSlot();
  const form = h("form", { "data-testid": "create-dm-form" }, choices, h("div", { class: "row" }, submit), error);
  onSubmit(form, submit, error, async () => {
    const ids = [...form.querySelectorAll<HTMLInputElement>('input[name="member"]:checked')].map(
      (input) => input.value,
    );
    if (ids.length === 0) throw new InputError("Choose at least one person or agent.");
    const dm = await api<Conversation>("POST", "/dms", { body: { member_ids: ids } });
    form.reset();
    await loadConversations();
    navigate(conversationPath(dm.type, dm.id));
  });
  return headed("Start a direct message", "h2", form);
}
