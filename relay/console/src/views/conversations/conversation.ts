/** One open conversation: its messages paged back on demand, live arrivals, permalinks, and the thread panel. */
import { ApiError, api } from "../../api";
import { catchUp } from "../../catchUp";
import { errorSlot, h, clearError, showError, uid } from "../../dom";
import type { Route } from "../../router";
import { loadDirectory, me, mentionCandidates } from "../../state";
import type { Conversation, LiveEvent, Message } from "@tab-relay/shared/api";
import { conversationLabel, conversationPath, findConversation, loadConversations } from "../sidebar";
import type { View } from "../view";
import { createComposer, setMentionCandidates } from "./composer";
import { insertInOrder, messageItem, nearBottom, scrollToBottom } from "./messages";
import { threadPanel } from "./thread";

const PAGE = 30;
const SEARCH_PAGE = 100;
const SEARCH_PAGES = 20;

export function conversationView(route: Extract<Route, { name: "conversation" }>): View {
  const { type, id } = route;
  const apiPath = `/conversations/${type}/${encodeURIComponent(id)}/messages`;
  const permalink = (messageId: string) => `${conversationPath(type, id)}/messages/${encodeURIComponent(messageId)}`;

  const heading = h(
    "h1",
    { tabindex: "-1", id: uid("conv-title"), "data-testid": "conversation-title" },
    type === "channel" ? "Channel" : "Direct message",
  );
  const meta = h("p", { class: "conv-meta muted", "data-testid": "conversation-meta" });
  const loadError = errorSlot();
  const olderButton = h(
    "button",
    { type: "button", class: "load-older", "data-testid": "load-older", hidden: true },
    "Load older messages",
  );
  const beginning = h("p", { class: "muted beginning", hidden: true }, "This is the beginning of the conversation.");
  const list = h("ol", { class: "messages", "data-testid": "message-list" });
  const log = h("div", { role: "log", "aria-label": "Messages", class: "log" }, list);
  const scroller = h(
    "div",
    { class: "messages-scroll", "data-testid": "message-scroll" },
    olderButton,
    beginning,
    loadError,
    log,
  );
  const jump = h(
    "button",
    { type: "button", class: "jump", hidden: true, "data-testid": "jump-newest" },
    "New messages below",
  );

  const shown = new Map<string, Message>();
  const replyCounts = new Map<string, number>();
  let oldest: string | null = null;
  let more = false;
  let disposed = false;
  let label = "";
  let isMember = true;

  const composer = createComposer({ testid: "composer", label: "Message", send: (text) => post(text, null) });
  const thread = threadPanel({
    apiPath,
    item: (message) => messageItem(message, "thread", permalink(message.id), null),
    send: (text, threadId) => post(text, threadId),
    shown: (open) => element.classList.toggle("with-thread", open),
    fallbackFocus: () => composer.textarea,
  });

  const mainPane = h(
    "section",
    { class: "conv-main", "aria-labelledby": heading.id },
    h("header", { class: "conv-header" }, heading, meta),
    scroller,
    jump,
    composer.element,
  );
  const element = h("div", { class: "conversation" }, mainPane, thread.element);

  function threadButtonLabel(rootId: string): string {
    const count = replyCounts.get(rootId) ?? 0;
    return count === 0 ? "Reply in thread" : `Reply in thread (${count} ${count === 1 ? "reply" : "replies"})`;
  }

  function mainItem(message: Message): HTMLLIElement {
    const isReply = message.thread_id !== null;
    const rootId = message.thread_id ?? message.id;
    const button = isReply
      ? h("button", { type: "button", class: "link-button", "data-testid": "open-thread" }, "View thread")
      : h(
          "button",
          { type: "button", class: "link-button", "data-testid": "reply-in-thread", "data-thread-button": message.id },
          threadButtonLabel(message.id),
        );
    button.addEventListener("click", () => void thread.open(rootId, button));
    return messageItem(message, "main", permalink(message.id), h("div", { class: "msg-actions" }, button));
  }

  function addToMain(message: Message): boolean {
    if (shown.has(message.id)) return false;
    shown.set(message.id, message);
    insertInOrder(list, mainItem(message), message.id);
    if (oldest === null || message.id < oldest) oldest = message.id;
    if (message.thread_id) {
      replyCounts.set(message.thread_id, (replyCounts.get(message.thread_id) ?? 0) + 1);
      const button = list.querySelector<HTMLButtonElement>(`[data-thread-button="${CSS.escape(message.thread_id)}"]`);
      if (button) button.textContent = threadButtonLabel(message.thread_id);
    }
    return true;
  }

  /** Adds messages that arrived (live, posted, refetched) and keeps the view at the bottom if it was there. */
  function addNew(messages: Message[]): void {
    const stick = nearBottom(scroller);
    let added = false;
    for (const message of messages) added = addToMain(message) || added;
    if (!added) return;
    if (stick) scrollToBottom(scroller);
    else jump.hidden = false;
  }

  /** Empties the list, as if the conversation had just been opened, with older messages still to load. */
  function startOver(): void {
    list.replaceChildren();
    shown.clear();
    replyCounts.clear();
    oldest = null;
    more = true;
    olderButton.hidden = false;
    beginning.hidden = true;
  }

  /** A page, oldest first; a full page means there may be older ones. */
  async function fetchPage(before: string | null, limit: number): Promise<{ messages: Message[]; full: boolean }> {
    const page = await api<Message[]>("GET", apiPath, { query: { limit, before: before ?? undefined } });
    return { messages: page.reverse(), full: page.length === limit };
  }

  async function loadOlder(limit = PAGE): Promise<void> {
    const fromBottom = scroller.scrollHeight - scroller.scrollTop;
    log.setAttribute("aria-busy", "true");
    try {
      const page = await fetchPage(oldest, limit);
      more = page.full;
      for (const message of page.messages) addToMain(message);
    } finally {
      log.removeAttribute("aria-busy");
    }
    scroller.scrollTop = scroller.scrollHeight - fromBottom;
    olderButton.hidden = !more;
    beginning.hidden = more;
  }

  function highlight(messageId: string): void {
    for (const old of element.querySelectorAll(".message.highlight")) {
      old.classList.remove("highlight");
      (old as HTMLElement).removeAttribute("data-highlighted");
    }
    const item = list.querySelector<HTMLElement>(`[data-message-id="${CSS.escape(messageId)}"]`);
    if (!item) {
      showError(loadError, new Error("That message was not found in this conversation."));
      return;
    }
    item.classList.add("highlight");
    item.dataset.highlighted = "true";
    item.scrollIntoView({ block: "center" });
    item.focus({ preventScroll: true });
  }

  /** Pages back until the linked message is loaded (links from webhook payloads may point far back). */
  async function showMessage(messageId: string): Promise<void> {
    let pages = 0;
    while (!shown.has(messageId) && more && pages < SEARCH_PAGES && !disposed) {
      await loadOlder(SEARCH_PAGE);
      pages += 1;
    }
    highlight(messageId);
  }

  function describe(conversation: Conversation | undefined): void {
    label = conversation ? conversationLabel(conversation) : id;
    heading.textContent = label;
    isMember = conversation?.is_member !== false;
    const parts: string[] = [];
    if (conversation?.type === "channel")
      parts.push(conversation.visibility === "private" ? "Private channel" : "Public channel");
    else parts.push(`Direct message with ${label}`);
    if (!isMember) parts.push("you are not in it yet; posting a message joins it");
    meta.textContent = parts.join(" · ");
    composer.setLabel(`Message ${label}`);
    view.title = label;
    if (view.element.isConnected) document.title = `${label} · tab-relay`;
  }

  async function load(): Promise<void> {
    if (!findConversation(type, id)) await loadConversations();
    if (disposed) return;
    describe(findConversation(type, id));
    void loadDirectory().then((dir) => {
      setMentionCandidates(mentionCandidates(dir));
    });
    try {
      const page = await fetchPage(null, PAGE);
      if (disposed) return;
      more = page.full;
      for (const message of page.messages) addToMain(message);
      olderButton.hidden = !more;
      beginning.hidden = more;
      scrollToBottom(scroller);
      if (route.messageId) await showMessage(route.messageId);
    } catch (error) {
      showError(loadError, error);
      if (error instanceof ApiError && (error.status === 403 || error.status === 404)) composer.element.hidden = true;
    }
  }

  async function post(text: string, threadId: string | null): Promise<void> {
    const message = await api<Message>("POST", apiPath, { body: threadId ? { text, thread_id: threadId } : { text } });
    addToMain(message);
    scrollToBottom(scroller);
    if (threadId && threadId === thread.openId()) {
      thread.add(message);
      thread.scrollToEnd();
    }
    // Posting in a public channel joins it, so the sidebar's "not joined" mark must go.
    if (!isMember) void loadConversations().then(() => describe(findConversation(type, id)));
  }

  olderButton.addEventListener("click", () => {
    clearError(loadError);
    void loadOlder().then(
      () => {
        if (olderButton.hidden) list.querySelector<HTMLElement>(".message")?.focus();
      },
      (error: unknown) => showError(loadError, error),
    );
  });
  jump.addEventListener("click", () => {
    scrollToBottom(scroller);
    jump.hidden = true;
    composer.textarea.focus();
  });
  scroller.addEventListener("scroll", () => {
    if (nearBottom(scroller)) jump.hidden = true;
  });

  const view: View = {
    title: type === "channel" ? "Channel" : "Direct message",
    element,
    focusTarget: heading,
    dispose: () => {
      disposed = true;
    },
    live(event: LiveEvent): boolean {
      if (event.type !== "message.created" || event.conversation.type !== type || event.conversation.id !== id)
        return false;
      addNew([event.message]);
      const openThreadId = thread.openId();
      if (openThreadId && event.message.thread_id === openThreadId) thread.add(event.message);
      return true;
    },
    reconnected(): void {
      void catchUp(
        (before) => fetchPage(before, SEARCH_PAGE),
        (messageId) => shown.has(messageId),
        SEARCH_PAGES,
      )
        .then(({ messages, closed }) => {
          if (disposed) return;
          // Too much was missed to read it all: what was shown before goes, and "Load older" pages on from here.
          if (!closed) startOver();
          addNew(messages);
        })
        .catch((error: unknown) => showError(loadError, error));
      thread.reload();
    },
    reroute(next: Route): boolean {
      if (next.name !== "conversation" || next.type !== type || next.id !== id) return false;
      if (next.messageId) void showMessage(next.messageId);
      return true;
    },
  };
  void load();
  return view;
}

export function isOwnMessage(message: Message): boolean {
  return message.author.type === "user" && message.author.id === me()?.id;
}
