/** Conversations: the home page (browse, create a channel, start a DM) and one open conversation with its threads. */
import { ApiError, api } from "../api";
import { catchUp } from "../catchUp";
import { InputError, announce, clearError, errorSlot, field, h, headed, onSubmit, showError, timeEl, uid } from "../dom";
import { attachMentions } from "../mentions";
import { type Route, navigate } from "../router";
import { app, hasScope, loadDirectory, me, mentionCandidates } from "../state";
import type { Conversation, LiveEvent, Member, Message } from "@tab-relay/shared/api";
import { conversationLabel, conversationPath, conversations, findConversation, loadConversations, onConversationsChanged } from "./sidebar";
import type { View } from "./view";

const PAGE = 30;
const SEARCH_PAGE = 100;
const SEARCH_PAGES = 20;

export function homeView(): View {
  const heading = h("h1", { tabindex: "-1" }, "Conversations");
  const list = h("ul", { class: "card-list", "data-testid": "home-conversations" });
  const renderList = () =>
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
  renderList();
  const unsubscribe = onConversationsChanged(renderList);
  const canPost = hasScope("messages.write");
  const element = h(
    "div",
    { class: "page" },
    heading,
    h("p", { class: "muted" }, `Channels and direct messages in ${app.session?.workspace.name ?? "this workspace"}. Pick one from the list, or start a new one.`),
    headed("All conversations", "h2", list),
    canPost && app.session?.user.role !== "guest" ? createChannelForm() : null,
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
  const form = h("form", { "data-testid": "create-channel-form" }, field("Channel name", name, "Lowercase letters, digits, - and _."), field("Visibility", visibility), h("div", { class: "row" }, submit), error);
  onSubmit(form, submit, error, async () => {
    if (!name.value.trim()) throw new InputError("Give the channel a name.");
    const created = await api<Conversation>("POST", "/channels", { body: { name: name.value.trim(), visibility: visibility.value } });
    form.reset();
    await loadConversations();
    announce(`Channel ${created.name ?? ""} created`);
    navigate(conversationPath(created.type, created.id));
  });
  return headed("Create a channel", "h2", form);
}

function createDmForm(): HTMLElement {
  const legend = h("legend", null, "People and agents");
  const choices = h("fieldset", { class: "checks", "data-testid": "dm-members" }, legend, h("p", { class: "muted" }, "Loading…"));
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
    const ids = [...form.querySelectorAll<HTMLInputElement>('input[name="member"]:checked')].map((input) => input.value);
    if (ids.length === 0) throw new InputError("Choose at least one person or agent.");
    const dm = await api<Conversation>("POST", "/dms", { body: { member_ids: ids } });
    form.reset();
    await loadConversations();
    navigate(conversationPath(dm.type, dm.id));
  });
  return headed("Start a direct message", "h2", form);
}

interface Composer {
  element: HTMLFormElement;
  textarea: HTMLTextAreaElement;
  setLabel(label: string): void;
}

let candidateCache: Member[] = [];

