/** The sidebar: the app's sections, then the channels and DMs with unread marks; it stays across pages. */
import { api } from "../api";
import { byId, clearError, errorSlot, h, replaceKeepingFocus, showError } from "../dom";
import type { Route } from "../router";
import { app, hasScope, me } from "../state";
import type { Conversation, ConversationType } from "@tab-relay/shared/api";

const store = {
  list: [] as Conversation[],
  /** The list has been read once since sign-in, so an empty one means there is nothing, not nothing yet. */
  loaded: false,
  unread: new Set<string>(),
  active: null as string | null,
  route: "home" as Route["name"],
  loading: null as Promise<void> | null,
  listeners: new Set<() => void>(),
};

const errorEl = errorSlot();

export function conversationKey(type: ConversationType, id: string): string {
  return `${type}:${id}`;
}

export function conversationPath(type: ConversationType, id: string): string {
  return `/conversations/${type}/${encodeURIComponent(id)}`;
}

export function conversationLabel(conversation: Conversation): string {
  if (conversation.type === "channel") return conversation.name ?? "#channel";
  const self = me()?.id;
  const others = (conversation.members ?? []).filter((m) => m.id !== self).map((m) => m.name);
  return others.length ? others.join(", ") : "Only you";
}

export function conversations(): Conversation[] {
  return store.list;
}

export function conversationsLoaded(): boolean {
  return store.loaded;
}

export function findConversation(type: ConversationType, id: string): Conversation | undefined {
  return store.list.find((c) => c.type === type && c.id === id);
}

/** Views that list conversations (the home page) re-render when the list changes. */
export function onConversationsChanged(listener: () => void): () => void {
  store.listeners.add(listener);
  return () => store.listeners.delete(listener);
}

export function loadConversations(): Promise<void> {
  store.loading ??= api<Conversation[]>("GET", "/conversations")
    .then((list) => {
      store.list = list;
      store.loaded = true;
      clearError(errorEl);
    })
    .catch((error: unknown) => showError(errorEl, error))
    .finally(() => {
      store.loading = null;
      renderSidebar();
      for (const listener of store.listeners) listener();
    });
  return store.loading;
}

export function markUnread(type: ConversationType, id: string): void {
  const key = conversationKey(type, id);
  if (key === store.active) return;
  store.unread.add(key);
  if (!findConversation(type, id)) void loadConversations();
  else renderSidebar();
}

export function setActive(route: Route): void {
  store.route = route.name;
  store.active = route.name === "conversation" ? conversationKey(route.type, route.id) : null;
  if (store.active) store.unread.delete(store.active);
  renderSidebar();
}

export function resetSidebar(): void {
  store.list = [];
  store.loaded = false;
  store.unread.clear();
  store.active = null;
  byId("sidebar").replaceChildren();
}

function sectionLink(href: string, label: string, testid: string, current: boolean): HTMLLIElement {
  return h(
    "li",
    null,
    h("a", { href, "data-testid": testid, "data-focus-key": href, "aria-current": current ? "page" : null }, label),
  );
}

function conversationItem(conversation: Conversation): HTMLLIElement {
  const key = conversationKey(conversation.type, conversation.id);
  const unread = store.unread.has(key);
  const notMember = conversation.type === "channel" && conversation.is_member === false;
  return h(
    "li",
    null,
    h(
      "a",
      {
        href: conversationPath(conversation.type, conversation.id),
        "data-focus-key": key,
        class: `conv-link${unread ? " unread" : ""}${notMember ? " not-member" : ""}`,
        "data-testid": "conversation-link",
        "data-conversation-id": conversation.id,
        "data-type": conversation.type,
        "data-unread": String(unread),
        "data-member": String(!notMember),
        "aria-current": store.active === key ? "page" : null,
      },
      h("span", { class: "conv-name" }, conversationLabel(conversation)),
      conversation.visibility === "private" ? h("span", { class: "tag" }, "private") : null,
      notMember ? h("span", { class: "tag" }, "not joined") : null,
      unread
        ? h("span", { class: "unread-dot", "data-testid": "unread-mark" }, h("span", { class: "sr-only" }, "unread"))
        : null,
    ),
  );
}

export function renderSidebar(): void {
  const sidebar = byId("sidebar");
  const session = app.session;
  if (!session) return;
  const channels = store.list.filter((c) => c.type === "channel");
  const dms = store.list.filter((c) => c.type === "dm");
  const inConversations = store.route === "home" || store.route === "conversation";
  replaceKeepingFocus(
    sidebar,
    h(
      "ul",
      { class: "sections" },
      sectionLink("/", "Conversations", "nav-conversations", inConversations),
      sectionLink("/agents", "Agents", "nav-agents", store.route === "agents" || store.route === "agent"),
      sectionLink("/keys", "API keys", "nav-keys", store.route === "keys"),
      hasScope("tab.complete")
        ? sectionLink("/playground", "Playground", "nav-playground", store.route === "playground")
        : null,
      // Owners and admins, the roles that hold users.write, manage people and read the audit log (as the API allows).
      hasScope("users.write") ? sectionLink("/people", "People", "nav-people", store.route === "people") : null,
      hasScope("users.write") ? sectionLink("/audit", "Audit log", "nav-audit", store.route === "audit") : null,
      // GET /tab/usage answers owners and admins for the workspace, and anyone using Tab for themselves.
      hasScope("users.write") || hasScope("tab.complete")
        ? sectionLink("/insights", "Insights", "nav-insights", store.route === "insights")
        : null,
    ),
    h(
      "section",
      { "aria-labelledby": "sidebar-channels" },
      h("h2", { id: "sidebar-channels" }, "Channels"),
      channels.length
        ? h("ul", { class: "conv-list", "data-testid": "channel-list" }, channels.map(conversationItem))
        : h("p", { class: "muted" }, "No channels yet."),
    ),
    h(
      "section",
      { "aria-labelledby": "sidebar-dms" },
      h("h2", { id: "sidebar-dms" }, "Direct messages"),
      dms.length
        ? h("ul", { class: "conv-list", "data-testid": "dm-list" }, dms.map(conversationItem))
        : h("p", { class: "muted" }, "No direct messages yet."),
    ),
    errorEl,
    h(
      "p",
      { class: "whoami-side muted" },
      `Signed in as ${session.user.name} (${session.user.role}) in ${session.workspace.name}`,
    ),
  );
}