function createComposer(options: { testid: string; label: string; send: (text: string) => Promise<void> }): Composer {
  const textarea = h("textarea", { id: uid("composer"), rows: "2", maxlength: "8000", placeholder: options.label, "data-testid": "composer-input" });
  const hint = h("p", { class: "hint composer-hint", id: uid("hint") }, "Enter sends, Shift+Enter adds a line, @ mentions someone. Start with /aside for a note only people see.");
  textarea.setAttribute("aria-describedby", hint.id);
  const mentions = attachMentions(textarea, () => candidateCache);
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "composer-send" }, "Send");
  const error = errorSlot();
  const labelEl = h("label", { for: textarea.id, class: "sr-only" }, options.label);
  const element = h(
    "form",
    { class: "composer", "data-testid": options.testid },
    labelEl,
    h("div", { class: "composer-row" }, textarea, submit),
    mentions.listbox,
    error,
    hint,
  );
  textarea.addEventListener("keydown", (event) => {
    if (mentions.handleKey(event)) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && !event.altKey) {
      event.preventDefault();
      element.requestSubmit();
    }
  });
  textarea.addEventListener("input", () => clearError(error));
  let sending = false;
  onSubmit(element, submit, error, async () => {
    if (sending) return;
    const text = textarea.value;
    if (!text.trim()) throw new InputError("Write a message first.");
    sending = true;
    try {
      await options.send(text);
      textarea.value = "";
      mentions.close();
    } finally {
      sending = false;
      textarea.focus();
    }
  });
  return {
    element,
    textarea,
    setLabel(label: string): void {
      labelEl.textContent = label;
      textarea.placeholder = label;
    },
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The text with its mentions marked; `<@id>` shows as the member's name. */
function richText(message: Message): (string | Node)[] {
  const byId = new Map(message.mentions.map((m) => [m.id, m]));
  const names = [...new Set(message.mentions.map((m) => m.name))].sort((a, b) => b.length - a.length).map(escapeRegExp);
  const pattern = new RegExp(`<@([\\w-]+)>${names.length ? `|@(?:${names.join("|")})` : ""}`, "giu");
  const out: (string | Node)[] = [];
  let last = 0;
  for (const match of message.text.matchAll(pattern)) {
    const start = match.index ?? 0;
    const ref = match[1] === undefined ? null : byId.get(match[1]);
    if (match[1] !== undefined && !ref) continue;
    out.push(message.text.slice(last, start), h("span", { class: "mention" }, ref ? `@${ref.name}` : match[0]));
    last = start + match[0].length;
  }
  out.push(message.text.slice(last));
  return out;
}

/** Inserts a message item keeping the list in id order (ids sort by time), so live and paged messages interleave. */
function insertInOrder(list: HTMLOListElement, item: HTMLLIElement, id: string): void {
  let after: Element | null = list.lastElementChild;
  while (after && ((after as HTMLElement).dataset.messageId ?? "") > id) after = after.previousElementSibling;
  if (after) after.after(item);
  else list.prepend(item);
}

export function conversationView(route: Extract<Route, { name: "conversation" }>): View {
  const { type, id } = route;
  const apiPath = `/conversations/${type}/${encodeURIComponent(id)}/messages`;
  const permalink = (messageId: string) => `${conversationPath(type, id)}/messages/${encodeURIComponent(messageId)}`;

  const heading = h("h1", { tabindex: "-1", id: uid("conv-title"), "data-testid": "conversation-title" }, type === "channel" ? "Channel" : "Direct message");
  const meta = h("p", { class: "conv-meta muted", "data-testid": "conversation-meta" });
  const loadError = errorSlot();
  const olderButton = h("button", { type: "button", class: "load-older", "data-testid": "load-older", hidden: true }, "Load older messages");
  const beginning = h("p", { class: "muted beginning", hidden: true }, "This is the beginning of the conversation.");
  const list = h("ol", { class: "messages", "data-testid": "message-list" });
  const log = h("div", { role: "log", "aria-label": "Messages", class: "log" }, list);
  const scroller = h("div", { class: "messages-scroll", "data-testid": "message-scroll" }, olderButton, beginning, loadError, log);
  const jump = h("button", { type: "button", class: "jump", hidden: true, "data-testid": "jump-newest" }, "New messages below");

  const shown = new Map<string, Message>();
  const replyCounts = new Map<string, number>();
  let oldest: string | null = null;
  let more = false;
  let disposed = false;
  let label = "";
  let isMember = true;

  const composer = createComposer({ testid: "composer", label: "Message", send: (text) => post(text, null) });

  const threadHeading = h("h2", { tabindex: "-1", id: uid("thread-title") }, "Thread");
  const threadList = h("ol", { class: "messages", "data-testid": "thread-message-list" });
  const threadError = errorSlot();
  const threadComposer = createComposer({ testid: "thread-composer", label: "Reply in thread", send: (text) => post(text, openThreadId) });
  const closeThreadButton = h("button", { type: "button", "data-testid": "close-thread" }, "Close thread");
  const threadPanel = h(
    "aside",
    { class: "thread-panel", "aria-labelledby": threadHeading.id, "data-testid": "thread-panel", hidden: true },
    h("header", { class: "thread-header" }, threadHeading, closeThreadButton),
    h("div", { class: "messages-scroll thread-scroll" }, threadError, h("div", { role: "log", "aria-label": "Thread messages", class: "log" }, threadList)),
    threadComposer.element,
  );
  const threadShown = new Set<string>();
  let openThreadId: string | null = null;
  let threadOpener: HTMLElement | null = null;

  const mainPane = h(
    "section",
    { class: "conv-main", "aria-labelledby": heading.id },
    h("header", { class: "conv-header" }, heading, meta),
    scroller,
    jump,
    composer.element,
  );
  const element = h("div", { class: "conversation" }, mainPane, threadPanel);

  function nearBottom(el: HTMLElement = scroller): boolean {
    return el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  }

  function scrollToBottom(el: HTMLElement = scroller): void {
    el.scrollTop = el.scrollHeight;
  }

  function threadButtonLabel(rootId: string): string {
    const count = replyCounts.get(rootId) ?? 0;
    return count === 0 ? "Reply in thread" : `Reply in thread (${count} ${count === 1 ? "reply" : "replies"})`;
  }

  function messageItem(message: Message, context: "main" | "thread"): HTMLLIElement {
    const fromAgent = message.author.type === "agent";
    const isReply = message.thread_id !== null;
    const rootId = message.thread_id ?? message.id;
    let actions: HTMLElement | null = null;
    if (context === "main") {
      const button = isReply
        ? h("button", { type: "button", class: "link-button", "data-testid": "open-thread" }, "View thread")
        : h("button", { type: "button", class: "link-button", "data-testid": "reply-in-thread", "data-thread-button": message.id }, threadButtonLabel(message.id));
      button.addEventListener("click", () => void openThread(rootId, button));
      actions = h("div", { class: "msg-actions" }, button);
    }
    return h(
      "li",
      {
        class: `message${message.aside ? " aside" : ""}${fromAgent ? " from-agent" : ""}${isReply && context === "main" ? " reply" : ""}`,
        "data-testid": "message",
        "data-message-id": message.id,
        "data-author-type": message.author.type,
        "data-thread-id": message.thread_id,
        "data-aside": message.aside ? "true" : null,
        tabindex: "-1",
      },
      h(
        "div",
        { class: "msg-head" },
        h("span", { class: "author", "data-testid": "message-author" }, message.author.name),
        fromAgent ? h("span", { class: "badge agent", "data-testid": "agent-badge" }, "Agent") : null,
        message.aside ? h("span", { class: "badge aside-badge", "data-testid": "aside-badge" }, "Aside: hidden from agents") : null,
        isReply && context === "main" ? h("span", { class: "tag" }, "in a thread") : null,
        h("a", { class: "time", href: permalink(message.id) }, timeEl(message.created_at, true)),
      ),
      h("div", { class: "msg-text", "data-testid": "message-text" }, richText(message)),
      actions,
    );
  }

  function addToMain(message: Message): boolean {
    if (shown.has(message.id)) return false;
    shown.set(message.id, message);
    insertInOrder(list, messageItem(message, "main"), message.id);
    if (oldest === null || message.id < oldest) oldest = message.id;
    if (message.thread_id) {
      replyCounts.set(message.thread_id, (replyCounts.get(message.thread_id) ?? 0) + 1);
      const button = list.querySelector<HTMLButtonElement>(`[data-thread-button="${CSS.escape(message.thread_id)}"]`);
      if (button) button.textContent = threadButtonLabel(message.thread_id);
    }
    return true;
  }

  function addToThread(message: Message): void {
    if (threadShown.has(message.id)) return;
    threadShown.add(message.id);
    const scroll = threadList.closest<HTMLElement>(".messages-scroll");
    const stick = scroll ? nearBottom(scroll) : false;
    insertInOrder(threadList, messageItem(message, "thread"), message.id);
    if (scroll && stick) scrollToBottom(scroll);
  }

  /** Adds messages that arrived (live, posted, refetched) and keeps the view at the bottom if it was there. */
  function addNew(messages: Message[]): void {
    const stick = nearBottom();
    let added = false;
    for (const message of messages) added = addToMain(message) || added;
    if (!added) return;
    if (stick) scrollToBottom();
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
    if (conversation?.type === "channel") parts.push(conversation.visibility === "private" ? "Private channel" : "Public channel");
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
      candidateCache = mentionCandidates(dir);
    });
    try {
      const page = await fetchPage(null, PAGE);
      if (disposed) return;
      more = page.full;
      for (const message of page.messages) addToMain(message);
      olderButton.hidden = !more;
      beginning.hidden = more;
      scrollToBottom();
      if (route.messageId) await showMessage(route.messageId);
    } catch (error) {
      showError(loadError, error);
      if (error instanceof ApiError && (error.status === 403 || error.status === 404)) composer.element.hidden = true;
    }
  }

  async function post(text: string, threadId: string | null): Promise<void> {
    const message = await api<Message>("POST", apiPath, { body: threadId ? { text, thread_id: threadId } : { text } });
    addToMain(message);
    scrollToBottom();
    if (threadId && threadId === openThreadId) {
      addToThread(message);
      const scroll = threadList.closest<HTMLElement>(".messages-scroll");
      if (scroll) scrollToBottom(scroll);
    }
    // Posting in a public channel joins it, so the sidebar's "not joined" mark must go.
    if (!isMember) void loadConversations().then(() => describe(findConversation(type, id)));
  }

  async function openThread(rootId: string, opener: HTMLElement | null): Promise<void> {
    openThreadId = rootId;
    threadOpener = opener;
    threadShown.clear();
    threadList.replaceChildren();
    clearError(threadError);
    threadPanel.hidden = false;
    threadPanel.dataset.threadId = rootId;
    element.classList.add("with-thread");
    threadComposer.textarea.focus();
    try {
      const page = await api<Message[]>("GET", apiPath, { query: { thread_id: rootId, limit: 100 } });
      if (openThreadId !== rootId) return;
      for (const message of page.reverse()) addToThread(message);
      const scroll = threadList.closest<HTMLElement>(".messages-scroll");
      if (scroll) scrollToBottom(scroll);
    } catch (error) {
      showError(threadError, error);
    }
  }

  function closeThread(): void {
    openThreadId = null;
    threadPanel.hidden = true;
    delete threadPanel.dataset.threadId;
    element.classList.remove("with-thread");
    if (threadOpener?.isConnected) threadOpener.focus();
    else composer.textarea.focus();
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
    scrollToBottom();
    jump.hidden = true;
    composer.textarea.focus();
  });
  scroller.addEventListener("scroll", () => {
    if (nearBottom()) jump.hidden = true;
  });
  closeThreadButton.addEventListener("click", closeThread);
  threadPanel.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeThread();
  });

  const view: View = {
    title: type === "channel" ? "Channel" : "Direct message",
    element,
    focusTarget: heading,
    dispose: () => {
      disposed = true;
    },
    live(event: LiveEvent): boolean {
      if (event.type !== "message.created" || event.conversation.type !== type || event.conversation.id !== id) return false;
      addNew([event.message]);
      if (openThreadId && event.message.thread_id === openThreadId) addToThread(event.message);
      return true;
    },
    reconnected(): void {
      void catchUp((before) => fetchPage(before, SEARCH_PAGE), (messageId) => shown.has(messageId), SEARCH_PAGES)
        .then(({ messages, closed }) => {
          if (disposed) return;
          // Too much was missed to read it all: what was shown before goes, and "Load older" pages on from here.
          if (!closed) startOver();
          addNew(messages);
        })
        .catch((error: unknown) => showError(loadError, error));
      if (openThreadId) void openThread(openThreadId, threadOpener);
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
